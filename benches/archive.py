#!/usr/bin/env python3
"""The archive, side by side in one run (issue 36):

1. `backfill` of a generated archive (1 GB by default) with the archive on and with
   `--no-archive`, a fresh home each run, runs alternating; and the archive's
   compression ratio (original bytes / stored bytes, from `archive ls --json`);
2. `hook stop` after one more turn (the transcript's last four lines again, about 4
   KB) of a 100 MB transcript already kept, with the archive on and off
   (`TRANSCOPE_ARCHIVE=off`), each with its own home and copy, runs alternating.
   Target: the Stop with the archive on stays within 10 ms.

Usage: python3 benches/archive.py [SIZE]   (RUNS=5, STOPS=20; HOME_DIR for the homes,
/dev/shm by default). Results appended to benches/results-archive.md.
"""
import json, os, shutil, subprocess, sys, tempfile, time

from common import record, run_env, summary, timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BIN = os.path.join(TARGET, "release", "transcope")
GEN = os.path.join(TARGET, "release", "transcope-corpus")
SIZE = sys.argv[1] if len(sys.argv) > 1 else "1GB"
RUNS = int(os.environ.get("RUNS", "5"))
STOPS = int(os.environ.get("STOPS", "20"))
BENCH = os.environ.get("BENCH_DIR", os.path.join(ROOT, "target", "bench"))
CORPUS = os.environ.get("CORPUS", os.path.join(BENCH, f"corpus-{SIZE}"))
SINGLE = os.path.join(BENCH, "single-100MB.jsonl")
HOMES = os.path.join(os.environ.get("HOME_DIR", "/dev/shm"), "transcope-archive-bench")


def env(archive):
    return run_env(HOMES, **({} if archive else {"TRANSCOPE_ARCHIVE": "off"}))


def main():
    if not os.path.exists(BIN) or not os.path.exists(GEN):
        raise SystemExit("build first: cargo build --release -p transcope -p transcope-corpus")
    if not os.path.isdir(CORPUS):
        subprocess.run([GEN, "--out", CORPUS, "--size", SIZE, "--seed", "42"], check=True)
    if not os.path.exists(SINGLE):
        subprocess.run([GEN, "--single", SINGLE, "--size", "100MB", "--seed", "42"], check=True)
    shutil.rmtree(HOMES, ignore_errors=True)
    os.makedirs(HOMES)
    nbytes = sum(os.path.getsize(os.path.join(b, f)) for b, _, fs in os.walk(CORPUS) for f in fs
                 if f.endswith((".jsonl", ".json")) and "/repos/" not in b)

    # 1. backfill, archive on and off.
    ts = {True: [], False: []}
    ratio = None
    for i in range(RUNS):
        for on in (True, False):
            home = tempfile.mkdtemp(dir=HOMES)
            args = [BIN, "--home", home, "backfill", "--json", CORPUS] + ([] if on else ["--no-archive"])
            dt, out = timed(args, env=env(True))
            ts[on].append(dt)
            if on and ratio is None:
                _, ls = timed([BIN, "--home", home, "archive", "ls", "--json"], env=env(True))
                rows = [json.loads(l) for l in ls.decode().splitlines()]
                orig = sum(r["all_bytes"] for r in rows)
                stored = sum(r["stored_bytes"] for r in rows)
                ratio = (orig, stored, len(rows))
            shutil.rmtree(home, ignore_errors=True)
        print(f"  backfill run {i}: on {ts[True][-1]:.2f} s, off {ts[False][-1]:.2f} s", flush=True)

    # 2. A Stop after one more turn of a 100 MB transcript already kept.
    with open(SINGLE, "rb") as fh:
        fh.seek(-64 * 1024, os.SEEK_END)
        turn = b"\n".join(fh.read().split(b"\n")[-5:-1]) + b"\n"
    prep = {}
    for on in (True, False):
        home = tempfile.mkdtemp(dir=HOMES)
        copy = os.path.join(home, "transcript.jsonl")
        shutil.copyfile(SINGLE, copy)
        p = json.dumps({"session_id": "bench", "transcript_path": copy}).encode()
        first, _ = timed([BIN, "--home", home, "hook", "stop"], stdin=p, env=env(on))
        prep[on] = (home, copy, p, first)
    stops = {True: [], False: []}
    for _ in range(STOPS):
        for on in (True, False):
            home, copy, p, _ = prep[on]
            with open(copy, "ab") as fh:
                fh.write(turn)
            dt, _ = timed([BIN, "--home", home, "hook", "stop"], stdin=p, env=env(on))
            stops[on].append(dt)
    archived = json.loads(subprocess.run([BIN, "--home", prep[True][0], "archive", "ls", "--json"],
                                         capture_output=True, env=env(True)).stdout.decode().splitlines()[0])

    b_on, b_off, s_on, s_off = summary(ts[True]), summary(ts[False]), summary(stops[True]), summary(stops[False])
    stamp = time.strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()
    text = f"""
## {stamp} — {SIZE} archive ({nbytes / 1e6:.0f} MB of transcripts), load {load[0]:.2f}

Same run, backfill {RUNS} runs each and Stops {STOPS} each, alternating (median, min–max);
homes on tmpfs; release build.

| case | median | min–max | note |
| --- | --- | --- | --- |
| `backfill`, archive on | {b_on[0]:.2f} s | {b_on[1]:.2f}–{b_on[2]:.2f} s | {nbytes / b_on[0] / 1e6:.0f} MB/s |
| `backfill --no-archive` | {b_off[0]:.2f} s | {b_off[1]:.2f}–{b_off[2]:.2f} s | {nbytes / b_off[0] / 1e6:.0f} MB/s; on / off: {b_on[0] / b_off[0]:.2f} |
| archive of the {SIZE} | {ratio[1] / 1e6:.0f} MB stored | | {ratio[0] / 1e6:.0f} MB of {ratio[2]:,} transcripts: ratio {ratio[0] / ratio[1]:.2f} |
| `hook stop`, one more turn (100 MB), archive on | {s_on[0] * 1e3:.1f} ms | {s_on[1] * 1e3:.1f}–{s_on[2] * 1e3:.1f} ms | target ≤ 10 ms; on / off: {s_on[0] / s_off[0]:.2f} |
| `hook stop`, one more turn (100 MB), archive off | {s_off[0] * 1e3:.1f} ms | {s_off[1] * 1e3:.1f}–{s_off[2] * 1e3:.1f} ms | |
| `hook stop`, first (100 MB: the whole file kept) | {prep[True][3] * 1e3:.0f} ms on | | {prep[False][3] * 1e3:.0f} ms off; the 100 MB kept in {archived["stored_bytes"] / 1e6:.1f} MB |
"""
    record("results-archive.md", text)
    shutil.rmtree(HOMES, ignore_errors=True)


if __name__ == "__main__":
    main()
