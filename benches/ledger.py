#!/usr/bin/env python3
"""Issue 14's bench: the default backfill (markers into the ledger) beside
`--no-markers` and `cat` of the same files, in one run, with the homes on the disk
and on tmpfs; the fsync-family calls of one default backfill (strace -f -c); and the
Stop with nothing new and with one appended turn on a 100 MB transcript.

Usage: python3 benches/ledger.py [SIZE] (default 1GB); RUNS=N; DISK_HOMES=DIR (default
target/bench/homes), TMPFS_HOMES=DIR (default /dev/shm/tc-ledger-homes). Appends its
table to benches/results.md."""
import json, os, re, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the shared runner: timed runs, rows, corpus paths)

SIZE = sys.argv[1] if len(sys.argv) > 1 else "1GB"
CORPUS = os.environ.get("CORPUS", os.path.join(bench.BENCH, f"corpus-{SIZE}"))
DISK = os.environ.get("DISK_HOMES", os.path.join(bench.BENCH, "homes"))
TMPFS = os.environ.get("TMPFS_HOMES", "/dev/shm/tc-ledger-homes")
BIN = bench.BIN


def fsyncs(cmd):
    """fsync-family calls of one run (strace -f -c)."""
    out = subprocess.run(["strace", "-f", "-c", "-e", "trace=fsync,fdatasync,sync_file_range,msync"] + cmd,
                         capture_output=True, text=True)
    n = 0
    for line in out.stderr.splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
        if m and m.group(2) in ("fsync", "fdatasync", "sync_file_range", "msync"):
            n += int(m.group(1))
    return n


def main():
    runs = bench.RUNS
    if not os.path.exists(os.path.join(CORPUS, "manifest.json")):
        subprocess.run([bench.GEN, "--out", CORPUS, "--size", SIZE, "--seed", "42"], check=True)
    if not os.path.exists(bench.SINGLE):
        subprocess.run([bench.GEN, "--single", bench.SINGLE, "--size", "100MB", "--seed", "42"], check=True)
    files = bench.files_of(os.path.join(CORPUS, "claude")) + bench.files_of(os.path.join(CORPUS, "codex"))
    nbytes = sum(os.path.getsize(f) for f in files)
    srcs = [os.path.join(CORPUS, "claude"), os.path.join(CORPUS, "codex")]
    bench.warm(files + [bench.SINGLE])
    rows = [bench.series("cat", lambda h: ["cat"] + files, nbytes, runs=runs)]
    for where, homes in (("tmpfs", TMPFS), ("disk", DISK)):
        # The two alternate, run by run: a disk's state drifts as homes come and go.
        os.makedirs(homes, exist_ok=True)
        cases = [(f"backfill --jobs 2 --no-markers [{where}]", ["--no-markers"]),
                 (f"backfill --jobs 2, ledger (default) [{where}]", [])]
        ts = {label: [] for label, _ in cases}
        for _ in range(runs):
            for label, extra in cases:
                h = tempfile.mkdtemp(dir=homes)
                ts[label].append(bench.run([BIN, "--home", h, "backfill", "--jobs", "2", "--json"] + extra + srcs))
                shutil.rmtree(h, ignore_errors=True)
        rows += [bench.row(label, ts[label], nbytes, 0) for label, _ in cases]
    by = {r["case"]: r for r in rows}
    home = tempfile.mkdtemp(dir=DISK)
    n_fsync = fsyncs([BIN, "--home", home, "backfill", "--jobs", "2", "--json"] + srcs)
    shutil.rmtree(home, ignore_errors=True)
    # The Stop on the 100 MB transcript: nothing new, then one appended turn.
    work = tempfile.mkdtemp(dir=TMPFS)
    t = os.path.join(work, "t.jsonl")
    shutil.copy(bench.SINGLE, t)
    payload = json.dumps({"session_id": "bench", "transcript_path": t}).encode()
    h = os.path.join(work, "home")
    bench.run([BIN, "--home", h, "hook", "stop"], stdin=payload)
    nothing = [bench.run([BIN, "--home", h, "hook", "stop"], stdin=payload) for _ in range(max(runs, 20))]
    turn = []
    for i in range(max(runs, 20)):
        with open(t, "a") as fh:
            fh.write(json.dumps({"type": "assistant", "timestamp": f"2027-01-01T00:00:{i:02d}Z", "cwd": f"/w/t{i % 2}",
                                 "message": {"role": "assistant", "content": [
                                     {"type": "text", "text": f"<!-- @lesson -->turn {i}<!-- @/lesson -->"}]}}) + "\n")
        turn.append(bench.run([BIN, "--home", h, "hook", "stop"], stdin=payload))
    shutil.rmtree(work, ignore_errors=True)
    rows.append(bench.row("hook stop, nothing new (100 MB)", nothing, None, 0))
    rows.append(bench.row("hook stop, one appended turn with a marker (100 MB)", turn, None, 0))
    load = os.getloadavg()
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M')} — ledger bench, {SIZE} corpus ({len(files)} files, {nbytes/1e6:.0f} MB), "
             f"load {load[0]:.2f}", "",
             "| case | median ms | min–max ms | GB/s | × cat time |", "|---|---:|---:|---:|---:|"]
    cat = by["cat"]["median_ms"]
    for r in rows:
        g = f"{r['gbps']:.2f}" if r["gbps"] else "–"
        lines.append(f"| {r['case']} | {r['median_ms']:.1f} | {r['min_ms']:.1f}–{r['max_ms']:.1f} | {g} | {r['median_ms']/cat:.2f} |")
    lines.append("")
    for where in ("tmpfs", "disk"):
        nm = by[f"backfill --jobs 2 --no-markers [{where}]"]["median_ms"]
        led = by[f"backfill --jobs 2, ledger (default) [{where}]"]["median_ms"]
        lines.append(f"ledger rate / --no-markers rate [{where}]: {nm/led:.3f}")
    lines += [f"fsync-family calls, one default backfill (home on disk): {n_fsync}", ""]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(bench.ROOT, "benches", "results.md"), "a") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":
    main()
