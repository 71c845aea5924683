#!/usr/bin/env python3
"""Instructions, not time: the usage-on / usage-off backfill counted by valgrind.

  python3 benches/instructions.py [SIZE]        (default 200MB)
  BASELINE=path/to/transcope python3 benches/instructions.py   (also count an earlier build)

Wall-clock ratios on a shared 2-core machine move by 5-10 % between identical runs
(the usage on / off ratio of one build read 1.46-1.62 within an hour), more than most
single changes are worth. Valgrind's cachegrind counts the instructions a run
executes, the same on every run: a change's effect on the CPU work of
`backfill --jobs 1 --no-markers` (usage on) and `--no-markers --no-usage` (off) is
read exactly, function by function. It is no clock: it sees neither cache misses nor
system calls (reading files, SQLite's writes to disk), and valgrind's CPU has no SHA
extensions, so sha2 runs its portable code (~10x the instructions of the SHA-NI path
a real run takes): totals are given with and without sha2's functions.

Needs valgrind (apt-get install valgrind) and a build with symbols:
`cargo build --profile profiling -p transcope` (BIN= to name another binary). Prints
the totals, the ratios and the functions whose count moved most, and appends the
totals to benches/results.md."""
import collections, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

SIZE = sys.argv[1] if len(sys.argv) > 1 else "200MB"
CORPUS = os.environ.get("CORPUS", os.path.join(bench.BENCH, f"corpus-{SIZE}"))
BIN = os.environ.get("BIN", os.path.join(bench.TARGET, "profiling", "transcope"))
BASELINE = os.environ.get("BASELINE")
CASES = [("off", ["--no-markers", "--no-usage"]), ("on", ["--no-markers"])]


def counted(binary, flags, work):
    """Instructions of one backfill of CORPUS by `binary` into a fresh home, by function."""
    home = tempfile.mkdtemp(dir=work)
    out = os.path.join(work, "cg.out")
    env = bench.env_for(os.path.join(CORPUS, "claude"), os.path.join(CORPUS, "codex"), home)
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}", binary,
           "--home", home, "backfill", "--jobs", "1", "--json", *flags,
           os.path.join(CORPUS, "claude", "projects"), os.path.join(CORPUS, "codex", "sessions")]
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    fns, fn = collections.Counter(), None
    with open(out) as fh:
        for line in fh:
            if line.startswith("fn="):
                fn = line[3:].strip()
            elif fn and line[:1].isdigit():
                parts = line.split()
                if len(parts) >= 2:
                    fns[fn] += int(parts[1])
    shutil.rmtree(home, ignore_errors=True)
    return fns


def totals(fns):
    """All instructions, and those outside sha2 (see the module docs)."""
    every = sum(fns.values())
    return every, every - sum(v for k, v in fns.items() if "sha2::" in k)


def moved(a, b, n=15):
    d = collections.Counter({k: b[k] - a[k] for k in set(a) | set(b)})
    return d.most_common(n) + sorted(d.items(), key=lambda kv: kv[1])[:5]


def main():
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed: apt-get install valgrind")
    if not os.path.exists(BIN):
        raise SystemExit(f"{BIN} is missing: cargo build --profile profiling -p transcope")
    if not os.path.exists(os.path.join(CORPUS, "manifest.json")):
        subprocess.run([bench.GEN, "--out", CORPUS, "--size", SIZE, "--seed", "42"], check=True)
    os.makedirs(bench.BENCH, exist_ok=True)
    work = tempfile.mkdtemp(dir=bench.BENCH)
    runs = {}
    builds = [("this build", BIN)] + ([("baseline", BASELINE)] if BASELINE else [])
    for label, binary in builds:
        for case, flags in CASES:
            runs[(label, case)] = counted(binary, flags, work)
    shutil.rmtree(work, ignore_errors=True)
    stamp = time.strftime("%Y-%m-%d %H:%M")
    lines = [f"## {stamp} — instructions (cachegrind), backfill --jobs 1 of the {SIZE} corpus", "",
             "| build | usage off | usage on | on / off | without sha2: off | on | on / off |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, _ in builds:
        (off, off_ns), (on, on_ns) = totals(runs[(label, "off")]), totals(runs[(label, "on")])
        lines.append(f"| {label} | {off / 1e6:,.1f} M | {on / 1e6:,.1f} M | {on / off:.3f} "
                     f"| {off_ns / 1e6:,.1f} M | {on_ns / 1e6:,.1f} M | {on_ns / off_ns:.3f} |")
    if BASELINE:
        (b_on, b_on_ns), (c_on, c_on_ns) = totals(runs[("baseline", "on")]), totals(runs[("this build", "on")])
        lines.append("")
        lines.append(f"usage on, this build / baseline: {c_on / b_on:.4f} ({c_on_ns / b_on_ns:.4f} without sha2)")
    report = "\n".join(lines) + "\n"
    print(report)
    print("functions that moved most, usage on − off (this build), M instructions:")
    for k, v in moved(runs[("this build", "off")], runs[("this build", "on")]):
        print(f"  {v / 1e6:9.1f}  {k[:120]}")
    if BASELINE:
        print("functions that moved most, usage on, this build − baseline:")
        for k, v in moved(runs[("baseline", "on")], runs[("this build", "on")]):
            print(f"  {v / 1e6:9.1f}  {k[:120]}")
    with open(os.path.join(bench.ROOT, "benches", "results.md"), "a") as fh:
        fh.write("\n" + report)


if __name__ == "__main__":
    main()
