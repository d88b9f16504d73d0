"""replaybook door benchmark: added latency (p50/p99) over the direct server, lost lines, memory.

    .venv/bin/python bench/door_bench.py                 # 10,000 calls (default)
    .venv/bin/python bench/door_bench.py --calls 2000    # quicker
    .venv/bin/python bench/door_bench.py --evidence      # also keep every response as evidence

One MCP SDK client (``ClientSession`` over stdio) makes N sequential ``tools/call`` requests to
the fixture server (``tests/fixtures/door_server/server.py``), first directly, then through
``python -m replaybook.door door`` (fsync'd log lines).  Reported: per-call latency p50/p99 of
both and their difference (what the door adds), the log's line count against the number of calls
(must be equal), and the door process's RSS sampled every 10% of the run (flat = no growth with
calls).  Writes ``bench/out/door.json`` too.  Linux only for the memory figures (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SERVER = REPO / "tests" / "fixtures" / "door_server" / "server.py"
OUT = HERE / "out"

RULES = """\
version: 1
rules:
  - id: deny-dotenv
    decision: deny
    paths: ["**/.env"]
  - id: allow-demo
    decision: allow
    tools: [list_folder, read_object, query]
    paths: ["demo", "demo/**"]
"""


def _child_rss_kb(marker: str) -> int | None:
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if int(fh.read().rsplit(")", 1)[1].split()[1]) != me:
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() not in fh.read():
                    continue
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return None


async def _run(cmd: list[str], n: int, marker: str | None) -> tuple[list[float], list[tuple[int, int | None]]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    times: list[float] = []
    rss: list[tuple[int, int | None]] = []
    step = max(1, n // 10)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await s.list_tools()
            for i in range(n):
                args = {"path": "demo/notes.txt"} if i % 2 else {"path": "demo/cars.csv", "limit": 2}
                name = "read_object" if i % 2 else "query"
                t = time.perf_counter()
                r = await s.call_tool(name, args)
                times.append(time.perf_counter() - t)
                if r.is_error:
                    raise RuntimeError(f"call {i} failed: {r.content}")
                if marker and (i % step == 0 or i == n - 1):
                    rss.append((i + 1, _child_rss_kb(marker)))
    return times, rss


def _pct(sorted_times: list[float], q: float) -> float:
    return sorted_times[min(len(sorted_times) - 1, int(len(sorted_times) * q))] * 1000.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--evidence", action="store_true", help="run the door with --evidence")
    args = ap.parse_args(argv)
    n = args.calls
    with tempfile.TemporaryDirectory(prefix="door-bench-") as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        (data / "demo").mkdir(parents=True)
        (data / "demo" / "cars.csv").write_text("name,mpg,cyl\nmazda,21,6\ndatsun,22.8,4\nhornet,21.4,6\n")
        (data / "demo" / "notes.txt").write_text("cars from 1974\n")
        rules = tmp / "rules.yaml"
        rules.write_text(RULES)
        server = [sys.executable, str(SERVER), str(data)]
        door = [sys.executable, "-m", "replaybook.door", "door", "--rules", str(rules), "--log-root",
                str(tmp / "logs"), "--agent", "bench", "--session", "bench"]
        if args.evidence:
            door += ["--evidence", str(tmp / "evidence")]
        door += ["--", *server]

        t0 = time.perf_counter()
        direct, _ = anyio.run(_run, server, n, None)
        t1 = time.perf_counter()
        via, rss = anyio.run(_run, door, n, "replaybook.door")
        t2 = time.perf_counter()
        log = tmp / "logs" / "bench" / "bench.jsonl"
        lines = sum(1 for _ in open(log, "rb"))
        from replaybook.sources.door import load_door

        loaded = load_door(log)

    direct.sort()
    via.sort()
    res = {
        "calls": n, "evidence": args.evidence,
        "direct_ms": {"p50": _pct(direct, 0.5), "p99": _pct(direct, 0.99)},
        "door_ms": {"p50": _pct(via, 0.5), "p99": _pct(via, 0.99)},
        "added_ms": {"p50": _pct(via, 0.5) - _pct(direct, 0.5), "p99": _pct(via, 0.99) - _pct(direct, 0.99)},
        "log_lines": lines, "lost_lines": n - lines, "quarantined": len(loaded.quarantine),
        "door_rss_kb": rss, "wall_s": {"direct": t1 - t0, "door": t2 - t1},
    }
    known = [kb for _, kb in rss if kb is not None]
    res["door_rss_growth_kb"] = (known[-1] - known[1]) if len(known) > 2 else None
    print(f"door bench: {n} calls, one client, fsync'd log{' + evidence' if args.evidence else ''}")
    print(f"  direct    p50 {res['direct_ms']['p50']:7.3f} ms   p99 {res['direct_ms']['p99']:7.3f} ms")
    print(f"  via door  p50 {res['door_ms']['p50']:7.3f} ms   p99 {res['door_ms']['p99']:7.3f} ms")
    print(f"  added     p50 {res['added_ms']['p50']:7.3f} ms   p99 {res['added_ms']['p99']:7.3f} ms")
    print(f"  log lines {lines} / {n} calls (lost {n - lines}, quarantined {len(loaded.quarantine)})")
    if known:
        print(f"  door RSS  {' '.join(f'{kb // 1024}M' for kb in known)}  (after 10%: growth "
              f"{res['door_rss_growth_kb']} kB)")
    OUT.mkdir(exist_ok=True)
    (OUT / "door.json").write_text(json.dumps(res, indent=1) + "\n")
    return 0 if lines == n and not len(loaded.quarantine) else 1


if __name__ == "__main__":
    sys.exit(main())
