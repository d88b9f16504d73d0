"""What a workbook Replay costs per step on a long door session: bytes sent to the page, and
files hashed when a Replay runs again.

    .venv/bin/python bench/replay_bytes.py                # 10,000 calls (default)
    .venv/bin/python bench/replay_bytes.py --calls 2000

Builds a copy of the demo incident whose first door session repeats its five calls (one in five
refused) ``--calls`` times, opens it in the workbook's session view (no charts) and plays
``--steps`` Replay steps by hand, counting the bytes of every widget message (the JSON each
comm message carries, as the kernel would send it).  Also prints what listing the whole plan at
each step would send (the sum of every row's size), and how many files the second Replay hashed.
Nothing is timed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import comm

REPO = Path(__file__).resolve().parent.parent
SESSION = "door-20260913T100005-a1"
_sent: list[int] = []


class _Recorder(comm.DummyComm):
    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        _sent.append(len(json.dumps(data, default=str).encode()) + sum(len(b) for b in buffers or ()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args(argv)
    comm.create_comm = lambda *x, **k: _Recorder(*x, **k)

    import pandas as pd

    from replaybook import replay
    from replaybook.incident import Incident
    from replaybook.views import session as S
    from replaybook.views.widgets import Workbook

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "demo"
        shutil.copytree(REPO / "data" / "demo", d)
        log = d / "door" / "analyst" / f"{SESSION}.jsonl"
        base = [json.loads(x) for x in log.read_text().splitlines()]
        t0 = pd.Timestamp(base[0]["ts"])
        lines = []
        for i in range(a.calls):
            r = {k: v for k, v in base[i % len(base)].items() if k != "ts_end"}
            if r["decision"] == "allow" and not r["object"].endswith("/"):
                r["object_digest"] = replay.file_digest(d / "data" / r["object"], cache=False)
            ts = t0 + pd.Timedelta(milliseconds=250 * i)
            r.update(seq=i + 1, ts=ts.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
            lines.append(json.dumps(r))
        log.write_text("\n".join(lines) + "\n")

        hashed = []
        real = replay._sha256_of
        replay._sha256_of = lambda fh: hashed.append(fh.fileno()) or real(fh)
        replay.RECENT_NS = 0  # the copied files are seconds old
        v = Workbook(Incident.load(d), charts=False).open_session(SESSION)
        first = len(hashed)
        hashed.clear()
        v.replay_start(run=False)
        per = []
        for _ in range(min(a.steps, a.calls)):
            _sent.clear()
            v.replay_step()
            per.append(sum(_sent))
        whole = sum(len(json.dumps(S._step_li(s)).encode()) for s in v.plan.steps)
        per.sort()
        print(f"{a.calls:,} calls, {len(per)} steps: bytes sent per step median {per[len(per) // 2]:,}, "
              f"max {per[-1]:,}; the whole plan's rows: {whole:,} bytes")
        print(f"files hashed: {first} when the tab opened (the plan it shows), {len(hashed)} when Replay started")
    return 0


if __name__ == "__main__":
    sys.exit(main())
