"""replaybook benchmark: load-steps, load-calls, CloudTrail, S3 access logs, join and the access
join — wall time, throughput, peak memory.

Stages: ``steps`` (Claude Code transcripts), ``calls`` (door log), ``cloudtrail`` (1 M records in
gzipped ``{"Records": [...]}`` delivery files under ``AWSLogs/<acct>/CloudTrail/<region>/YYYY/MM/DD/``;
MB/s over the decompressed JSON, vs read over the .gz bytes read), ``s3`` (1 M S3 server access log
lines), ``join``, ``join-results`` (the join of 1,000 door sessions running in the same ten minutes
whose transcripts lack a tenth of their tool calls' lines: results paired by tool and time),
``access`` (``join_access``: 200 k door calls × 1 M storage requests, in memory).

    .venv/bin/python bench/run.py                 # full sizes (generates ~1 GB into bench/out/ once)
    .venv/bin/python bench/run.py --quick         # small sizes, ~20 s smoke run
    .venv/bin/python bench/run.py --stages join --join-sizes 1000000x400000
    .venv/bin/python bench/run.py --stages join-results --result-sessions 300,1000
    .venv/bin/python bench/run.py --stages cloudtrail,s3
    .venv/bin/python bench/run.py --stages access --access-sizes 200000x1000000
    .venv/bin/python bench/run.py --profile lines # also write line-level hot spots per stage

Every measurement runs in a fresh subprocess (so one stage's memory never masks another's); the
parent watches it and stops it at ``--timeout`` seconds or ``--mem-limit-gb`` of RSS, and reports
where it was instead of crashing.  See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SRC = REPO / "src"
OUT = HERE / "out"
sys.path.insert(0, str(HERE))

TARGETS = {"steps": ("MB/s", 500.0), "calls": ("MB/s", 300.0), "cloudtrail": ("MB/s", 200.0),
           "s3": ("MB/s", 100.0), "join": ("s", 3.0), "incident": ("MB/s", None), "access": ("s", 10.0),
           "join-results": ("s", None)}
#: stages that read files (``incident``: what `replaybook report` does before its first section —
#: an incident.yaml naming the transcripts and the door log root, every file's list checked by
#: content, both frames loaded, the join — with no target of its own, for comparison)
LOAD_STAGES = ("steps", "calls", "cloudtrail", "s3", "incident")

SIZES = {
    "full": {"transcripts": (2000, 500_000_000), "door_lines": 1_500_000,
             "cloudtrail_records": 1_000_000, "s3_lines": 1_000_000,
             "join": [(5_000_000, 2_000_000), (1_000_000, 400_000)], "access": [(200_000, 1_000_000)],
             "join-results": [(1000,)]},
    "quick": {"transcripts": (40, 10_000_000), "door_lines": 30_000,
              "cloudtrail_records": 20_000, "s3_lines": 20_000,
              "join": [(50_000, 20_000)], "access": [(5_000, 25_000)], "join-results": [(300,)]},
}


# =========================================================================== child side

def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_hwm() -> bool:
    """Reset this process's VmHWM (peak RSS) so it measures one phase (Linux ≥ 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class LineSampler:
    """Wall-clock sampling profiler (SIGALRM / ITIMER_REAL, main thread).

    Every ``interval`` s of wall time the signal handler charges the time elapsed since the
    previous sample to (a) the innermost stack frame in ``src/`` (the replaybook line
    responsible, library calls below it included) and (b) the innermost Python function anywhere.
    A signal handler runs right after a long GIL-holding C call returns into the frame that made
    it, so such calls are charged to the right line (a sampling *thread* would charge them to the
    next GIL release point, e.g. a file read).
    """

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.src_lines: Counter = Counter()
        self.src_funcs: Counter = Counter()
        self.leaf_funcs: Counter = Counter()
        self.total = 0.0
        self._src = str(SRC)
        self._last = 0.0
        self._old = None

    def __enter__(self):
        self._last = time.perf_counter()
        self._old = signal.signal(signal.SIGALRM, self._handler)
        signal.setitimer(signal.ITIMER_REAL, self.interval, self.interval)
        return self

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, self._old or signal.SIG_DFL)

    def _handler(self, signum, frame) -> None:
        now = time.perf_counter()
        dt, self._last = now - self._last, now
        if frame is None:
            return
        self.total += dt
        leaf = frame
        self.leaf_funcs[_fname(leaf.f_code) + f":{leaf.f_code.co_name}"] += dt
        f = frame
        while f is not None and not f.f_code.co_filename.startswith(self._src):
            f = f.f_back
        if f is not None:
            rel = os.path.relpath(f.f_code.co_filename, self._src)
            # f_lineno is None while a frame is between lines (3.11, e.g. in a comprehension's setup)
            self.src_lines[(rel, f.f_lineno or 0, f.f_code.co_name, f.f_code.co_filename)] += dt
            self.src_funcs[f"{rel}:{f.f_code.co_name}"] += dt

    def report(self, top: int = 15) -> dict:
        import linecache

        def fmt(c: Counter) -> list:
            return [{"where": k, "s": round(v, 3), "share": round(v / self.total, 3) if self.total else 0}
                    for k, v in c.most_common(top)]
        lines = []
        for (rel, no, fn, path), v in self.src_lines.most_common(top):
            code = linecache.getline(path, no).strip()[:100]
            lines.append({"where": f"{rel}:{no} ({fn})", "code": code, "s": round(v, 3),
                          "share": round(v / self.total, 3) if self.total else 0})
        return {"sampled_s": round(self.total, 3), "src_lines": lines,
                "src_functions": fmt(self.src_funcs), "leaf_functions": fmt(self.leaf_funcs)}


def _fname(code) -> str:
    fn = code.co_filename
    for marker in ("site-packages/", "/src/", "/lib/python"):
        i = fn.find(marker)
        if i >= 0:
            return fn[i + len(marker):].lstrip("/")
    return os.path.basename(fn)


def _read_baseline(files: list[Path]) -> dict:
    """Time plain ``open(p, 'rb').read()`` over ``files`` (second pass: warm page cache)."""
    for p in files:                      # first pass warms the page cache
        with open(p, "rb") as fh:
            fh.read()
    t0 = time.perf_counter()
    n = 0
    for p in files:
        with open(p, "rb") as fh:
            n += len(fh.read())
    return {"read_s": time.perf_counter() - t0, "bytes": n}


def _src_stack(tb) -> list[str]:
    out = []
    for fr in traceback.extract_tb(tb):
        if fr.filename.startswith(str(SRC)):
            out.append(f"{os.path.relpath(fr.filename, SRC)}:{fr.lineno} {fr.name}: {(fr.line or '').strip()[:90]}")
    return out


def _progress(tb) -> str | None:
    """How far join_sessions' per-session report loop got when it was stopped, if it was in it."""
    while tb is not None:
        f = tb.tb_frame
        if f.f_code.co_name == "join_sessions" and "s_code" in f.f_locals and "s_names" in f.f_locals:
            try:
                return f"per-session loop at session {int(f.f_locals['s_code']) + 1:,} of {len(f.f_locals['s_names']):,}"
            except (TypeError, ValueError):
                return None
        tb = tb.tb_next
    return None


def child(spec: dict) -> None:
    """Run one measurement described by ``spec`` and write its result JSON to spec['result']."""
    res: dict = {"stage": spec["stage"], "status": "ok", "loadavg_start": os.getloadavg()}
    result_path = Path(spec["result"])

    def write():
        res["loadavg_end"] = os.getloadavg()
        res["ru_maxrss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        res["vm_hwm_stage_mb"] = (round(_status_kb("VmHWM") / 1024, 1) if res.get("hwm_reset") else None)
        result_path.write_text(json.dumps(res, indent=1, default=str))

    def phase(name: str) -> None:
        res["phase"] = name
        print(f"[child {spec['stage']}] {name}", file=sys.stderr, flush=True)

    if spec.get("as_limit_gb"):
        lim = int(spec["as_limit_gb"] * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    prof_kind = spec.get("profile")
    sampler = None
    t0 = time.perf_counter()
    try:
        phase("import")
        import pandas as pd  # noqa: F401

        if spec["stage"] in LOAD_STAGES:
            root = Path(spec["root"])
            if spec["stage"] == "steps":
                from replaybook.sources.claude_code import load_claude_code as load
                files = sorted(p for p in root.rglob("*.jsonl"))
            elif spec["stage"] == "calls":
                from replaybook.sources.door import load_door as load
                files = sorted(p for p in root.rglob("*.jsonl"))
            elif spec["stage"] == "incident":
                from replaybook import Incident

                roots = [Path(r) for r in spec["roots"]]
                files = sorted(p for r in roots for p in r.rglob("*.jsonl"))
                manifest = OUT / "incident.yaml"
                manifest.write_text(f"title: bench\ntranscripts: ['{roots[0]}/']\ndoor: ['{roots[1]}/']\n")

                def load(_root):
                    inc = Incident.load(manifest)
                    inc.check_inputs()
                    n = len(inc.steps) + len(inc.calls)
                    res["join_assigned"] = int(inc.join.sessions["transcript_id"].notna().sum())
                    return type("Out", (), {"frame": range(n), "quarantine": inc.quarantine})
            elif spec["stage"] == "cloudtrail":
                from replaybook.sources.cloudtrail import load_cloudtrail as load
                files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "manifest.json")
            else:
                from replaybook.sources.s3_access import load_s3_access as load
                files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "manifest.json")
                root = [root / p.name for p in files] if files else root   # the folder minus manifest.json
            phase("read-baseline")
            rb = _read_baseline(files)
            res.update(files=len(files), bytes=rb["bytes"], read_s=rb["read_s"],
                       read_mb_s=rb["bytes"] / 1e6 / rb["read_s"])
            if spec["stage"] == "cloudtrail":
                # throughput is over the JSON the loader parses (the files are gzipped); the read
                # baseline stays open().read() of the .gz files, plus one with gunzip for reference
                import gzip
                t_g = time.perf_counter()
                json_bytes = sum(len(gzip.decompress(p.read_bytes())) for p in files)
                res.update(gz_bytes=rb["bytes"], bytes=json_bytes, read_gunzip_s=time.perf_counter() - t_g)
            gc.collect()
            res["rss_before_mb"] = round(_status_kb("VmRSS") / 1024, 1)
            res["hwm_reset"] = _reset_hwm()
            phase("load")
            run = lambda: load(root)  # noqa: E731
        elif spec["stage"] == "access":
            from generate import ACCESS_PRINCIPALS, ACCESS_STORAGE_MAP, build_access_frames
            from replaybook.access_join import join_access

            n_calls, n_access = spec["size"]
            phase("build-frames")
            t0 = time.perf_counter()
            calls, access, info = build_access_frames(n_calls, n_access, seed=spec.get("seed", 6))
            res["build_s"] = time.perf_counter() - t0
            truth = info.pop("_truth")
            res["data"] = info
            if spec.get("validate"):
                from replaybook.frames import ACCESS, CALLS
                ACCESS.validate(access)
                CALLS.validate(calls)
            gc.collect()
            res["rss_before_mb"] = round(_status_kb("VmRSS") / 1024, 1)
            res["hwm_reset"] = _reset_hwm()
            phase("join")
            run = lambda: join_access(calls, access, storage_map=ACCESS_STORAGE_MAP,  # noqa: E731
                                      principals=ACCESS_PRINCIPALS)
        elif spec["stage"] == "join-results":
            from generate import build_result_join_frames
            from replaybook.join import join_sessions

            phase("build-frames")
            t0 = time.perf_counter()
            steps, calls, info = build_result_join_frames(spec["size"][0], seed=spec.get("seed", 0))
            res["build_s"] = time.perf_counter() - t0
            truth = info.pop("_truth", None)
            res["data"] = info
            gc.collect()
            res["rss_before_mb"] = round(_status_kb("VmRSS") / 1024, 1)
            res["hwm_reset"] = _reset_hwm()
            phase("join")
            run = lambda: join_sessions(steps, calls)  # noqa: E731
        else:
            from generate import build_join_frames
            from replaybook.join import join_sessions

            n_calls, n_steps = spec["size"]
            phase("build-frames")
            t0 = time.perf_counter()
            steps, calls, info = build_join_frames(n_calls, n_steps, seed=spec.get("seed", 3))
            res["build_s"] = time.perf_counter() - t0
            truth = info.pop("_truth", None)
            res["data"] = info
            if spec.get("validate"):
                from replaybook.frames import CALLS, STEPS
                STEPS.validate(steps)
                CALLS.validate(calls)
            gc.collect()
            res["rss_before_mb"] = round(_status_kb("VmRSS") / 1024, 1)
            res["hwm_reset"] = _reset_hwm()
            phase("join")
            run = lambda: join_sessions(steps, calls)  # noqa: E731

        if prof_kind == "lines" or (prof_kind is None and spec["stage"] in ("join", "join-results", "access")):
            # join measurement runs keep a coarse (50 ms) sampler on, so a run stopped at the
            # timeout still says where its time went; the overhead is negligible
            prof_kind = prof_kind or "coarse"
            sampler = LineSampler(0.005 if prof_kind == "lines" else 0.05)
            sampler.__enter__()
        elif prof_kind == "cprofile":
            import cProfile
            sampler = cProfile.Profile()
            sampler.enable()
        t0 = time.perf_counter()
        out = run()
        res["wall_s"] = time.perf_counter() - t0
        phase("done")
        if spec["stage"] in LOAD_STAGES:
            res["rows"] = len(out.frame)
            res["quarantined"] = len(out.quarantine)
            res["mb_s"] = res["bytes"] / 1e6 / res["wall_s"]
            res["rows_s"] = res["rows"] / res["wall_s"]
            res["vs_read"] = res["wall_s"] / res["read_s"]
        elif spec["stage"] == "access":
            res["rows_s"] = spec["size"][1] / res["wall_s"]
            res["links"], res["unexplained"], res["duplicates"] = len(out.links), len(out.unexplained), \
                len(out.duplicates)
            res["by_how"] = {k: int(v) for k, v in out.links["how"].value_counts().items()}
            res["offset_s"] = out.offset_s
            # the generator knows which call made each request: how many links name that call
            import numpy as np
            import pandas as pd
            key = pd.MultiIndex.from_arrays([calls["door_session"], calls["seq"]])
            got = key.get_indexer(pd.MultiIndex.from_arrays([out.links["door_session"], out.links["call_seq"]]))
            made = truth[out.links["access_index"].to_numpy(dtype=np.int64)]
            res["truth_correct"] = f"{int((got == made).sum())}/{len(got)} links name the call that made the request"
        else:
            n = sum(spec["size"]) if spec["stage"] == "join" else res["data"]["calls"] + res["data"]["steps"]
            res["rows_s"] = n / res["wall_s"]
            res["by_how"] = {k: int(v) for k, v in out.pairs["how"].value_counts().items()}
            st = out.sessions["status"].value_counts().to_dict()
            res["sessions_status"] = {k: int(v) for k, v in st.items()}
            res["pairs"] = len(out.pairs)
            # the residual frames are taken from the inputs on first use (JoinResult docs); time
            # that too, so the figure a reader compares with the target is not only the lazy part
            t1 = time.perf_counter()
            res["residual_rows"] = [len(out.unclaimed_calls), len(out.unmatched_steps)]
            res["residual_s"] = time.perf_counter() - t1
            if truth is not None:
                got = out.assignments()
                ok = sum(1 for s, t in truth.items() if got.get(s) == t)
                res["truth_correct"] = f"{ok}/{len(truth)}"
    except (KeyboardInterrupt, MemoryError, Exception) as exc:  # noqa: BLE001 — report, never crash
        tb = sys.exc_info()[2]
        res["status"] = ("timeout" if isinstance(exc, KeyboardInterrupt)
                         else "memory" if isinstance(exc, MemoryError) else "error")
        if res["status"] != "timeout":
            res["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        res["where"] = _src_stack(tb)
        res["progress"] = _progress(tb)
        if res.get("phase") in ("load", "join"):
            res["stopped_in_stage_after_s"] = round(time.perf_counter() - t0, 1)
    finally:
        if sampler is not None:
            if prof_kind in ("lines", "coarse"):
                sampler.__exit__(None, None, None)
                res["profile"] = sampler.report()
            else:
                import pstats
                import io
                sampler.disable()
                pf = Path(spec["result"]).with_suffix(".prof")
                sampler.dump_stats(pf)
                buf = io.StringIO()
                pstats.Stats(sampler, stream=buf).sort_stats("tottime").print_stats(25)
                res["profile"] = {"cprofile_file": str(pf), "top_tottime": buf.getvalue()[-6000:]}
        write()


# =========================================================================== parent side

def _fmt_mb(mb: float | None) -> str:
    if mb is None:
        return "-"
    return f"{mb / 1024:.2f} GB" if mb >= 1024 else f"{mb:.0f} MB"


def measure(spec: dict, timeout: float, mem_limit_gb: float, log) -> dict:
    """Run ``child(spec)`` in a fresh interpreter; stop it at ``timeout`` s or ``mem_limit_gb`` RSS."""
    import psutil

    OUT.mkdir(parents=True, exist_ok=True)
    tag = spec["stage"] + ("-" + "x".join(map(str, spec["size"])) if "size" in spec else "") + \
        ("-" + spec["profile"] if spec.get("profile") else "")
    spec = {**spec, "result": str(OUT / f"result-{tag}.json"), "as_limit_gb": mem_limit_gb + 4}
    Path(spec["result"]).unlink(missing_ok=True)
    errf = open(OUT / f"child-{tag}.log", "w")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE), os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
                         stderr=errf, stdout=errf, env=env, cwd=str(REPO))
    proc = psutil.Process(p.pid)
    peak = 0
    killed = None
    while p.poll() is None:
        try:
            rss = proc.memory_info().rss
        except psutil.Error:
            rss = 0
        peak = max(peak, rss)
        el = time.perf_counter() - t0
        if killed is None and (el > timeout or rss > mem_limit_gb * 2**30):
            killed = ("timeout" if el > timeout else "memory", el, rss)
            log(f"  stopping child: {killed[0]} after {el:.0f} s at RSS {rss / 2**30:.1f} GB")
            p.send_signal(signal.SIGINT)       # child reports where it was, then exits
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        time.sleep(0.2)
    errf.close()
    try:
        res = json.loads(Path(spec["result"]).read_text())
    except (OSError, ValueError):
        res = {"stage": spec["stage"], "status": "crashed",
               "error": f"child exited {p.returncode} without a result (see {errf.name})"}
    res["child_wall_s"] = round(time.perf_counter() - t0, 2)
    res.setdefault("stopped_after_s", res["child_wall_s"] if res.get("status") != "ok" else None)
    res["monitor_peak_rss_mb"] = round(peak / 2**20, 1)
    if killed:
        res["status"] = killed[0]
        res["stopped_after_s"] = round(killed[1], 1)
    if "size" in spec:
        res["size"] = spec["size"]
    if spec.get("profile"):
        res["profile_kind"] = spec["profile"]
    return res


def ensure_data(mode: str, stages: list[str], regen: bool, log) -> dict:
    from generate import gen_cloudtrail, gen_door, gen_s3_access, gen_transcripts, manifest_ok  # noqa: F401

    base = OUT / "data" / mode
    info = {}
    if regen and base.exists():
        import shutil
        shutil.rmtree(base)
    if "steps" in stages or "incident" in stages:
        n, b = SIZES[mode]["transcripts"]
        t0 = time.perf_counter()
        m = gen_transcripts(base / "transcripts", n, b)
        info["transcripts"] = {"root": str(base / "transcripts"), "files": m["files"], "bytes": m["bytes"],
                               "gen_s": round(time.perf_counter() - t0, 1)}
        log(f"transcripts: {m['files']} files, {m['bytes'] / 1e6:.0f} MB ({info['transcripts']['gen_s']} s)")
    if "calls" in stages or "incident" in stages:
        t0 = time.perf_counter()
        m = gen_door(base / "door", SIZES[mode]["door_lines"])
        info["door"] = {"root": str(base / "door"), "files": m["files"], "bytes": m["bytes"],
                        "sessions": m["sessions"], "lines": m["lines"], "gen_s": round(time.perf_counter() - t0, 1)}
        log(f"door log: {m['lines']} lines, {m['sessions']} sessions, {m['bytes'] / 1e6:.0f} MB "
            f"({info['door']['gen_s']} s)")
    if "cloudtrail" in stages:
        t0 = time.perf_counter()
        m = gen_cloudtrail(base / "cloudtrail", SIZES[mode]["cloudtrail_records"])
        info["cloudtrail"] = {"root": str(base / "cloudtrail"), "files": m["files"], "bytes": m["bytes"],
                              "records": m["records"], "json_bytes": m["json_bytes"],
                              "gen_s": round(time.perf_counter() - t0, 1)}
        log(f"cloudtrail: {m['records']} records in {m['files']} .json.gz, {m['json_bytes'] / 1e6:.0f} MB JSON "
            f"({m['bytes'] / 1e6:.0f} MB gz) ({info['cloudtrail']['gen_s']} s)")
    if "s3" in stages:
        t0 = time.perf_counter()
        m = gen_s3_access(base / "s3_access", SIZES[mode]["s3_lines"])
        info["s3"] = {"root": str(base / "s3_access"), "files": m["files"], "bytes": m["bytes"], "lines": m["lines"],
                      "gen_s": round(time.perf_counter() - t0, 1)}
        log(f"s3 access logs: {m['lines']} lines in {m['files']} files, {m['bytes'] / 1e6:.0f} MB "
            f"({info['s3']['gen_s']} s)")
    return info


def _size_label(r: dict) -> str:
    if r["stage"] == "access":
        c, a = r["size"]
        return f"{_n(c)} calls x {_n(a)} access rows"
    if r["stage"] == "join":
        c, s = r["size"]
        return f"{_n(c)} calls x {_n(s)} steps"
    if r["stage"] == "join-results":
        return f"{_n(r['size'][0])} sessions at once"
    if "bytes" not in r:
        return "-"
    if r["stage"] == "cloudtrail":
        return f"{r.get('files')} files, {_n(r.get('rows', 0))} rec, {r['bytes'] / 1e6:.0f} MB JSON"
    if r["stage"] == "s3":
        return f"{r.get('files')} files, {_n(r.get('rows', 0))} lines, {r['bytes'] / 1e6:.0f} MB"
    return f"{r.get('files')} files, {r['bytes'] / 1e6:.0f} MB"


def _n(x: int) -> str:
    return f"{x / 1e6:g}M" if x >= 1e6 else (f"{x / 1e3:g}k" if x >= 1e3 else str(x))


def table(results: list[dict]) -> str:
    hdr = ["stage", "size", "wall s", "throughput", "target", "vs read", "peak RSS", "(stage HWM)", "status"]
    rows = [hdr]
    for r in results:
        st = r["stage"]
        unit, tgt = TARGETS[st]
        ok = r["status"] == "ok"
        if st in LOAD_STAGES:
            thr = f"{r['mb_s']:.1f} MB/s, {r['rows_s'] / 1e3:.0f}k rows/s" if ok else "-"
            target = f">= {tgt:g} MB/s" if tgt is not None else "-"
            vs = f"{r['vs_read']:.0f}x ({r['read_mb_s']:.0f} MB/s)" if ok else "-"
            hit = ok and (tgt is None or r["mb_s"] >= tgt)
        else:
            thr = ((f"{r['rows_s'] / 1e6:.2f}M" if r["rows_s"] >= 1e5 else f"{r['rows_s'] / 1e3:.1f}k") + " rows/s"
                   if ok else "-")
            target = f"< {tgt:g} s" if tgt is not None else "-"
            vs = "n/a"
            hit = ok and (tgt is None or r["wall_s"] < tgt)
        wall = f"{r['wall_s']:.2f}" if ok else f">{r.get('stopped_after_s', r.get('child_wall_s', 0)):.0f}"
        peak = _fmt_mb(r.get("ru_maxrss_mb") if r.get("ru_maxrss_mb") else r.get("monitor_peak_rss_mb"))
        hwm = _fmt_mb(r.get("vm_hwm_stage_mb"))
        status = (("MEETS" if hit else "MISSES") + " target" if tgt is not None else "reference") if ok \
            else r["status"].upper()
        rows.append([st, _size_label(r), wall, thr, target, vs, peak, hwm, status])
    w = [max(len(str(x[i])) for x in rows) for i in range(len(hdr))]
    lines = ["  ".join(str(c).ljust(w[i]) for i, c in enumerate(row)) for row in rows]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines)


def _src_state() -> dict:
    """Which src/ was measured: HEAD plus a hash of each uncommitted file under src/ (others edit
    src/ concurrently, so figures are only comparable for the same state)."""
    import hashlib

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    dirty = {}
    for line in git("status", "--porcelain", "--untracked-files=all", "src").splitlines():
        path = line[3:]
        f = REPO / path
        if f.is_file() and f.suffix in (".py", ".json"):
            dirty[path] = hashlib.sha256(f.read_bytes()).hexdigest()[:12]
    return {"head": git("rev-parse", "--short", "HEAD"), "dirty": dirty}


_MACHINE_PROBE = r"""
import json, time
import numpy as np
loops = []
for _ in range(3):
    t = time.perf_counter()
    sum(range(10_000_000))
    loops.append(time.perf_counter() - t)
t = time.perf_counter()
a = np.ones(256 * 2**20, np.uint8)
touch = time.perf_counter() - t
print(json.dumps({"python_loop_ms": round(min(loops) * 1000), "first_touch_mb_s": round(256 / touch)}))
"""


def machine_reference() -> dict:
    """How fast this machine is right now, in a fresh interpreter: the best of three
    ``sum(range(10_000_000))`` (ms: pure-Python speed) and the rate of touching 256 MB of newly
    allocated memory (MB/s: page-fault cost, high on a freshly booted VM).  Both swing from day
    to day on a shared host; the figures of two runs are comparable only beside these."""
    import subprocess

    try:
        out = subprocess.run([sys.executable, "-c", _MACHINE_PROBE], capture_output=True, text=True, timeout=120,
                             check=True).stdout
        return {**json.loads(out), "loadavg": [round(x, 2) for x in os.getloadavg()]}
    except (subprocess.SubprocessError, ValueError, OSError) as exc:
        return {"error": str(exc)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (~20 s smoke run)")
    ap.add_argument("--stages", default="steps,calls,cloudtrail,s3,join,join-results,incident,access",
                    help="comma list of steps,calls,cloudtrail,s3,join,join-results,incident,access")
    ap.add_argument("--regen", action="store_true", help="regenerate the data even if it is current")
    ap.add_argument("--join-sizes", help="comma list of CALLSxSTEPS, e.g. 5000000x2000000,1000000x400000")
    ap.add_argument("--access-sizes", help="comma list of CALLSxACCESS_ROWS for the access join, e.g. 200000x1000000")
    ap.add_argument("--result-sessions", help="comma list of session counts for join-results, e.g. 300,1000")
    ap.add_argument("--join-all", action="store_true",
                    help="run every join size (default: stop at the first size that completes)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per measurement (default 900, quick 120)")
    ap.add_argument("--join-timeout", type=float, default=None,
                    help="seconds per join / access-join measurement (default 600, quick 120)")
    ap.add_argument("--mem-limit-gb", type=float, default=14.0, help="stop a child above this RSS (GB)")
    ap.add_argument("--profile", choices=["lines", "cprofile"],
                    help="profile each stage once more (lines: sampling, src line + leaf functions)")
    ap.add_argument("--clean", action="store_true", help="delete bench/out/ (generated data, results) and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.child:
        child(json.loads(a.child))
        return 0
    if a.clean:
        import shutil
        shutil.rmtree(OUT, ignore_errors=True)
        print(f"removed {OUT}")
        return 0

    mode = "quick" if a.quick else "full"
    stages = [s.strip() for s in a.stages.split(",") if s.strip()]
    bad = [s for s in stages if s not in TARGETS]
    if bad:
        ap.error(f"unknown stages {bad}")
    timeout = a.timeout or (120.0 if a.quick else 900.0)
    join_timeout = a.join_timeout or (120.0 if a.quick else 600.0)
    join_sizes = ([tuple(int(v) for v in s.lower().split("x")) for s in a.join_sizes.split(",")]
                  if a.join_sizes else SIZES[mode]["join"])
    access_sizes = ([tuple(int(v) for v in s.lower().split("x")) for s in a.access_sizes.split(",")]
                    if a.access_sizes else SIZES[mode]["access"])

    result_sizes = ([(int(v),) for v in a.result_sessions.split(",")] if a.result_sessions
                    else SIZES[mode]["join-results"])

    def log(msg: str) -> None:
        print(msg, flush=True)

    t_all = time.perf_counter()
    log(f"replaybook bench ({mode}); python {platform.python_version()}, {os.cpu_count()} cores; "
        f"data in {OUT / 'data' / mode}")
    src_start = _src_state()
    machine = machine_reference()
    if "error" not in machine:
        log(f"machine now: sum(range(10M)) {machine['python_loop_ms']} ms, first touch of new memory "
            f"{machine['first_touch_mb_s']:,} MB/s, load {machine['loadavg'][0]}")
    data = ensure_data(mode, stages, a.regen, log)
    results = []
    for st in stages:
        if st in LOAD_STAGES:
            extra = {"roots": [data["transcripts"]["root"], data["door"]["root"]]} if st == "incident" else {}
            root = data["transcripts"]["root"] if st == "incident" else \
                data[{"steps": "transcripts", "calls": "door"}.get(st, st)]["root"]
            log(f"measuring {st} ...")
            r = measure({"stage": st, "root": root, **extra}, timeout, a.mem_limit_gb, log)
            results.append(r)
            if a.profile:
                log(f"profiling {st} ({a.profile}) ...")
                results.append(measure({"stage": st, "root": root, "profile": a.profile, **extra}, timeout,
                                       a.mem_limit_gb, log))
        elif st == "access":
            for size in access_sizes:
                log(f"measuring access join {_n(size[0])} calls x {_n(size[1])} access rows ...")
                spec = {"stage": "access", "size": list(size), "validate": a.quick}
                r = measure(spec, join_timeout, a.mem_limit_gb, log)
                results.append(r)
                if a.profile and r["status"] == "ok":
                    log(f"profiling access join {_n(size[0])}x{_n(size[1])} ({a.profile}) ...")
                    results.append(measure({**spec, "profile": a.profile}, join_timeout, a.mem_limit_gb, log))
        elif st == "join-results":
            for size in result_sizes:
                log(f"measuring join of {_n(size[0])} sessions at once, results without their call lines ...")
                spec = {"stage": st, "size": list(size)}
                r = measure(spec, join_timeout, a.mem_limit_gb, log)
                results.append(r)
                if a.profile and r["status"] == "ok":
                    log(f"profiling join-results {_n(size[0])} ({a.profile}) ...")
                    results.append(measure({**spec, "profile": a.profile}, join_timeout, a.mem_limit_gb, log))
        else:
            for size in join_sizes:
                log(f"measuring join {_n(size[0])} calls x {_n(size[1])} steps ...")
                r = measure({"stage": "join", "size": list(size), "validate": a.quick}, join_timeout, a.mem_limit_gb, log)
                results.append(r)
                if r["status"] != "ok":
                    log(f"  join {r['status']} at {_n(size[0])}x{_n(size[1])}: phase {r.get('phase')}; "
                        f"{r.get('progress') or ''}; where: {(r.get('where') or ['?'])[-1]}")
                if a.profile and r["status"] == "ok":  # a stopped run already carries its coarse profile
                    log(f"profiling join {_n(size[0])}x{_n(size[1])} ({a.profile}) ...")
                    results.append(measure({"stage": "join", "size": list(size), "profile": a.profile},
                                           join_timeout, a.mem_limit_gb, log))
                if r["status"] == "ok" and not a.join_all:
                    break

    measured = [r for r in results if not r.get("profile_kind")]
    print()
    print(table(measured))
    print("wall = stage only (imports, file listing and frame building excluded); vs read = wall / time of "
          "open().read() over the same files, warm page cache (second pass); peak RSS = ru_maxrss of the fresh "
          "child process (includes interpreter, pandas and the input frames for join); stage HWM = VmHWM reset "
          "just before the stage.")
    for r in measured:
        if r["stage"] == "join" and r["status"] == "ok":
            print(f"join {_n(r['size'][0])}x{_n(r['size'][1])}: {r['data']['sessions']} door sessions, "
                  f"{r['data']['transcripts']} transcripts, {r['data']['keys']} distinct keys; frames built in "
                  f"{r['build_s']:.1f} s; sessions {r['sessions_status']}; correct {r.get('truth_correct')}; "
                  f"residual frames ({r['residual_rows'][0]:,} unclaimed calls, {r['residual_rows'][1]:,} "
                  f"unmatched steps) taken on first use in a further {r['residual_s']:.2f} s")
        elif r["stage"] == "join-results" and r["status"] == "ok":
            d = r["data"]
            print(f"join-results {_n(r['size'][0])}: {d['calls']:,} calls, {d['steps']:,} steps of which "
                  f"{d['results_without_call']:,} results without their call's line; frames built in "
                  f"{r['build_s']:.1f} s; pairs {r['by_how']}; sessions {r['sessions_status']}; "
                  f"correct {r.get('truth_correct')}")
        elif r["stage"] == "access" and r["status"] == "ok":
            d = r["data"]
            print(f"access {_n(r['size'][0])}x{_n(r['size'][1])}: {d['sessions']} door sessions, "
                  f"{d['objects']} objects, "
                  f"{d['cloudtrail_rows']:,} CloudTrail + {d['s3_access_rows']:,} S3 access rows; frames built in "
                  f"{r['build_s']:.1f} s; {r['links']:,} links {r['by_how']}, {r['unexplained']:,} unexplained, "
                  f"{r['duplicates']:,} duplicates, offset {r['offset_s']} s; {r['truth_correct']}")
        elif r["status"] != "ok":
            print(f"{r['stage']} {r.get('size', '')}: {r['status'].upper()} after {r.get('stopped_after_s')} s "
                  f"(phase {r.get('phase')}, {r.get('stopped_in_stage_after_s')} s into it; peak RSS "
                  f"{_fmt_mb(max(r.get('monitor_peak_rss_mb') or 0, r.get('ru_maxrss_mb') or 0))}) "
                  f"{r.get('error', '')}" + (f"\n  {r['progress']}" if r.get("progress") else "") +
                  "\n  stopped at: " + " <- ".join(reversed(r.get("where") or ["?"])))
    for r in results:
        if r.get("profile") and "src_lines" in r["profile"] and (r.get("profile_kind") or r["status"] != "ok"):
            print(f"\nhot spots: {r['stage']} {r.get('size', '')} (sampled {r['profile']['sampled_s']} s)")
            for h in r["profile"]["src_lines"][:6]:
                print(f"  {h['share'] * 100:5.1f}%  {h['where']}: {h['code']}")
    doc = {"mode": mode, "python": platform.python_version(), "cores": os.cpu_count(), "machine": machine,
           "src_at_start": src_start, "src_at_end": _src_state(),
           "targets": TARGETS, "data": data, "results": results,
           "total_s": round(time.perf_counter() - t_all, 1),
           "notes": "read baseline = second open().read() pass over the same files (warm page cache)"}
    (OUT / "results.json").write_text(json.dumps(doc, indent=1, default=str))
    print(f"\nwrote {OUT / 'results.json'} (total {doc['total_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
