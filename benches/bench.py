#!/usr/bin/env python3
"""The whole-CLI benchmark behind benches/bench.sh (see there)."""
import json, os, platform, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The binaries bench.sh just built: under CARGO_TARGET_DIR when it is set (a stale
# target/release would otherwise be measured), in BENCH_BUILD (the static build's
# x86_64-unknown-linux-gnu/release on x86-64 Linux).
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BUILD = os.path.join(TARGET, os.environ.get("BENCH_BUILD", "release"))
BIN = os.path.join(BUILD, "transcope")
GEN = os.path.join(BUILD, "transcope-corpus")
SIZE = sys.argv[1] if len(sys.argv) > 1 else "150MB"
RUNS = int(os.environ.get("RUNS", "7"))
# BENCH_DIR: where the generated inputs are (another work tree's, to reuse them).
BENCH = os.environ.get("BENCH_DIR", os.path.join(ROOT, "target", "bench"))
CORPUS = os.environ.get("CORPUS", os.path.join(BENCH, f"corpus-{SIZE}"))
HOMES = os.environ.get("HOME_DIR", os.path.join(BENCH, "homes"))
SINGLE = os.path.join(BENCH, "single-100MB.jsonl")
# The archive (issue 36) keeps every byte read; its cost has its own bench
# (benches/archive.py). Here it is off unless ARCHIVE=on, so these figures are the
# read, the stages and the index.
ARCHIVE = os.environ.get("ARCHIVE", "off")
os.environ["TRANSCOPE_ARCHIVE"] = "on" if ARCHIVE == "on" else "off"


def env_for(claude, codex, home):
    """The environment of a transcope (or ccusage) run reading the agents' folders
    `claude` and `codex`, with `home` as the user's home."""
    e = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TZ", "TRANSCOPE_ARCHIVE")}
    e.update({"HOME": home, "CLAUDE_CONFIG_DIR": claude, "CODEX_HOME": codex, "GEMINI_CLI_HOME": home,
              "NO_COLOR": "1"})
    return e


def files_of(d):
    out = []
    for base, _, names in os.walk(d):
        out += [os.path.join(base, n) for n in names if n.endswith(".jsonl")]
    return sorted(out)


def run(cmd, stdin=None, env=None):
    """Wall seconds of one run (see timed)."""
    return timed(cmd, stdin, env)[0]


def timed(cmd, stdin=None, env=None):
    """Wall seconds of one run, and the child's own resource use (wait4).

    The child is spawned directly (posix_spawn) and reaped with wait4: no
    /usr/bin/time or shell in between, so a 60 ms run is not charged a few ms of
    wrapper start-up. stdin comes from a file; output is discarded.
    """
    with tempfile.TemporaryFile() as inp, open(os.devnull, "wb") as null:
        if stdin is not None:
            inp.write(stdin)
            inp.flush()
            inp.seek(0)
        actions = [(os.POSIX_SPAWN_DUP2, inp.fileno(), 0),
                   (os.POSIX_SPAWN_DUP2, null.fileno(), 1),
                   (os.POSIX_SPAWN_DUP2, null.fileno(), 2)]
        exe = shutil.which(cmd[0]) or cmd[0]
        t = time.perf_counter()
        pid = os.posix_spawn(exe, cmd, os.environ if env is None else env, file_actions=actions)
        _, status, ru = os.wait4(pid, 0)
        dt = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(cmd)}")
    return dt, ru


def peak_rss_kb(cmd, stdin=None):
    """Peak RSS of one more (untimed) run, by /usr/bin/time: Linux keeps a process's
    high-water mark across exec, so the rusage of a child spawned from this Python
    process would report Python's own size."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, input=stdin, capture_output=True)
    return int(p.stderr.decode().strip().splitlines()[-1])


# BASELINE=path: a transcope binary of an earlier build, timed in the same run (its
# runs alternate with this build's), each transcope case reported for both with the
# ratio of the medians.
BASELINE = os.environ.get("BASELINE")
# CANDIDATE_FLAGS="--no-usage --no-index": backfill flags given to this build only (a
# baseline that predates them would refuse them), to time the same work as it does.
CANDIDATE_FLAGS = os.environ.get("CANDIDATE_FLAGS", "").split()


def row(label, ts, nbytes, rss):
    med = statistics.median(ts)
    return {"case": label, "median_ms": med * 1e3, "min_ms": min(ts) * 1e3, "max_ms": max(ts) * 1e3,
            "gbps": nbytes / med / 1e9 if nbytes else None, "rss_kb": rss}


def series(label, make_cmd, nbytes, runs=RUNS, stdin=None, fresh_home=False):
    ts = []
    for i in range(runs + 1):
        home = tempfile.mkdtemp(dir=HOMES) if fresh_home else None
        if i < runs:
            ts.append(run(make_cmd(home), stdin=stdin))
        else:
            rss = peak_rss_kb(make_cmd(home), stdin=stdin)
        if home:
            shutil.rmtree(home, ignore_errors=True)
    return row(label, ts, nbytes, rss)


def compared(label, make_cmd, nbytes, runs=RUNS, stdin=None, fresh_home=False, warm=None):
    """`make_cmd(bin, home)` for this build and, with BASELINE, the baseline, runs
    alternating; `warm(bin)` gives a prepared home per binary instead of a fresh one."""
    bins = [BIN] + ([BASELINE] if BASELINE else [])
    homes = {b: warm(b) for b in bins} if warm else {}
    ts = {b: [] for b in bins}
    rss = {}
    for i in range(runs + 1):
        for b in bins:
            home = tempfile.mkdtemp(dir=HOMES) if fresh_home else homes.get(b)
            if i < runs:
                ts[b].append(run(make_cmd(b, home), stdin=stdin))
            else:
                rss[b] = peak_rss_kb(make_cmd(b, home), stdin=stdin)
            if fresh_home:
                shutil.rmtree(home, ignore_errors=True)
    for h in homes.values():
        shutil.rmtree(h, ignore_errors=True)
    out = [row(label, ts[BIN], nbytes, rss[BIN])]
    if BASELINE:
        base = row(label + " [baseline]", ts[BASELINE], nbytes, rss[BASELINE])
        out[0]["vs_baseline"] = out[0]["median_ms"] / base["median_ms"]
        out.append(base)
    return out


def turns(n):
    """`n` new turns for the end of SINGLE: each the transcript's last four lines with
    fresh message, request and line ids (a new turn's requests are new to the index)
    and one more assistant line whose text carries a brain marker."""
    import re, uuid
    with open(SINGLE, "rb") as fh:
        fh.seek(-64 * 1024, os.SEEK_END)
        last = fh.read().decode().split("\n")[-5:-1]
    out = []
    for k in range(n):
        fresh = {}
        def swap(m):
            return fresh.setdefault(m.group(0), m.group(1) + uuid.uuid4().hex[:24] + '"')
        lines = [re.sub(r'("(?:msg|req)_)[A-Za-z0-9]+"', swap, l) for l in last]
        lines = [re.sub(r'("uuid":")[0-9a-f-]+"', lambda m: m.group(1) + str(uuid.uuid4()) + '"', l) for l in lines]
        said = json.loads(next(l for l in reversed(lines) if '"role":"assistant"' in l))
        said["uuid"] = str(uuid.uuid4())
        said["message"]["id"] = "msg_" + uuid.uuid4().hex[:24]
        said["message"]["content"] = [{"type": "text", "text":
            f"Done. <!-- @lesson topic=bench -->turn {k}: keep each Stop cheap<!-- @/lesson -->"}]
        lines.append(json.dumps(said, separators=(",", ":")))
        out.append(("\n".join(lines) + "\n").encode())
    return out


def one_turn(payload, runs=20, backlog=False):
    """`hook stop` after one new turn (``turns``: about 5 KB, new requests and a marker)
    is appended to a 100 MB transcript already read, with the brain writer on and no
    brain: the read, the turn's request and marker in the index, the marker to the
    outbox, the cursor saved. Each binary has its own copy of the transcript (in
    HOMES) and its own home, runs alternating, the same turns for both.

    The first Stop finds the generated transcript's 133 markers and, like every Stop,
    delivers at most five (`BRAIN_WRITER_MAX_MARKERS`), the oldest first. Unless
    `backlog`, `transcope deliver` then sends the rest to the outbox, so each timed
    Stop delivers its own turn's marker, the case a session in its stride has (checked:
    each adds one outbox file). With `backlog`, each timed Stop delivers five of the
    first read's markers instead (the case before session 24 timed)."""
    new = turns(runs + 1)
    bins = [BIN] + ([BASELINE] if BASELINE else [])
    prep = {}
    env = dict(os.environ, BRAIN_WRITER_ENABLED="1")
    for b in bins:
        home = tempfile.mkdtemp(dir=HOMES)
        copy = os.path.join(home, "transcript.jsonl")
        shutil.copyfile(SINGLE, copy)
        p = json.dumps({"session_id": "bench", "transcript_path": copy}).encode()
        run([b, "--home", home, "hook", "stop"], stdin=p, env=env)
        if not backlog:
            run([b, "--home", home, "deliver", "--no-sync"], env=env)
        prep[b] = (home, copy, p)
    outbox = lambda home: len(os.listdir(os.path.join(home, "brain-outbox")))
    ts = {b: [] for b in bins}
    for i in range(runs):
        for b in bins:
            home, copy, p = prep[b]
            with open(copy, "ab") as fh:
                fh.write(new[i])
            before = outbox(home)
            ts[b].append(run([b, "--home", home, "hook", "stop"], stdin=p, env=env))
            if not backlog and outbox(home) != before + 1:
                raise SystemExit(f"{b}: a Stop after one turn did not add its one marker to the outbox")
    rss = {}
    for b in bins:
        home, copy, p = prep[b]
        with open(copy, "ab") as fh:
            fh.write(new[runs])
        rss[b] = peak_rss_kb(["env", "BRAIN_WRITER_ENABLED=1", b, "--home", home, "hook", "stop"], stdin=p)
        if not os.path.isdir(os.path.join(home, "brain-outbox")) or not outbox(home):
            raise SystemExit(f"{b}: the turns' markers did not reach the outbox")
        shutil.rmtree(home, ignore_errors=True)
    label = ("hook stop, one new turn, five pending markers of the first read to the outbox (100 MB)"
             if backlog else "hook stop, one new turn, its marker to the outbox (100 MB)")
    out = [row(label, ts[BIN], None, rss[BIN])]
    if BASELINE:
        base = row(label + " [baseline]", ts[BASELINE], None, rss[BASELINE])
        out[0]["vs_baseline"] = out[0]["median_ms"] / base["median_ms"]
        out.append(base)
    return out


def warm(files):
    """Reads `files` once, so the runs timed find them in the page cache."""
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass


def interpreter(path):
    """Whether the ELF executable at `path` names a dynamic loader (an `INTERP`
    program header, as `.ci/static-smoke` checks): a static build does not."""
    headers = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True)
    return "INTERP" in headers.stdout


def main():
    if "linux-gnu" in BUILD and interpreter(BIN):
        raise SystemExit(f"{BIN} is dynamically linked: benches/bench.sh times the static build")
    os.makedirs(BENCH, exist_ok=True)
    os.makedirs(HOMES, exist_ok=True)
    if not os.path.exists(os.path.join(CORPUS, "manifest.json")):
        subprocess.run([GEN, "--out", CORPUS, "--size", SIZE, "--seed", "42"], check=True)
    if not os.path.exists(SINGLE):
        subprocess.run([GEN, "--single", SINGLE, "--size", "100MB", "--seed", "42"], check=True)
    files = files_of(os.path.join(CORPUS, "claude")) + files_of(os.path.join(CORPUS, "codex"))
    nbytes = sum(os.path.getsize(f) for f in files)
    srcs = [os.path.join(CORPUS, "claude"), os.path.join(CORPUS, "codex")]
    warm(files + [SINGLE])
    rows = [
        # Spawned directly like backfill (run() sends their output to /dev/null).
        series("cat", lambda h: ["cat"] + files, nbytes),
        series("wc -l", lambda h: ["wc", "-l"] + files, nbytes),
    ]
    extra = lambda b: CANDIDATE_FLAGS if b == BIN else []
    for jobs in (1, 2):
        rows += compared(f"backfill --jobs {jobs} --no-markers",
                         lambda b, h, j=jobs: [b, "--home", h, "backfill", "--jobs", str(j), "--no-markers", "--json"] + extra(b) + srcs,
                         nbytes, fresh_home=True)
    rows += compared("backfill --jobs 2 (markers to NDJSON)",
                     lambda b, h: [b, "--home", h, "backfill", "--jobs", "2", "--json", "--markers-out", os.path.join(h, "m.ndjson")] + srcs,
                     nbytes, fresh_home=True)
    rows += compared("backfill --jobs 2 (markers to the outbox, the default)",
                     lambda b, h: [b, "--home", h, "backfill", "--jobs", "2", "--json"] + srcs,
                     nbytes, fresh_home=True)
    # An existing transcript reader over the same files, when given: CCUSAGE=path to
    # the ccusage binary (npm ccusage with its native @ccusage/ccusage-linux-x64). It
    # reads Claude and Codex usage (every line parsed) and prints a daily report.
    ccusage = os.environ.get("CCUSAGE")
    if ccusage:
        empty = tempfile.mkdtemp(dir=HOMES)
        rows.append(series("ccusage daily --offline --json (existing reader)",
                           lambda h: ["env", f"HOME={empty}", f"CLAUDE_CONFIG_DIR={os.path.join(CORPUS, 'claude')}",
                                      f"CODEX_HOME={os.path.join(CORPUS, 'codex')}", ccusage, "daily", "--offline", "--json"],
                           nbytes))
        shutil.rmtree(empty, ignore_errors=True)
    single = os.path.getsize(SINGLE)
    payload = json.dumps({"session_id": "bench", "transcript_path": SINGLE}).encode()
    rows += compared("hook stop, first (100 MB)", lambda b, h: [b, "--home", h, "hook", "stop"],
                     single, stdin=payload, fresh_home=True)

    def warmed(b):
        home = tempfile.mkdtemp(dir=HOMES)
        run([b, "--home", home, "hook", "stop"], stdin=payload)
        return home

    rows += compared("hook stop, nothing new (100 MB)", lambda b, h: [b, "--home", h, "hook", "stop"],
                     None, runs=20, stdin=payload, warm=warmed)
    rows += one_turn(payload)
    rows += one_turn(payload, backlog=True)
    base = {r["case"]: r for r in rows}
    cat, wc = base["cat"]["median_ms"], base["wc -l"]["median_ms"]
    load = os.getloadavg()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M')} — {SIZE} corpus ({len(files)} files, {nbytes/1e6:.0f} MB), "
             f"{os.cpu_count()} CPUs ({cpu}), load {load[0]:.2f}, homes in {HOMES}, archive {os.environ['TRANSCOPE_ARCHIVE']}", "",
             "| case | median ms | min–max ms | GB/s | × cat time | × wc time | × baseline | peak RSS MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    if BASELINE:
        lines[0] += f"; baseline {BASELINE}"
    for r in rows:
        g = f"{r['gbps']:.2f}" if r["gbps"] else "–"
        vb = f"{r['vs_baseline']:.3f}" if "vs_baseline" in r else "–"
        # A hook's few milliseconds to the hundredth (a target is 3 ms), the rest to the tenth.
        ms = (lambda v: f"{v:.2f}") if r["median_ms"] < 10 else (lambda v: f"{v:.1f}")
        lines.append(f"| {r['case']} | {ms(r['median_ms'])} | {ms(r['min_ms'])}–{ms(r['max_ms'])} | {g} | "
                     f"{r['median_ms']/cat:.2f} | {r['median_ms']/wc:.2f} | {vb} | {r['rss_kb']/1024:.1f} |")
    j1 = base["backfill --jobs 1 --no-markers"]["median_ms"]
    j2 = base["backfill --jobs 2 --no-markers"]["median_ms"]
    lines += ["", f"2 threads vs 1: {j1/j2:.2f}×"]
    default = base["backfill --jobs 2 (markers to the outbox, the default)"]["median_ms"]
    lines += [f"the default backfill (2 threads) reads at {cat / default * 100:.0f} % of cat's rate", ""]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(ROOT, "benches", "results.md"), "a") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":
    main()
