"""The transcript-vs-door timeline spec and its offline HTML fragment."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from replaybook.frames import CALLS, PAIRS, STEPS
from replaybook.views import charts
from replaybook.views.charts import UNEXPLAINED_GROUP, CATEGORY_COLORS, chart_html, timeline

T0 = pd.Timestamp("2026-09-13T10:00:00Z")


def s(sec: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(seconds=sec)


@pytest.fixture()
def small():
    steps = STEPS.build([
        dict(transcript_id="t1", seq=0, ts=s(0), kind="user_prompt", text='<script>alert("x")</script>'),
        dict(transcript_id="t1", seq=1, ts=s(1), kind="model_request"),
        dict(transcript_id="t1", seq=2, ts=s(2), kind="tool_call", tool="read_object",
             args_key='{"path":"a.csv"}', call_id="toolu_1"),
        dict(transcript_id="t1", seq=3, ts=s(3), kind="tool_result"),  # not drawn
        dict(transcript_id="t1", seq=4, ts=s(4), kind="tool_call", tool="read_object",
             args_key='{"path":".env"}', call_id="toolu_2"),
        dict(transcript_id="t2", seq=0, ts=pd.NaT, kind="user_prompt", text="no timestamp"),
    ])
    calls = CALLS.build([
        dict(door_session="s1", agent="analyst", seq=1, ts=s(2.4), tool="read_object",
             args_key='{"path":"a.csv"}', object="a.csv", decision="allow", rule="allow-demo",
             rows=32, bytes=2048),
        dict(door_session="s1", agent="analyst", seq=2, ts=s(4.4), tool="read_object",
             args_key='{"path":".env"}', object=".env", decision="deny", rule="no-dotenv"),
    ])
    pairs = PAIRS.build([
        dict(door_session="s1", transcript_id="t1", step_seq=2, call_seq=1, call_id="toolu_1",
             tool="read_object", args_key='{"path":"a.csv"}', step_ts=s(2), call_ts=s(2.4),
             delta_ms=400.0, how="content"),
        dict(door_session="s1", transcript_id="t1", step_seq=4, call_seq=2, call_id="toolu_2",
             tool="read_object", args_key='{"path":".env"}', step_ts=s(4), call_ts=s(4.4),
             delta_ms=400.0, how="content"),
    ])
    return steps, calls, pairs


def layer_of(spec: dict, name: str) -> dict:
    for layer in spec["spec"]["layer"]:
        if {"filter": f"(datum.layer === '{name}')"} in layer.get("transform", []):
            return layer
    raise AssertionError(f"no {name} layer in {[l.get('transform') for l in spec['spec']['layer']]}")


def values(spec: dict, layer: str) -> list[dict]:
    return [v for v in spec["data"]["values"] if v["layer"] == layer]


def test_layers_and_encodings(small):
    steps, calls, pairs = small
    spec = timeline(steps, calls, pairs).to_dict()
    assert spec["facet"]["field"] == "group"
    names = [l["transform"][0]["filter"] for l in spec["spec"]["layer"]]
    # the pair lines under the points, so a dot's own tooltip shows when it is hovered
    assert names == ["(datum.layer === 'pair')", "(datum.layer === 'step')", "(datum.layer === 'call')",
                     "(datum.layer === 'refused')"]
    step = layer_of(spec, "step")
    assert step["mark"]["type"] == "point"
    assert step["encoding"]["x"]["field"] == "t" and step["encoding"]["x"]["type"] == "temporal"
    assert step["encoding"]["x"]["scale"]["type"] == "utc"
    assert step["encoding"]["y"]["field"] == "lane"
    call = layer_of(spec, "call")
    tips = [t["field"].removeprefix("tip_") for t in call["encoding"]["tooltip"]]
    for f in ("tool", "arguments", "object", "rule", "decision", "rows", "bytes"):
        assert f in tips
    # one legend: shape and colour share the field, domain and title (no second "allow / deny" list)
    assert call["encoding"]["shape"]["field"] == call["encoding"]["color"]["field"] == "category"
    assert call["encoding"]["shape"]["title"] == call["encoding"]["color"]["title"]
    assert call["encoding"]["shape"]["scale"]["domain"] == call["encoding"]["color"]["scale"]["domain"]
    assert step["encoding"]["shape"] == call["encoding"]["shape"]
    # steps: only prompts, model requests and tool calls with a timestamp; the NaT prompt is counted
    st = values(spec, "step")
    assert sorted(v["lane"] for v in st) == ["model request", "tool call", "tool call", "user prompt"]
    assert "no timestamp" in " ".join(spec["title"]["subtitle"])
    # one facet row: the session with the transcript the pairs assign to it
    assert {v["group"] for v in spec["data"]["values"]} == {"door session s1 ↔ transcript t1"}
    allowed = values(spec, "call")
    assert allowed == [{**allowed[0]}] and allowed[0]["object"] == "a.csv" and allowed[0]["rows"] == 32
    assert allowed[0]["bytes"] == 2048 and allowed[0]["arguments"] == '{"path":"a.csv"}'
    assert allowed[0]["t"] == "2026-09-13T10:00:02.400Z"


def test_every_tooltip_value_has_a_dash_for_missing(small):
    """Vega-Lite shows a field an event lacks as "undefined" and a missing number as "NaN":
    every tooltip value is computed with a dash in their place."""
    steps, calls, pairs = small
    spec = timeline(steps, calls, pairs).to_dict()
    for layer in spec["spec"]["layer"]:
        calcs = {t["as"]: t["calculate"] for t in layer["transform"] if "calculate" in t}
        for tip in layer["encoding"]["tooltip"]:
            expr = calcs[tip["field"]]
            assert expr.startswith("isValid(") and expr.endswith(": '—'"), expr
    call = layer_of(spec, "call")
    calcs = {t["as"]: t["calculate"] for t in call["transform"] if "calculate" in t}
    assert "format(datum['bytes'], ',')" in calcs["tip_bytes"]


def test_refused_call_is_a_red_cross(small):
    steps, calls, pairs = small
    spec = timeline(steps, calls, pairs).to_dict()
    refused = layer_of(spec, "refused")
    assert refused["mark"]["shape"] == "cross"
    assert refused["mark"]["color"] == CATEGORY_COLORS["deny"] == "#d62728"
    scale = refused["encoding"]["color"]["scale"]
    assert scale["range"][scale["domain"].index("deny")] == "#d62728"
    (r,) = values(spec, "refused")
    assert r["decision"] == "deny" and r["rule"] == "no-dotenv" and r["object"] == ".env" and r["seq"] == 2
    assert "rows" not in r  # NA is left out, not sent as null
    shape = layer_of(spec, "call")["encoding"]["shape"]["scale"]
    assert dict(zip(shape["domain"], shape["range"])) == {
        "user prompt": "circle", "model request": "circle", "tool call": "circle", "allow": "circle",
        "deny": "cross"}


def test_pairs_draw_rules_with_their_endpoints(small):
    steps, calls, pairs = small
    spec = timeline(steps, calls, pairs).to_dict()
    rule = layer_of(spec, "pair")
    assert rule["mark"]["type"] == "rule"
    enc = rule["encoding"]
    assert (enc["x"]["field"], enc["x2"]["field"], enc["y"]["field"], enc["y2"]["field"]) == ("t", "t2", "lane", "lane2")
    got = sorted((v["t"], v["t2"], v["lane"], v["lane2"], v["call_id"]) for v in values(spec, "pair"))
    assert got == [
        ("2026-09-13T10:00:02.000Z", "2026-09-13T10:00:02.400Z", "tool call", "door", "toolu_1"),
        ("2026-09-13T10:00:04.000Z", "2026-09-13T10:00:04.400Z", "tool call", "door", "toolu_2"),
    ]


def test_without_pairs_every_source_gets_its_own_row(small):
    steps, calls, _ = small
    spec = timeline(steps, calls).to_dict()
    groups = {v["group"] for v in spec["data"]["values"]}
    assert groups == {"door session s1 (no transcript)", "transcript t1 (no door session)"}
    assert all("(datum.layer === 'pair')" not in json.dumps(l) for l in spec["spec"]["layer"])


def test_access_lane(small):
    steps, calls, pairs = small
    access = pd.DataFrame({"ts": [s(5), s(6)], "action": ["read", "read"],
                           "resource_uri": ["s3://b/k", "s3://b/secret"], "outcome": ["allowed", "denied"],
                           "principal": ["role/agent", "role/agent"], "bytes": [10, None]})
    spec = timeline(steps, calls, pairs, access).to_dict()
    acc = [v for v in spec["data"]["values"] if v["group"] == UNEXPLAINED_GROUP]
    assert sorted(v["layer"] for v in acc) == ["access", "refused"]
    assert {v["lane"] for v in acc} == {"storage"}
    shape = layer_of(spec, "access")["encoding"]["shape"]["scale"]
    assert dict(zip(shape["domain"], shape["range"]))["no door call"] == "square"
    assert layer_of(spec, "refused")["mark"]["shape"] == "cross"  # a denied request stays a cross
    # the row an investigator must see first comes first
    assert spec["facet"]["sort"][0] == UNEXPLAINED_GROUP


def test_other_services_events_are_not_drawn_as_storage_and_long_spans_show_dates(small):
    """Real trails hold EC2, IAM and GCE events next to object reads: they had been drawn in
    the 'storage no door call explains' row, and a row spanning years read 00:00:00 throughout."""
    steps, calls, pairs = small
    access = pd.DataFrame({"ts": [s(5), s(6), s(7) + pd.Timedelta(days=900)],
                           "action": ["read", "other", "other"],
                           "resource_uri": ["s3://b/k", "arn:aws:ec2:us-east-1:1:instance/i-1",
                                            "//iam.googleapis.com/projects/p/serviceAccounts/x"],
                           "outcome": ["allowed", "allowed", "denied"], "principal": ["a", "b", "c"], "bytes": [1, None, None]})
    spec = timeline(steps, calls, pairs, access).to_dict()
    acc = [v for v in spec["data"]["values"] if v["group"] == UNEXPLAINED_GROUP]
    assert [v.get("object") for v in acc] == ["s3://b/k"]
    assert "2 cloud events of other services (not storage) are not drawn: see the cloud section" in \
        spec["title"]["subtitle"]
    far = steps.assign(ts=steps["ts"] + pd.Timedelta(days=3))  # one row, three days long
    x = timeline(pd.concat([steps, far.assign(seq=far["seq"] + 100)], ignore_index=True), calls, pairs).to_dict()
    assert "%Y-%m-%d" in json.dumps(x)


def test_linked_access_sits_under_its_call_with_a_link_line():
    import replaybook

    U = UNEXPLAINED_GROUP
    inc = replaybook.Incident.load(Path(__file__).resolve().parents[2] / "data" / "demo" / "incident.yaml")
    aj = inc.access_join
    spec = timeline(inc.steps, inc.calls, inc.join.pairs, inc.access, access_links=aj.links).to_dict()
    vals = spec["data"]["values"]
    links = [v for v in vals if v["layer"] == "link"]
    assert len(links) == len(aj.links) == 8
    assert all(v["lane"] == "door" and v["lane2"] == "storage" for v in links)
    unexplained = [v for v in vals if v["group"] == U]
    assert sorted(v["object"] for v in unexplained) == ["s3://acme-data/", "s3://acme-data/reference/.env"]
    linked = [v for v in vals if v["lane"] == "storage" and v["group"] != U]
    assert len(linked) == 8 and all(v["group"].startswith("door session door-2026") for v in linked)


def test_empty_inputs_give_a_message_not_an_error():
    spec = timeline(STEPS.empty(), CALLS.empty()).to_dict()
    assert spec["mark"]["type"] == "text"
    assert spec["data"]["values"][0]["msg"].startswith("no timestamped events")


def big_frames(n_steps=10_000, n_calls=10_000, n_pairs=3_000, seed=0):
    rng = np.random.default_rng(seed)
    kinds = rng.choice(["user_prompt", "model_request", "tool_call"], n_steps, p=[0.05, 0.45, 0.5])
    steps = STEPS.build(pd.DataFrame({
        "transcript_id": rng.choice(["t1", "t2"], n_steps), "seq": np.arange(n_steps),
        "ts": T0 + pd.to_timedelta(np.sort(rng.uniform(0, 7200, n_steps)), unit="s"), "kind": kinds,
        "tool": np.where(kinds == "tool_call", "read_object", None),
        "args_key": [f'{{"path":"p{i}"}}' for i in range(n_steps)]}))
    decision = rng.choice(["allow", "deny", "ask"], n_calls, p=[0.95, 0.04, 0.01])
    sess = rng.choice(["s1", "s2"], n_calls)
    calls = CALLS.build(pd.DataFrame({
        "door_session": sess, "seq": np.arange(1, n_calls + 1),
        "ts": T0 + pd.to_timedelta(np.sort(rng.uniform(0, 7200, n_calls)), unit="s"), "tool": "read_object",
        "args_key": [f'{{"path":"p{i}"}}' for i in range(n_calls)], "object": [f"/d/p{i}" for i in range(n_calls)],
        "decision": decision, "rule": "r", "rows": 1, "bytes": 10}))
    ps = rng.choice(["s1", "s2"], n_pairs)
    pairs = PAIRS.build(pd.DataFrame({
        "door_session": ps, "transcript_id": np.where(ps == "s1", "t1", "t2"), "step_seq": np.arange(n_pairs),
        "call_seq": np.arange(n_pairs), "call_id": "toolu", "tool": "read_object", "args_key": "{}",
        "step_ts": T0 + pd.to_timedelta(np.arange(n_pairs), unit="s"),
        "call_ts": T0 + pd.to_timedelta(np.arange(n_pairs) + 0.3, unit="s"), "delta_ms": 300.0, "how": "content"}))
    return steps, calls, pairs, int((decision == "deny").sum())


def test_20000_events_aggregate_into_a_small_spec():
    steps, calls, pairs, n_refused = big_frames()
    spec = timeline(steps, calls, pairs).to_dict()
    size = len(json.dumps(spec))
    assert size < 2_000_000, size
    assert "aggregated" in spec["title"]["text"]
    assert "20,000 events" in spec["title"]["text"]
    layers = [l["transform"][0]["filter"] for l in spec["spec"]["layer"]]
    assert layers[0] == "(datum.layer === 'bin')"
    bins = values(spec, "bin")
    refused = values(spec, "refused")
    # every refused call is kept individually; everything else is counted, and nothing is lost
    assert len(refused) == n_refused
    assert sum(b["count"] for b in bins) + len(refused) == 20_000
    assert all(b["t2"] > b["t"] for b in bins)
    # pairs fit (refused + pairs <= 5000): kept as individual rules
    assert len(values(spec, "pair")) == 3000
    assert layer_of(spec, "bin")["mark"]["type"] == "rect"
    assert layer_of(spec, "bin")["encoding"]["opacity"]["field"] == "count"


def test_pairs_that_do_not_fit_are_dropped_and_said():
    steps, calls, pairs, _ = big_frames(n_pairs=6_000)
    spec = timeline(steps, calls, pairs).to_dict()
    assert values(spec, "pair") == []
    assert any("pair lines omitted" in x for x in spec["title"]["subtitle"])
    assert len(json.dumps(spec)) < 2_000_000


def test_below_max_marks_everything_is_individual(small):
    steps, calls, pairs = small
    spec = timeline(steps, calls, pairs, max_marks=6).to_dict()
    assert "aggregated" not in spec["title"]["text"]
    spec = timeline(steps, calls, pairs, max_marks=5).to_dict()
    assert "aggregated" in spec["title"]["text"]
    assert len(values(spec, "refused")) == 1


def test_chart_html_is_offline_and_escaped(small):
    steps, calls, pairs = small
    frag = chart_html(timeline(steps, calls, pairs))
    assert not re.search(r"<script[^>]*\bsrc\s*=", frag, flags=re.I)
    assert "cdn" not in frag.lower() and "require.js" not in frag.lower()
    assert frag.count("<script") == 2
    assert "window.vegaEmbed=" in frag  # the bundle is inlined
    embed = frag.split("<script")[-1]
    assert '"$schema"' not in embed and "vegaEmbed(el, spec, opt)" in embed  # no schema URL in the spec
    # the transcript's <script> travels as escaped JSON and cannot close the script element
    assert '<script>alert("x")' not in frag
    assert "\\u003cscript\\u003ealert" in frag
    assert len(frag) > 800_000  # ~0.9 MB of JavaScript


def test_tooltips_show_bidirectional_controls_written_out(small):
    steps, calls, pairs = small
    calls = calls.copy()
    calls.loc[calls.index[0], "object"] = "demo/evil\u202egnp.exe"
    frag = chart_html(timeline(steps, calls, pairs), include_js=False)
    assert "\u202e" not in frag and "demo/evil\\\\u202egnp.exe" in frag  # (\\u202e, in JSON)


def test_chart_html_without_js(small):
    steps, calls, pairs = small
    frag = chart_html(timeline(steps, calls, pairs), include_js=False)
    assert len(frag) < 50_000 and frag.count("<script") == 1


def test_charts_does_not_import_ipywidgets():
    # charts.py itself never imports widgets ...
    tree = ast.parse(open(charts.__file__, encoding="utf-8").read())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"ipywidgets", "anywidget", "ipyvega"}
    # ... and works where widgets cannot be imported at all (altair itself pulls in anywidget →
    # ipywidgets when they are installed, for its JupyterChart; that is altair's, not ours)
    code = ("import sys; sys.modules['ipywidgets'] = None; sys.modules['anywidget'] = None\n"
            "from replaybook.frames import STEPS, CALLS\n"
            "from replaybook.views.charts import timeline, chart_html\n"
            "st = STEPS.build([dict(transcript_id='t', kind='user_prompt', ts='2026-01-01T00:00:00Z')])\n"
            "print(len(chart_html(timeline(st, CALLS.empty()))) > 800000)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True"


def test_sessions_months_apart_get_a_time_axis_each():
    # two sessions three months apart: on one shared axis each was a dot
    far = pd.Timedelta(days=90)
    steps = STEPS.build([
        dict(transcript_id="t1", seq=0, ts=s(0), kind="user_prompt", text="first"),
        dict(transcript_id="t1", seq=1, ts=s(30), kind="tool_call", tool="read", args_key="{}"),
        dict(transcript_id="t2", seq=0, ts=s(0) + far, kind="user_prompt", text="second"),
        dict(transcript_id="t2", seq=1, ts=s(45) + far, kind="tool_call", tool="read", args_key="{}"),
    ])
    spec = timeline(steps, CALLS.empty()).to_dict()
    assert spec["resolve"]["scale"] == {"y": "independent", "x": "independent"}
    assert "each row has its own time axis: the sessions lie far apart (2026-09-13 to 2026-12-12)" in spec["title"]["subtitle"]
    assert layer_of(spec, "step")["encoding"]["x"]["axis"]["format"] == "%Y-%m-%d %H:%M:%S"
    # close together (the usual incident): one shared axis, times of day
    near = timeline(steps[steps.transcript_id == "t1"], CALLS.empty()).to_dict()
    assert near["resolve"]["scale"] == {"y": "independent"}
    # aggregated, each row binned over its own span (not one bin of ~15 hours per row)
    n = 3000
    rows = [dict(transcript_id=f"t{k}", seq=i, ts=s(i * 0.5) + k * far, kind="model_request")
            for k in (1, 2) for i in range(n)]
    spec = timeline(STEPS.build(rows), CALLS.empty(), max_marks=1000).to_dict()
    bins = values(spec, "bin")
    widths = {pd.Timestamp(b["t2"]) - pd.Timestamp(b["t"]) for b in bins}
    assert widths == {pd.Timedelta(seconds=10)} and sum(b["count"] for b in bins) == 2 * n


def test_a_sub_agent_is_drawn_in_its_parents_row():
    steps = STEPS.build([
        dict(transcript_id="P", client_session_id="P", seq=0, ts=s(0), kind="user_prompt", text="go"),
        dict(transcript_id="P", client_session_id="P", seq=1, ts=s(1), kind="tool_call", tool="Task", args_key="{}"),
        dict(transcript_id="agent-x", client_session_id="P", agent_id="x", seq=0, ts=s(2), kind="tool_call",
             tool="read", args_key="{}"),
    ])
    groups = {v["who"]: v["group"] for v in values(timeline(steps, CALLS.empty()).to_dict(), "step")}
    assert groups == {"P": "transcript P (no door session)", "agent-x": "transcript P (no door session)"}


def test_without_a_door_log_the_title_does_not_speak_of_the_door(small):
    steps, calls, pairs = small
    assert timeline(steps, calls, pairs).to_dict()["title"]["text"].startswith("Transcript vs door")
    assert timeline(steps, CALLS.empty()).to_dict()["title"]["text"] == \
        "Transcripts: what the agent did (no door calls in this incident)"


def test_marks_are_described_for_screen_readers_in_words(small):
    # Vega-Lite's default aria label lists raw field names ("t2: …; lane2: door")
    steps, calls, pairs = small
    spec = timeline(steps, calls, pairs).to_dict()
    for name in ("step", "call", "refused"):
        assert layer_of(spec, name)["encoding"]["description"] == {"field": "desc", "type": "nominal"}
    calc = [t["calculate"] for t in layer_of(spec, "call")["transform"] if t.get("as") == "desc"]
    assert calc and calc[0].endswith("' at ' + datum.when")  # (when: UTC text ending in Z)
    assert layer_of(spec, "pair")["mark"]["aria"] is False


def test_thousands_of_sessions_draw_at_most_max_groups_rows_refused_first():
    """2,620 door sessions drew 2,620 facet rows: a 32 MB report section no browser opens.  The
    first rows go to the sessions with a refusal; the rest share one last row, and say so."""
    n = 300
    calls = CALLS.build(pd.DataFrame({
        "door_session": [f"s{i:03d}" for i in range(n)], "seq": 1,
        "ts": T0 + pd.to_timedelta(np.arange(n) * 10.0, unit="s"), "tool": "read_object",
        "args_key": "{}", "object": "/d/x", "decision": ["deny" if i in (250, 260) else "allow" for i in range(n)],
        "rule": "r", "rows": 1, "bytes": 10}))
    spec = timeline(STEPS.empty(), calls, None, max_groups=10).to_dict()
    rows = spec["facet"]["sort"]
    assert len(rows) == 10
    # the two sessions with a refusal have rows of their own, then the earliest; in time order
    assert rows == ([f"door session s{i:03d} (no transcript)" for i in (0, 1, 2, 3, 4, 5, 6, 250, 260)]
                    + [charts.MERGED_GROUP])
    merged = [v for v in values(spec, "call") if v["group"] == charts.MERGED_GROUP]
    assert len(merged) == n - 9
    assert any("291 door sessions and transcripts are drawn together in the last row" in x
               for x in spec["title"]["subtitle"])
    assert len(json.dumps(spec)) < 300_000


def test_a_transcripts_session_keeps_its_row_before_refused_door_only_sessions():
    n = 60
    calls = CALLS.build(pd.DataFrame({
        "door_session": [f"s{i:03d}" for i in range(n)], "seq": 1,
        "ts": T0 + pd.to_timedelta(np.arange(n) * 10.0, unit="s"), "tool": "read_object",
        "args_key": "{}", "object": "/d/x", "decision": ["deny" if i < 40 else "allow" for i in range(n)],
        "rule": "r", "rows": 1, "bytes": 10}))
    steps = STEPS.build([dict(transcript_id="t1", seq=0, ts=T0 + pd.Timedelta(seconds=549.7), kind="tool_call",
                              tool="read_object", args_key="{}")])
    pairs = PAIRS.build([dict(door_session="s055", transcript_id="t1", step_seq=0, call_seq=1, call_id=None,
                              tool="read_object", args_key="{}", step_ts=T0 + pd.Timedelta(seconds=549.7),
                              call_ts=T0 + pd.Timedelta(seconds=550), delta_ms=300.0, how="content")])
    rows = timeline(steps, calls, pairs, max_groups=5).to_dict()["facet"]["sort"]
    assert "door session s055 ↔ transcript t1" in rows and rows[-1] == charts.MERGED_GROUP
    assert rows[:3] == [f"door session s{i:03d} (no transcript)" for i in range(3)]


def test_the_row_order_names_rows_as_the_data_does_when_a_name_holds_invisible_characters(small):
    """The data writes a bidi override out (``\\u202e``); the facet's sort list had kept it raw,
    matched no row, and the rows fell back to Vega's order (door-B drawn before door-A)."""
    steps, calls, pairs = small
    calls = pd.concat([calls, CALLS.build([dict(door_session="door-B", agent="analyst", seq=1, ts=s(30),
                                                 tool="read_object", args_key="{}", object="b", decision="allow",
                                                 rule="r")])], ignore_index=True)
    calls["door_session"] = calls["door_session"].replace({"s1": "door-A\u202ex"})
    pairs = pairs.assign(door_session="door-A\u202ex")
    spec = timeline(steps, calls, pairs).to_dict()
    rows = spec["facet"]["sort"]
    named = {v["group"] for v in spec["data"]["values"]}
    assert rows[0] == "door session door-A\\u202ex ↔ transcript t1" and set(rows) == named
    assert not any("\u202e" in r for r in rows)
