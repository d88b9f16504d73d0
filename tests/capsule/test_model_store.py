"""The capsule format, its schema, digests and the evidence store."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from replaybook.capsule import EvidenceStore, capsule_schema, load_capsule, verify_capsule
from replaybook.capsule.digest import (json_digest, request_digest, response_shape, sha256_digest, shape_paths,
                                       short)
from replaybook.capsule.errors import CapsuleFormatError, EvidenceMissing, IntegrityError
from replaybook.capsule.model import MissingEvidencePolicy, guess_effect, iso_z
from replaybook.capsule.store import ObjectCheck
from replaybook.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "capsule"


def test_schema_ships_in_the_package():
    s = capsule_schema()
    assert s["$id"] == "https://replaybook.dev/schemas/capsule.v1.json"
    assert s["required"] == ["capsule_version", "operation_id", "repository", "prompts", "model", "runtime",
                             "authority", "tool_evidence", "completeness"]


def test_seed_capsule_loads_and_is_unproven():
    cap = load_capsule(FIXTURES / "seed_capsule.yaml")
    assert cap.operation_id == "op-example-913"
    assert cap.started_at == "2026-09-13T16:42:03.000Z"
    ev = cap.tool_evidence[0]
    assert (ev.call_id, ev.method, ev.observed_at, ev.effect) == ("call-example-07", "service.get",
                                                                   "2026-09-13T16:42:11.000Z", "unknown")
    assert cap.authority.scopes == ("catalogue_read", "repo_write")
    assert cap.missing_evidence_policy == MissingEvidencePolicy("stop", (), "replay_incomplete")
    rep = verify_capsule(cap)
    inv = rep.inventory
    assert list(inv.columns) == ["input_class", "pinned", "captured", "why"]
    assert inv[["input_class", "pinned", "captured"]].values.tolist() == [
        ["repository tree", "yes", "no"],
        ["system and task prompts", "yes", "no"],
        ["model and parameters", "yes", "no"],
        ["MCP responses", "yes", "no"],
        ["policy decisions", "partial", "no"],
        ["credential scope", "yes", "no"],
        ["runtime image", "yes", "no"],
        ["clock and feature flags", "partial", "no"],
    ]
    assert rep.completeness == "unproven" and rep.exit_code == 4
    assert rep.reasons[3] == ("MCP responses: response not in the store: call-example-07")


@pytest.mark.parametrize("text,match", [
    ("capsule_version: 1\n", "'operation_id' is a required property"),
    ("[1, 2]\n", "must be a YAML mapping"),
    ("a: [unclosed\n", "not valid YAML"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    # YAML keeps the last of a key written twice: a second tool_evidence list would replace the first
    ("capsule_version: 1\ntool_evidence: []\noperation_id: x\ntool_evidence: []\n",
     r"key 'tool_evidence' is written twice \(lines 2 and 4\)"),
])
def test_bad_capsules_are_input_errors_naming_the_problem(tmp_path, text, match):
    p = tmp_path / "capsule.yaml"
    p.write_text(text)
    with pytest.raises(CapsuleFormatError, match=match) as e:
        load_capsule(tmp_path)
    assert isinstance(e.value, InputError) and e.value.path == str(p)


def test_schema_error_names_the_field(tmp_path):
    text = (FIXTURES / "seed_capsule.yaml").read_text().replace(
        "request_digest: sha256:6666", "request_digest: md5:6666")
    (tmp_path / "capsule.yaml").write_text(text)
    with pytest.raises(CapsuleFormatError, match="at tool_evidence/0/request_digest: 'md5:6666"):
        load_capsule(tmp_path)


def test_digests():
    assert sha256_digest(b"") == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert request_digest("s", "m", {"b": 1.0, "a": [1, 2]}) == request_digest("s", "m", {"a": [1, 2], "b": 1})
    assert request_digest("s", "m", None) == request_digest("s", "m", {})
    assert request_digest("s", "m", {"a": 1}) != request_digest("s", "other", {"a": 1})
    assert json_digest({"a": 1}) == sha256_digest(b'{"a":1}')
    shape = response_shape({"tags": {"x": False}, "items": [1, "a", 2], "n": None, "f": 1.5})
    assert shape == {"object": {"tags": {"object": {"x": "boolean"}}, "items": {"array": ["integer", "string"]},
                                "n": "null", "f": "number"}}
    assert shape_paths(shape) == {"tags.x:boolean", "items[]:integer", "items[]:string", "n:null", "f:number"}
    assert short("sha256:31a7ffff") == "sha256:31a7…" and short(None) == "—"
    assert iso_z("2026-09-13T16:42:11+02:00") == "2026-09-13T14:42:11.000Z"
    assert [guess_effect(m) for m in ("get_service", "list", "merge_pull_request", "service.get")] == [
        "read", "read", "write", "write"]


def test_store_is_content_addressed_atomic_and_read_only(tmp_path):
    store = EvidenceStore(tmp_path / "ev")
    d = store.put(b"hello")
    assert d == sha256_digest(b"hello")
    p = store.path(d)
    assert p == tmp_path / "ev" / "sha256" / d[7:]
    assert stat.S_IMODE(p.stat().st_mode) == 0o444
    assert store.put(b"hello") == d and store.digests() == [d]
    assert [f.name for f in (tmp_path / "ev" / "sha256").iterdir()] == [d[7:]]  # no temp files left
    assert store.get(d) == b"hello"
    assert store.check(d).status == "ok"
    with pytest.raises(EvidenceMissing, match="is not in"):
        store.get(sha256_digest(b"other"))
    os.chmod(p, 0o644)
    p.write_bytes(b"HELLO")
    c = store.check(d)
    assert (c.status, c.actual, c.size) == ("mismatch", sha256_digest(b"HELLO"), 5)
    with pytest.raises(IntegrityError, match="for call c1 was changed"):
        store.get(d, call_id="c1")
    with pytest.raises(IntegrityError):
        store.put(b"hello")  # an existing, damaged object is never silently overwritten


def test_capsule_round_trip_keeps_the_file_valid(capsule_dir):
    cap = load_capsule(capsule_dir)
    cap.save(capsule_dir)
    again = load_capsule(capsule_dir / "capsule.yaml")
    assert again.data == cap.data
    assert json.loads(json.dumps(again.data)) == again.data


def test_an_object_that_cannot_be_read_is_missing_not_a_crash(tmp_path):
    """A folder where an object should be, or a store root that is a file: reading it is
    ``EvidenceMissing`` (a replay stops as replay_incomplete), re-hashing it says ``missing``."""
    store = EvidenceStore(tmp_path / "ev")
    d = sha256_digest(b"hello")
    store.path(d).mkdir(parents=True)  # a folder in the object's place
    with pytest.raises(EvidenceMissing, match="is not a file"):
        store.get(d, call_id="c1")
    store.path(d).rmdir()
    os.mkfifo(store.path(d))  # a pipe: opening it had waited for a writer for ever
    with pytest.raises(EvidenceMissing, match=r"evidence object sha256:\w+ \(call c1\) in .* is not a file"):
        store.get(d, call_id="c1")
    assert store.check(d).status == "missing"
    (tmp_path / "file").write_text("not a folder")
    on_a_file = EvidenceStore(tmp_path / "file")
    with pytest.raises(EvidenceMissing, match="cannot be read"):
        on_a_file.get(d)
    assert on_a_file.check(d).status == "missing"


def test_diff_with_an_evidence_store_that_is_a_file_still_compares(tmp_path):
    from click.testing import CliRunner

    from replaybook.capsule.cli import capsule

    demo = Path(__file__).resolve().parents[2] / "data" / "capsule-demo" / "runs"
    rec = json.loads((demo / "incident.json").read_text())
    rec["evidence_store"] = "incident.json"  # a file, not a store
    (tmp_path / "incident.json").write_text(json.dumps(rec))
    r = CliRunner().invoke(capsule, ["diff", str(tmp_path / "incident.json"), str(demo / "live.json")])
    assert r.exit_code == 0, r.output
    assert "verdict    diverged at checkpoint 12" in r.output


@pytest.mark.parametrize("err, how", [("EIO", "open"), ("EACCES", "open"), ("EIO", "stat")])
def test_an_object_there_but_unreadable_is_unreadable_not_missing(tmp_path, monkeypatch, err, how):
    """An object the disk cannot read (an I/O error, no permission) was re-hashed as ``missing``
    — never captured, to whoever reads it — and an I/O error on looking it up ended in a
    traceback: it is ``unreadable``, with the system's reason."""
    import builtins
    import errno

    store = EvidenceStore(tmp_path / "ev")
    d = store.put(b"hello")
    p = store.path(d)
    code = getattr(errno, err)
    real_open, real_stat = builtins.open, os.stat

    def fake_open(file, mode="r", *a, **kw):
        if "r" in mode and not isinstance(file, int) and Path(file) == p:
            raise OSError(code, os.strerror(code))
        return real_open(file, mode, *a, **kw)

    def fake_stat(path, *a, **kw):
        if not isinstance(path, int) and Path(path) == p:
            raise OSError(code, os.strerror(code), str(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(*((builtins, "open", fake_open) if how == "open" else (os, "stat", fake_stat)))
    assert store.check(d) == ObjectCheck(d, "unreadable", reason=os.strerror(code))
    assert store.digests() == [d]
    monkeypatch.undo()
    assert store.check(d) == ObjectCheck(d, "ok", d, 5)
    assert store.check(sha256_digest(b"never stored")).status == "missing"
