"""Sniffing by content (sources.registry.sniff_file): each sample line parsed once, each sample
judged once, and the verdicts those savings give equal to judging afresh."""

import json
from pathlib import Path

import pytest

from replaybook.loading import MIN_CONFIDENCE
from replaybook.sources import registry

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for d in (ROOT / "tests" / "fixtures", ROOT / "data") for p in d.rglob("*")
               if p.is_file() and p.stat().st_size)


def _afresh(path: Path) -> tuple[str | None, float]:
    """Every source's own verdict on the file's sample, with nothing shared or remembered."""
    registry._load_builtin()
    head = path.read_bytes()[:registry.SNIFF_BYTES]
    if head[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        try:
            head = gzip.GzipFile(fileobj=__import__("io").BytesIO(path.read_bytes())).read(registry.SNIFF_BYTES)
        except (OSError, EOFError, zlib.error):
            return None, -1.0  # (damaged gzip: the registry reads what the stream gives; not compared)
    best, score = None, 0.0
    for src in registry._REGISTRY.values():
        s = src.sniff(head)
        if s > score:
            best, score = src.name, s
    return best, score


def test_the_shared_parse_gives_every_source_its_own_verdict():
    """Each line of a sample is parsed once for all ~20 sources (they had parsed it once each:
    2 ms a file, half a minute before a door's 15,000 files were read); the verdicts are the
    ones each source reaches alone, on every file the project ships."""
    assert len(FILES) > 100
    compared = 0
    for f in FILES:
        want = _afresh(f)
        if want[1] < 0:
            continue
        registry._SNIFFED.clear()
        src, score = registry.sniff_file(f)
        assert ((src.name if src else None), score) == want, f
        compared += 1
    assert compared > 100


def test_a_sample_is_judged_once_and_new_bytes_afresh(tmp_path, monkeypatch):
    door = (ROOT / "data" / "demo" / "door" / "analyst" / "door-20260913T100005-a1.jsonl").read_bytes()
    f = tmp_path / "s.jsonl"
    f.write_bytes(door)
    calls = []
    real = registry._REGISTRY["door"]
    monkeypatch.setitem(registry._REGISTRY, "door",
                        registry.replace(real, sniff=lambda sample: calls.append(1) or real.sniff(sample)))
    assert registry.sniff_file(f)[0].name == "door" and len(calls) == 1
    assert registry.sniff_file(f)[0].name == "door" and len(calls) == 1  # judged once
    assert registry.sniff_file(tmp_path / ".." / tmp_path.name / "s.jsonl")[0].name == "door"
    assert len(calls) == 1  # the same bytes under another name: the same verdict
    f.write_bytes(b"not a log at all\n" * (len(door) // 17))  # other bytes at the same path
    assert registry.sniff_file(f) == (None, 0.0) and len(calls) == 2
    # another set of sources judges afresh
    monkeypatch.setitem(registry._REGISTRY, "door", real)
    f.write_bytes(door)
    assert registry.sniff_file(f)[0] is real and len(calls) == 2


def test_verdicts_handed_to_another_process_are_taken_for_the_same_bytes_only(tmp_path, monkeypatch):
    """`replaybook report` checks every file's list, then its kernel loads them: the kernel takes
    the verdicts already reached instead of sniffing every file a second time."""
    import os
    import subprocess
    import sys

    door = (ROOT / "data" / "demo" / "door" / "analyst" / "door-20260913T100005-a1.jsonl").read_bytes()
    same, changed = tmp_path / "same.jsonl", tmp_path / "changed.jsonl"
    same.write_bytes(door)
    changed.write_bytes(door)
    out = tmp_path / "verdicts.json"
    # (a fresh process each side: another test may have registered a source of its own here)
    export = ("import sys\nfrom replaybook.sources import registry as r\n"
              "print(r.sniff_file(sys.argv[1])[0].name, r.sniff_file(sys.argv[2])[0].name, r.export_verdicts(sys.argv[3]))\n")
    got = subprocess.run([sys.executable, "-c", export, str(same), str(changed), str(out)], capture_output=True,
                         text=True, check=True, env={k: v for k, v in os.environ.items() if k != registry.VERDICTS_ENV})
    assert got.stdout.split() == ["door", "door", "1"]  # one sample (both files hold the same bytes)
    changed.write_bytes(b"not a log at all\n")
    code = ("import sys\nfrom replaybook.sources import registry as r\n"
            "calls = []\n"
            "r._load_builtin()\n"
            "door = r._REGISTRY['door']\n"
            "orig = door.sniff\n"
            "object.__setattr__(door, 'sniff', lambda s: calls.append(1) or orig(s))\n"
            "a = r.sniff_file(sys.argv[1]); b = r.sniff_file(sys.argv[2])\n"
            "print(a[0].name, a[1], b[0], len(calls))\n")
    env = dict(os.environ, **{registry.VERDICTS_ENV: str(out)})
    got = subprocess.run([sys.executable, "-c", code, str(same), str(changed)], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    # same bytes: the verdict handed over (door's sniffer not asked); other bytes: judged afresh
    assert got == ["door", "0.95", "None", "1"]
    # a file of verdicts from another set of sources, or not a verdicts file, is ignored
    doc = out.read_text().replace('"door"', '"door2"', 1)
    out.write_text(doc)
    assert registry.import_verdicts(out) == 0
    out.write_text("{not json")
    assert registry.import_verdicts(out) == 0


def test_prefetch_with_helpers_gives_the_verdicts_sniff_file_gives(tmp_path, monkeypatch):
    """Thousands of files are judged by helper processes too; the verdicts they hand back are
    the ones this process reaches, and later sniff_file calls judge nothing again."""
    monkeypatch.setenv("REPLAYBOOK_LOAD_WORKERS", "1")
    monkeypatch.setattr(registry, "PREFETCH_MIN", 8)
    picks = [f for f in FILES if f.suffix in (".jsonl", ".json", ".log", ".gz")][:40]
    files = []
    for i, f in enumerate(picks):
        dst = tmp_path / f"{i:03d}{''.join(f.suffixes)}"
        dst.write_bytes(f.read_bytes())
        files.append(dst)
    (tmp_path / "junk.txt").write_bytes(b"\x00\x01binary" * 50)
    files.append(tmp_path / "junk.txt")
    registry._SNIFFED.clear()
    registry.prefetch(files + [tmp_path / "missing.jsonl"])  # (a file that cannot be read: left to sniff_file)
    judged = []
    real = registry._judge
    monkeypatch.setattr(registry, "_judge", lambda head, judges: judged.append(1) or real(head, judges))
    for f in files:
        src, score = registry.sniff_file(f)
        want = _afresh(f)
        if want[1] >= 0:
            assert ((src.name if src else None), score) == want, f
    assert judged == []  # every verdict came from the prefetch


@pytest.mark.parametrize("fixture, source", [
    ("cloud/join/door/analyst/door-sess-j.jsonl", "door"),
    ("cloud/gcp-audit-denied/data_access.jsonl", "gcp.audit"),
    ("cloud/lookup/lookup_events.jsonl", "aws.cloudtrail"),
])
def test_a_log_that_begins_with_many_damaged_lines_is_still_recognised(tmp_path, fixture, source):
    """Sixty torn or garbled lines before the first whole one (more than the fifty lines a
    sniffer looks at): the lines after them say what the file is, as they do after five."""
    whole = (ROOT / "tests" / "fixtures" / fixture).read_bytes()
    for n in (5, 60, 400):
        p = tmp_path / f"{n}.jsonl"
        p.write_bytes(b'{"ts": "2026-09-13T10:00:0\n' * (n // 2) + b'{"garbled\x00 line\n' * (n - n // 2) + whole)
        got, score = registry.sniff_file(p)
        assert got is not None and got.name == source and score >= MIN_CONFIDENCE, (n, got, score)
    # junk that is not JSON at all is still nobody's: the damage rule is for lines opening an object
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"not a log line\n" * 200 + whole)
    got, score = registry.sniff_file(junk)
    assert got is None or score < MIN_CONFIDENCE or got.name != source


GW = ROOT / "tests" / "fixtures" / "gateways"


@pytest.mark.parametrize("fixture, line, source", [
    ("gatekit/gatekit_audit.jsonl", 0, "gatekit"),
    ("docker/policy-audit.jsonl", 0, "docker-mcp-gateway"),
    ("mcp_http/exchange.jsonl", 0, "mcp-http"),
    ("pomerium/authorize.jsonl", 0, "pomerium"),
    ("mcpjungle/audit.log", 1, "mcpjungle"),
    ("mcpjungle/audit.log", 7, "mcpjungle"),          # (a zap console line)
    ("agentgateway/access.log", 1, "agentgateway"),
])
def test_a_one_line_log_without_a_final_newline_is_recognised(tmp_path, fixture, line, source):
    """A file smaller than the sample is read whole: its last line was not cut by the sample, so
    it counts, newline or not — a log of one record is its format's."""
    record = (GW / fixture).read_bytes().splitlines()[line]
    p = tmp_path / "one.log"
    p.write_bytes(record)
    registry._SNIFFED.clear()
    got, score = registry.sniff_file(p)
    assert got is not None and got.name == source and score >= MIN_CONFIDENCE, (got, score)
    p.write_bytes(record + b"\n")
    assert registry.sniff_file(p) == (got, score)  # as with its newline
    # the line again after a whole one, the last still being written (cut inside its JSON or its text):
    # the loader's pending row, not a line of another kind
    p.write_bytes(record + b"\n" + record[:len(record) // 2])
    assert registry.sniff_file(p)[0] is got


def test_a_full_sample_leaves_out_the_line_it_cuts_even_after_a_byte_order_mark(tmp_path):
    """A file longer than the sample: the sample may end inside a line, which is then no line of
    another format — also when a BOM, dropped before the sniffers judge, makes the sample 3 bytes
    shorter than a full one (which is what tells a sniffer it may be cut)."""
    rec = json.loads((GW / "gatekit" / "gatekit_audit.jsonl").read_bytes().splitlines()[0])
    rec["padding"] = "x" * 60_000
    line = json.dumps(rec).encode() + b"\n"
    body = line * (registry.SNIFF_BYTES // len(line)) + b"a long line of something else " * 20_000 + b"\n"
    assert len(body) > 2 * registry.SNIFF_BYTES
    for bom in (b"", b"\xef\xbb\xbf"):
        p = tmp_path / "big.jsonl"
        p.write_bytes(bom + body)
        registry._SNIFFED.clear()
        assert registry.sniff_file(p) == (registry.get("gatekit"), 0.95), bom
        assert registry.get("gatekit").sniff((bom + body)[:registry.SNIFF_BYTES]) == 0.95, bom
