"""Generate the capsule demo incident in data/capsule-demo/ (deterministic; the output is committed).

The story (seed 003): at 16:42 a service catalogue reported ``regulated_data=false`` for
ledger-api and the agent moved it to the fast-track deployment rule; an operator restored the
tag overnight; a live rerun at 09:18 left the rule alone.  See replaybook.capsule.demo for the
files written, and data/capsule-demo/README.md for the commands to try.

Usage:  python scripts/make_capsule_demo.py [OUT_DIR]        (default: data/capsule-demo)
Needs git.
"""

from __future__ import annotations

import sys
from pathlib import Path

from replaybook.capsule.demo import make_demo
from replaybook.capsule.diff import diff_runs
from replaybook.capsule.runs import load_run
from replaybook.capsule.verify import verify_capsule


def main(out: Path) -> int:
    paths = make_demo(out)
    rep = verify_capsule(paths.capsule)
    runs = {k: load_run(p) for k, p in paths.runs.items()}
    print(f"capsule {paths.capsule}: {rep.completeness}")
    for name in ("forensic", "live"):
        d = diff_runs(runs["incident"], runs[name])
        where = f" ({d.divergence['first_checkpoint']}, {d.classification})" if d.divergence else ""
        print(f"incident vs {name}: {d.verdict_text}{where}")
    return 0


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else root / "data" / "capsule-demo"))
