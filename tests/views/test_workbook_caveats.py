"""What the workbook says about its own evidence: a preview is the file as it is now (and when
something shows it changed since the call), the join's caveats on a session, writes named as
writes, and the Replay head's refused count.

The incident is built here (``_incident``): a deployer's Codex rollout whose door session reads
``rules/app.yaml``, updates it, is refused ``rules/secret.env`` and reads the file again — the
door logged 221 bytes for the first read, the file is 220 bytes now — and a reviewer's rollout
whose calls reached the door in two sessions (the door restarted): ``door-r2`` continues
``door-r1``.
"""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from replaybook.incident import Incident
from replaybook.replay import LaterWrites, ReplayPlan, as_now_caveat, writes
from replaybook.report.sections import confidence_sentence
from replaybook.views import session as S
from replaybook.views.widgets import Workbook

T0 = datetime(2026, 11, 20, 14, 0, 0, tzinfo=timezone.utc)
APP = "rules/app.yaml"
NOW = "service: app\nrevision: 42\n" + "x" * 193 + "\n"  # 220 bytes
assert len(NOW) == 220
W1, R1, R2 = "door-w1", "door-r1", "door-r2"
ROLL_W = "019a0000-0000-7000-8000-0000000000a1"
ROLL_R = "019a0000-0000-7000-8000-0000000000b2"


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _door(root: Path, session: str, agent: str, calls: list[tuple]) -> None:
    """``calls``: (seconds after T0, tool, arguments, object, decision, bytes, response_digest)."""
    p = root / "door" / agent / f"{session}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (s, tool, args, obj, decision, nbytes, digest) in enumerate(calls):
        d = {"ts": _iso(T0 + timedelta(seconds=s)), "seq": i + 1, "session": session, "agent": agent,
             "server": "deploy", "tool": tool, "arguments": args, "object": obj, "decision": decision,
             "rule": "allow-deploy" if decision == "allow" else "deny-secrets", "rows": None, "bytes": nbytes}
        if digest:
            d["response_digest"] = digest
        lines.append(json.dumps(d) + "\n")
    p.write_text("".join(lines))


def _rollout(root: Path, sid: str, calls: list[tuple]) -> None:
    """A Codex rollout making ``calls`` ((seconds after T0, tool, arguments)), each 300 ms before
    the door logged it."""
    lines = [{"timestamp": _iso(T0), "type": "session_meta", "payload": {"id": sid, "cli_version": "0.63.0",
                                                                          "source": "cli"}}]
    for i, (s, tool, args) in enumerate(calls):
        t = T0 + timedelta(seconds=s) - timedelta(milliseconds=300)
        lines.append({"timestamp": _iso(t), "type": "response_item",
                      "payload": {"type": "function_call", "name": f"mcp__door__{tool}",
                                  "arguments": json.dumps(args), "call_id": f"call-{sid[-2:]}-{i}"}})
        lines.append({"timestamp": _iso(t + timedelta(milliseconds=500)), "type": "response_item",
                      "payload": {"type": "function_call_output", "call_id": f"call-{sid[-2:]}-{i}",
                                  "output": "ok"}})
    p = root / "codex" / f"rollout-2026-11-20T14-00-00-{sid}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _incident(root: Path, *, digest: str | None = None) -> Incident:
    (root / "data" / "rules").mkdir(parents=True)
    (root / "data" / "rules" / "app.yaml").write_text(NOW)
    (root / "data" / "rules" / "defaults.yaml").write_text("max_surge: 0.1\n")
    rule = {"path": APP, "rule": {"name": "canary", "max_surge": 1}}
    w = [(10, "read_config", {"path": APP}, APP, "allow", 221, digest),
         (20, "update_rule", rule, APP, "allow", 38, None),
         (30, "read_config", {"path": "rules/secret.env"}, "rules/secret.env", "deny", None, None),
         (40, "read_config", {"path": APP}, APP, "allow", 220, None)]
    _door(root, W1, "deployer", w)
    _rollout(root, ROLL_W, [(c[0], c[1], c[2]) for c in w])
    r1 = [(100, "read_config", {"path": APP}, APP, "allow", 220, None),
          (110, "list_history", {"service": "app"}, None, "allow", 120, None),
          (120, "read_config", {"path": "rules/defaults.yaml"}, "rules/defaults.yaml", "allow", 15, None)]
    r2 = [(300, "diff_rule", {"path": APP, "from": 41, "to": 42}, APP, "allow", 140, None),
          (310, "read_config", {"path": APP}, APP, "allow", 220, None),
          (320, "read_config", {"path": "rules/defaults.yaml"}, "rules/defaults.yaml", "allow", 15, None)]
    _door(root, R1, "reviewer", r1)
    _door(root, R2, "reviewer", r2)
    _rollout(root, ROLL_R, [(c[0], c[1], c[2]) for c in r1 + r2])
    (root / "incident.yaml").write_text("title: t\ntranscripts:\n  - codex/\ndoor:\n  - door/\ndata_root: data/\n"
                                        "window_s: 60\n")
    return Incident.load(root / "incident.yaml")


def _text(html_text: str) -> str:
    import html

    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", html_text))).strip()


@pytest.fixture()
def inc(tmp_path):
    return _incident(tmp_path / "inc")


# -- the file as it is now ------------------------------------------------------------------------


def test_a_preview_is_the_file_as_it_is_now_and_says_what_shows_it_changed(inc):
    """Call #1 read the file before #2 updated it: the door logged 221 bytes for it, the file is
    220 bytes now. The pane had shown today's file as what the call opened, with no word."""
    v = Workbook(inc, charts=False).open_session(W1)
    out = v.open_object(1)
    assert 'data-source="disk"' in out and 'class="rb-preview-caveat"' in out
    assert _text(out).startswith(
        "rules/app.yaml (text file · 220 bytes) Shown as it is on disk now, not as the call read it; the door "
        "logged 221 bytes for this call; the file is 220 bytes now: it has changed since; a later call wrote to it "
        "(update_rule #2 at 14:00:20.000 UTC). service: app revision: 42")
    # call #4 came after the write and the door logged the size the file has: only the first caveat
    assert _text(v.open_object(4)).startswith(
        "rules/app.yaml (text file · 220 bytes) Shown as it is on disk now, not as the call read it. service: app")
    # a diff's answer is not the file: its size is said as a difference only
    r2 = Workbook(inc, charts=False).open_session(R2)
    assert ("Shown as it is on disk now, not as the call read it; the door logged 140 bytes for this call; the file "
            "is 220 bytes now (what diff_rule answered need not be the file itself: no sign it changed). service") in _text(r2.open_object(1))


def test_each_replay_step_says_so_and_a_write_is_a_write(inc):
    v = Workbook(inc, charts=False).open_session(W1)
    plan = v.replay_start(run=False)
    assert plan.to_frame()["opens"].tolist() == ["object", "writes", "nothing", "object"]
    assert [s.later_write[1:] if s.later_write else None for s in plan.steps] == [(W1, 2, "update_rule"), None, None,
                                                                                   None]
    v.replay_step()
    panel = _text(v.panel.value)
    # the refused step #3 is not reached yet: none of the steps done was refused
    assert "Replay — running · step 1 of 4 · 0 done · 0 refused so far (1 in all) · 700 ms/step" in panel
    assert "#2 update_rule writes rules/app.yaml" in panel and "#1 read_config rules/app.yaml" in panel
    assert _text(v.viewer.value).startswith(
        "Step #1 read_config opened rules/app.yaml (text file · 220 bytes) Shown as it is on disk now, not as the "
        "call read it; the door logged 221 bytes for this call; the file is 220 bytes now: it has changed since; a "
        "later call wrote to it (update_rule #2 at 14:00:20.000 UTC). service: app")
    v.replay_step()
    assert _text(v.viewer.value).startswith(
        "Step #2 update_rule writes rules/app.yaml (text file · 220 bytes) Shown as it is on disk now: this call "
        "wrote to it, and the file may have changed again since; the door logged 38 bytes for this call; the file "
        "is 220 bytes now (a write's answer is not the file: no sign it changed). service: app")
    v.replay_step()
    assert "step 3 of 4 · 2 done · 0 refused so far (1 in all)" in _text(v.panel.value)
    v.replay_step()
    assert "step 4 of 4 · 3 done · 1 refused so far (1 in all)" in _text(v.panel.value)
    head = dict(re.findall(r'data-([\w-]+)="([^"]*)"', v.panel.value.split("<b>")[0]))
    assert (head["done"], head["refused-done"], head["refused"]) == ("3", "1", "1")


def test_a_later_write_in_another_session_is_named_with_its_session(inc):
    later = LaterWrites(inc.calls)
    t = inc.calls["ts"].min()
    assert later.after(APP, t)[1:] == (W1, 2, "update_rule")
    assert later.after(APP, later.after(APP, t)[0]) is None  # strictly after
    assert later.after("rules/defaults.yaml", t) is None
    assert as_now_caveat(tool="read_config", logged_bytes=220, size_now=220, later_write=later.after(APP, t),
                         door_session=R1) == (
        "Shown as it is on disk now, not as the call read it; a later call wrote to it (update_rule #2 in door "
        "session door-w1 at 14:00:20.000 UTC), so it has changed since this call.")


def test_writes_goes_by_the_verb_of_the_tool_name():
    assert [writes(t) for t in ("update_deployment_rule", "mcp__door__writeFile", "deploy-api/create_pull_request",
                                "delete", "Write")] == [True] * 5
    assert [writes(t) for t in ("read_config", "diff_rule", "list_rule_history", "get_flag", "describe", None,
                                "updater_status")] == [False] * 7


def test_a_kept_response_is_shown_instead_of_the_file(tmp_path):
    """Where an evidence store holds the response the door kept for the call, that is what the
    call got: it is shown, and said to be that."""
    from replaybook.capsule.store import EvidenceStore

    store = EvidenceStore(tmp_path / "evidence")
    body = json.dumps({"content": [{"type": "text", "text": "service: app\nrevision: 41\n"}], "isError": False},
                      sort_keys=True, separators=(",", ":")).encode()
    digest = store.put(body)
    inc = _incident(tmp_path / "inc", digest=digest)
    plan = ReplayPlan.from_calls(inc.calls, inc.data_root, door_session=W1, evidence=store,
                                 evidence_where="the capsule's evidence store")
    assert [s.kept for s in plan.steps] == [True, False, False, False]
    plan.start()
    step, pv = plan.advance()
    assert (pv.kind, pv.source, pv.text, pv.size) == ("text", "evidence", "service: app\nrevision: 41", len(body))
    assert pv.caveat == (f"The response the door kept for this call ({digest[:19]}…, in the capsule's evidence "
                         "store): what the call got, not the file as it is now.")
    out = S.preview_html(pv, step=step)
    assert 'data-source="evidence"' in out
    assert _text(out).startswith(f"Step #1 read_config opened rules/app.yaml (the response the door kept · "
                                 f"{len(body)} bytes) The response the door kept")
    call = next(inc.calls[(inc.calls["door_session"] == W1) & (inc.calls["seq"] == 1)].itertuples(index=False))
    assert S.call_preview(inc.data_root, call, evidence=store).text == "service: app\nrevision: 41"
    assert S.call_preview(inc.data_root, call).source == "disk"  # without the store: the file now


def test_a_damaged_kept_response_is_said_and_the_file_shown_as_it_is_now(tmp_path):
    from replaybook.capsule.store import EvidenceStore

    store = EvidenceStore(tmp_path / "evidence")
    digest = store.put(b'{"content":[{"type":"text","text":"revision: 41"}]}')
    obj = store.path(digest)
    obj.chmod(0o644)
    obj.write_bytes(b'{"content":[{"type":"text","text":"revision: 40"}]}')  # the store's copy was altered
    inc = _incident(tmp_path / "inc", digest=digest)
    call = next(inc.calls[(inc.calls["door_session"] == W1) & (inc.calls["seq"] == 1)].itertuples(index=False))
    pv = S.call_preview(inc.data_root, call, evidence=store, later=LaterWrites(inc.calls))
    assert (pv.kind, pv.source, pv.size) == ("text", "disk", 220)
    assert pv.caveat.startswith("The response the door kept for this call could not be shown (")
    assert pv.caveat.endswith("). Shown as it is on disk now, not as the call read it; the door logged 221 bytes for "
                              "this call; the file is 220 bytes now: it has changed since; a later call wrote to it "
                              "(update_rule #2 at 14:00:20.000 UTC).")
    plan = ReplayPlan.from_calls(inc.calls, inc.data_root, door_session=W1, evidence=store)
    plan.start()
    assert plan.advance()[1].caveat == pv.caveat


def test_a_different_size_says_changed_only_where_the_answer_is_the_text_file():
    assert as_now_caveat(tool="read_table", logged_bytes=96, size_now=3992, kind="table") == (
        "Shown as it is on disk now, not as the call read it; the door logged 96 bytes for this call; the file is "
        "3,992 bytes now (what read_table answered need not be the file itself: no sign it changed).")
    assert as_now_caveat(tool="read_config", logged_bytes=221, size_now=220, kind="text").endswith(
        "the file is 220 bytes now: it has changed since.")
    assert as_now_caveat(tool="list_folder", logged_bytes=50, size_now=None, kind="folder") == (
        "Shown as it is on disk now, not as the call read it.")


def test_the_workbook_finds_the_capsules_evidence_store():
    repo = Path(__file__).resolve().parents[2]
    inc = Incident.load(repo / "data" / "capsule-demo" / "incident.yaml")
    store, where, problem = S.evidence_store(inc)
    assert store.root == (repo / "data" / "capsule-demo" / "capsule" / "evidence").resolve()
    assert (where, problem) == ("the capsule's evidence store", None)
    v = Workbook(inc, charts=False).open_session(S.sessions_list(inc.join)["door_session"][0])
    out = v.open_object(1)
    assert 'data-source="evidence"' in out and "flag:deploy.fast_track (the response the door kept · 96 bytes" in _text(out)


# -- the join's caveats ---------------------------------------------------------------------------


def test_the_sessions_list_and_the_header_carry_the_joins_caveats(inc):
    f = S.sessions_list(inc.join)
    assert [[r.door_session, None if S._na(r.continues) else r.continues, r.method] for r in f.itertuples()] == [
        [W1, None, "content"], [R1, None, "content"], [R2, R1, "content"]]
    assert str(f["continues"].dtype) == "string" and str(f["method"].dtype) == "string"
    wb = Workbook(inc, charts=False)
    assert wb.sessions.COLUMNS[8:12] == ["status", "method", "continues", "clock offset"]
    cells = [html.unescape(x) for c in wb.sessions.widget.children[0].children if hasattr(c, "value")
             for x in re.findall(r">([^<]*)</span>", c.value)]
    assert cells.count("content") == 3 and cells.count(R1) == 1  # R1's own row is a button

    row = inc.join.sessions.set_index("door_session", drop=False)
    header = _text(wb.open_session(R2).header.value)
    assert (f"Continues door session {R1}: the same conversation (transcript {ROLL_R}), its calls logged in a new "
            "door session.") in header
    assert confidence_sentence(row.loc[R2].to_dict(), 60.0) in header
    assert f"Door session {R2}: continues transcript {ROLL_R}, whose earlier calls are door session {R1}'s" in header
    w1 = _text(wb.open_session(W1).header.value)
    assert "Continues" not in w1
    assert (f"Door session {W1}: High confidence — matched to transcript {ROLL_W}; 4 of 4 calls (100%) agree "
            "(same tool and canonical arguments, at times within 60 s)") in w1


def test_the_static_workbook_gives_each_session_the_header_its_tab_gives(inc, monkeypatch):
    """``interactive = False`` had headed each session ``### Door session X`` only: no confidence
    sentence, no word that door-r2 continues door-r1."""
    import IPython.display as D

    shown: list = []
    monkeypatch.setattr(D, "display", lambda *a, **k: shown.extend(a))
    S.display_static(inc, chart=False)
    headers = [_text(x.data) for x in shown if isinstance(x, D.HTML) and "rb-session-header" in x.data]
    wb = Workbook(inc, charts=False)
    assert headers == [_text(wb.open_session(ds).header.value) for ds in (W1, R1, R2)]
    row = inc.join.sessions.set_index("door_session", drop=False)
    assert (f"Continues door session {R1}: the same conversation (transcript {ROLL_R}), its calls logged in a new "
            "door session.") in headers[2]
    assert confidence_sentence(row.loc[R2].to_dict(), 60.0) in headers[2]
    assert headers[0].startswith(f"Door session {W1} · agent deployer · 14:00:10.000–14:00:40.000 UTC · 4 calls, "
                                 f"1 refused · transcript {ROLL_W}")
    assert (f"Door session {W1}: High confidence — matched to transcript {ROLL_W}; 4 of 4 calls (100%) "
            "agree") in headers[0]


def test_the_static_workbook_hides_model_requests_that_only_called_tools(demo_incident, monkeypatch):
    import IPython.display as D
    import pandas as pd

    shown: list = []
    monkeypatch.setattr(D, "display", lambda *a, **k: shown.extend(a))
    S.display_static(demo_incident, chart=False)
    convs = [x for x in shown if isinstance(x, pd.DataFrame) and "lane" in x.columns]
    assert len(convs) == 2
    assert [x for c in convs for x in c["label"] if x.startswith("model:")] == [
        "model: Let me look at what is in demo/.", "model: The Parquet export is faster to query.",
        "model: Let me check the warehouse settings too.", "model: The average mpg of the cars in demo/ is 19.90.",
        "model: Let me look at what is in demo/.", "model: The average mpg is 20.35 (from cars.xpt)."]
    # the tool calls those requests made are still there
    assert sum((c["lane"] == "tool call").sum() for c in convs) == 9


def test_the_static_workbook_shows_what_each_call_got_back_whole_and_no_nan(demo_incident, monkeypatch):
    # a batch run's conversation had no result column, labels cut at 50 characters by pandas'
    # display, and NaN / None in the empty cells
    import IPython.display as D
    import pandas as pd

    shown: list = []
    seen_width: list = []

    def grab(*a, **k):
        shown.extend(a)
        seen_width.append(pd.get_option("display.max_colwidth"))

    monkeypatch.setattr(D, "display", grab)
    S.display_static(demo_incident, chart=False)
    frames = [x for x in shown if isinstance(x, pd.DataFrame)]
    convs = [x for x in frames if "lane" in x.columns]
    assert all("result" in c.columns for c in convs)
    calls = pd.concat(convs)
    assert calls.loc[calls["lane"] == "tool call", "result"].astype(str).str.len().gt(0).any()
    assert not any(f.isna().any().any() for f in frames)
    assert max(w for w in seen_width if w) >= 400


def test_the_workbook_shows_the_storage_access_and_no_playback_state_when_static(demo_incident, monkeypatch):
    """A batch run of the workbook had no cloud storage view at all (the person who wrote the
    object after the agent appeared nowhere in it), and its Replay tables said ``pending`` on
    every row: a playback state only the live Replay moves."""
    import IPython.display as D
    import pandas as pd

    from replaybook.views.widgets import Workbook

    shown: list = []
    monkeypatch.setattr(D, "display", lambda *a, **k: shown.extend(a))
    S.display_static(demo_incident, chart=False)
    html_parts = [x.data for x in shown if isinstance(x, D.HTML)]
    storage = [h for h in html_parts if 'id="access"' in h]
    import html
    import re

    def text(h):
        return html.unescape(re.sub("<[^>]+>", "", h))

    assert len(storage) == 1 and "s3://acme-data/reference/.env" in text(storage[0])
    assert storage[0] == S.storage_html(demo_incident)
    plans = [x for x in shown if isinstance(x, pd.DataFrame) and "opens" in x.columns]
    assert len(plans) == 2 and not any("state" in p.columns for p in plans)
    wb = Workbook(demo_incident, charts=False)
    assert wb.storage is not None and "s3://acme-data/reference/.env" in text(wb.storage.children[0].value)
    assert wb.storage.titles == ("Cloud storage access: who else touched what the agent reached",)
    assert wb.storage in wb.widget.children


def test_an_incident_without_access_logs_has_no_storage_view(demo_copy):
    from replaybook.incident import Incident
    from replaybook.views.widgets import Workbook

    man = demo_copy / "incident.yaml"
    text = man.read_text()
    start = text.index("access:")
    rest = text[start:].split("\n")
    # drop the access block: its key line and the indented lines under it
    end = next(i for i, line in enumerate(rest[1:], 1) if line and not line.startswith((" ", "-", "#")))
    man.write_text(text[:start] + "\n".join(rest[end:]))
    inc = Incident.load(man)
    assert not inc.has_access and S.storage_html(inc) is None
    assert Workbook(inc, charts=False).storage is None
