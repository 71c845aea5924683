#!/usr/bin/env python3
"""What each stage and the index cost a read: the backfill of the generated archive
(`--jobs 2`) and of the one 100 MB transcript the first Stop reads (`--jobs 1`, the
read a first Stop makes, without the hook's identity and deadline), each with every
feature on (the default) and with markers, usage or the index turned off in turn,
beside `cat` over the same bytes. Runs alternate between the configurations, a fresh
home each, so a slow phase of the machine falls on all of them alike.

    BENCH_SCRIPT=stage_costs.py bash benches/bench.sh 1GB

takes the same CORPUS, BENCH_DIR, HOME_DIR and RUNS as bench.sh (benches/bench.py),
prints a table and appends it to benches/results-stage-costs.md. A target stated as a
share of `cat`'s rate (the default backfill at >= 50 %) or in GB/s (a first Stop at
>= 3 GB/s) can be read against what the same read costs with each part left out."""
import os, shutil, statistics, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (its constants read SIZE from sys.argv, as bench.sh passes it)
from common import record  # noqa: E402

# What is left out, by the backfill's own flags; the first row is the default.
CONFIGS = [
    ("every stage and the index (the default)", []),
    ("markers off", ["--no-markers"]),
    ("usage off", ["--no-usage"]),
    ("index off", ["--no-index"]),
    ("usage and index off", ["--no-usage", "--no-index"]),
    ("change detection alone", ["--no-markers", "--no-usage", "--no-index"]),
]


def costs(srcs, files, jobs):
    """Median, min and max seconds of `cat` over `files` and of a backfill of `srcs`
    in each configuration, RUNS rounds alternating."""
    ts = {name: [] for name, _ in CONFIGS}
    cat = []
    for _ in range(bench.RUNS):
        cat.append(bench.run(["cat"] + files))
        for name, flags in CONFIGS:
            home = tempfile.mkdtemp(dir=bench.HOMES)
            cmd = [bench.BIN, "--home", home, "backfill", "--jobs", str(jobs), "--json"] + flags + srcs
            ts[name].append(bench.run(cmd))
            shutil.rmtree(home, ignore_errors=True)
    return cat, ts


def main():
    os.makedirs(bench.HOMES, exist_ok=True)
    if not os.path.exists(os.path.join(bench.CORPUS, "manifest.json")):
        raise SystemExit(f"no corpus at {bench.CORPUS}: run benches/bench.sh {bench.SIZE} first")
    if not os.path.exists(bench.SINGLE):
        raise SystemExit(f"no {bench.SINGLE}: run benches/bench.sh first")
    srcs = [os.path.join(bench.CORPUS, "claude"), os.path.join(bench.CORPUS, "codex")]
    archive = bench.files_of(srcs[0]) + bench.files_of(srcs[1])
    inputs = [
        (f"the {bench.SIZE} archive, --jobs 2", srcs, archive, 2),
        ("one 100 MB transcript (a first Stop's read), --jobs 1", [bench.SINGLE], [bench.SINGLE], 1),
    ]
    load = os.getloadavg()
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M')} — what each stage and the index cost a read, "
             f"{os.cpu_count()} CPUs, load {load[0]:.2f}, homes in {bench.HOMES}, "
             f"archive {os.environ['TRANSCOPE_ARCHIVE']}, {bench.RUNS} rounds", ""]
    for label, src, files, jobs in inputs:
        nbytes = sum(os.path.getsize(f) for f in files)
        bench.warm(files)
        cat, ts = costs(src, files, jobs)
        cat_med = statistics.median(cat)
        default = statistics.median(ts[CONFIGS[0][0]])
        lines += [f"### {label}: {nbytes / 1e6:.0f} MB, `cat` {cat_med * 1e3:.1f} ms "
                  f"({min(cat) * 1e3:.1f}–{max(cat) * 1e3:.1f}, {nbytes / cat_med / 1e9:.2f} GB/s)", "",
                  "| configuration | median ms | min–max ms | GB/s | % of cat's rate | less than the default |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, _ in CONFIGS:
            med = statistics.median(ts[name])
            saved = "–" if name == CONFIGS[0][0] else f"{(default - med) * 1e3:.1f} ms"
            lines.append(f"| {name} | {med * 1e3:.1f} | {min(ts[name]) * 1e3:.1f}–{max(ts[name]) * 1e3:.1f} | "
                         f"{nbytes / med / 1e9:.2f} | {cat_med / med * 100:.0f} % | {saved} |")
        lines.append("")
    record("results-stage-costs.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
