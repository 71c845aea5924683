#!/usr/bin/env python3
"""Backfill throughput per agent, beside `cat` of the same files (issue 38).

For each agent of AGENTS, one generated archive of that agent alone (SIZE, 100 MB by
default, in tmpfs), written by `transcope-corpus` with the agent's flags. Each run,
agent after agent: `cat` of the archive's transcripts to /dev/null, then `transcope
backfill --json` from the agent's default folders (its home variable pointed into the
archive, HOME an empty folder), a fresh transcope home each time, the archive off
(`TRANSCOPE_ARCHIVE=off`: its cost has its own bench, archive.py). Reported per agent:
the median and spread (min–max) of each, backfill's MB/s, and its rate as a share of
cat's (cat time / backfill time). Both read the same bytes from the page cache.

Adding an agent is one line of AGENTS: its name, the generator's flags that make an
archive of it alone, and the variable and folder that make the archive its home.

Usage: python3 benches/agents.py [SIZE]   (RUNS=5; CORPUS_DIR for the archives,
/dev/shm/transcope-agents-bench by default, kept between runs; JOBS for backfill's
--jobs, default its own). Results appended to benches/results-agents.md.
"""
import json, os, shutil, subprocess, sys, tempfile, time

from common import record, run_env, summary, timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BIN = os.path.join(TARGET, "release", "transcope")
GEN = os.path.join(TARGET, "release", "transcope-corpus")
SIZE = sys.argv[1] if len(sys.argv) > 1 else "100MB"
RUNS = int(os.environ.get("RUNS", "5"))
JOBS = os.environ.get("JOBS")
CORPORA = os.environ.get("CORPUS_DIR", "/dev/shm/transcope-agents-bench")
SEED = "42"

# name, transcope-corpus flags for an archive of this agent alone, and the agent's home:
# the variable and the folder of the archive it names.
AGENTS = [
    ("claude", ["--codex-share", "0"], "CLAUDE_CONFIG_DIR", "claude"),
    ("codex", ["--codex-share", "1"], "CODEX_HOME", "codex"),
    ("gemini", ["--gemini-share", "1"], "GEMINI_CLI_HOME", "gemini"),
    ("qwen", ["--qwen-share", "1"], "QWEN_HOME", "qwen/.qwen"),
    ("copilot", ["--copilot-share", "1"], "COPILOT_HOME", "copilot/.copilot"),
    # A database beside a small Claude archive (not read: HOME is elsewhere).
    ("opencode", ["--codex-share", "0", "--opencode-share", "15"], "XDG_DATA_HOME", "opencode/.local/share"),
]


def transcripts(folder):
    """The transcript files (and databases) under `folder` (sorted), and their bytes."""
    files = sorted(os.path.join(b, f) for b, _, fs in os.walk(folder) for f in fs
                   if f.endswith((".jsonl", ".json", ".db")))
    return files, sum(os.path.getsize(f) for f in files)


def main():
    if not os.path.exists(BIN) or not os.path.exists(GEN):
        raise SystemExit("build first: cargo build --release -p transcope -p transcope-corpus")
    os.makedirs(CORPORA, exist_ok=True)
    homes = tempfile.mkdtemp(dir=CORPORA, prefix="homes-")
    user = os.path.join(homes, "user")
    os.makedirs(user)
    agents = []
    for name, flags, var, folder in AGENTS:
        corpus = os.path.join(CORPORA, f"{name}-{SIZE}")
        if not os.path.isdir(corpus):
            subprocess.run([GEN, "--out", corpus, "--size", SIZE, "--seed", SEED] + flags,
                           check=True, stdout=subprocess.DEVNULL)
        home = os.path.join(corpus, folder)
        files, nbytes = transcripts(home)
        if not files:
            raise SystemExit(f"{name}: no transcripts under {home}")
        agents.append((name, home, var, files, nbytes))

    cat = {a[0]: [] for a in agents}
    fill = {a[0]: [] for a in agents}
    read = {}
    for i in range(RUNS):
        for name, home, var, files, nbytes in agents:
            # To /dev/null (timed() would read the bytes through a pipe: not cat's cost).
            dt, _ = timed(["sh", "-c", 'cat "$@" > /dev/null', "cat"] + files, env=run_env(user))
            cat[name].append(dt)
            state = tempfile.mkdtemp(dir=homes)
            args = [BIN, "--home", state, "backfill", "--json"] + (["--jobs", JOBS] if JOBS else [])
            dt, out = timed(args, env=run_env(user, TRANSCOPE_ARCHIVE="off", **{var: home}))
            fill[name].append(dt)
            said = json.loads(out.decode().splitlines()[-1])
            if said.get("errors"):
                raise SystemExit(f"{name}: backfill reported errors: {said}")
            read[name] = said
            shutil.rmtree(state, ignore_errors=True)
        print(f"  run {i}: " + ", ".join(f"{n} {fill[n][-1]:.2f} s" for n, *_ in agents), flush=True)

    stamp = time.strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    rows = []
    for name, home, var, files, nbytes in agents:
        c, b = summary(cat[name]), summary(fill[name])
        said = read[name]
        rows.append(
            f"| {name} | {nbytes / 1e6:.0f} MB, {len(files):,} files ({said.get('files', '?'):,} read) | {said.get('transitions_written', '?')} "
            f"| {said.get('markers', '?')} | {said.get('usage_records', '?')} "
            f"| {b[0]:.3f} s | {b[1]:.3f}–{b[2]:.3f} s | **{nbytes / b[0] / 1e6:.0f} MB/s** "
            f"| {c[0] * 1e3:.1f} ms | {c[1] * 1e3:.1f}–{c[2] * 1e3:.1f} ms | {c[0] / b[0] * 100:.1f} % |")
    text = f"""
## {stamp} — one {SIZE} archive per agent, {RUNS} runs, at {rev}, load {load[0]:.2f}

`transcope backfill --json{' --jobs ' + JOBS if JOBS else ''}` from each agent's default folders (its
home variable pointed into the archive), a fresh home each run, `TRANSCOPE_ARCHIVE=off`;
`cat` of the same transcripts to /dev/null before it, each run; archives and homes on
tmpfs; release build; {os.cpu_count()} cores. Transitions, markers and usage records
are backfill's own counts (`--json`) of the last run.

| agent | transcripts | transitions | markers | usage records | backfill median | min–max | rate | cat median | min–max | % of cat |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
""" + "\n".join(rows) + "\n"
    record("results-agents.md", text)
    shutil.rmtree(homes, ignore_errors=True)


if __name__ == "__main__":
    main()
