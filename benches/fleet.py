#!/usr/bin/env python3
"""The fleet, side by side in one run (issue 35):

1. pushing one machine's index of a generated archive (1 GB by default) to a local
   PostgreSQL: wall time and rows a second, a fresh fleet each run (a machine's first,
   whole push), then a push with nothing new;
2. `usage --by project` over a fleet of ten such machines against the same query on
   one machine's SQLite index.

The ten machines: the first is the real push; the nine others are its rows copied in
SQL under nine machine ids, each session, marker and request given a key of its own
(the same projects: a team on the same repositories), so the fleet holds ten machines'
rows, as ten pushes would leave them, without generating and backfilling ten
gigabytes.

Usage: python3 benches/fleet.py [SIZE]   (RUNS=5; PG=conninfo of a server to use,
else .ci/pg start's; HOME_DIR for the home, /dev/shm by default: tmpfs, so the disk's
variance is not measured). Results: benches/results-fleet.md (appended).
"""
import json, os, shutil, subprocess, sys, time

from common import record, run_env, summary, timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BIN = os.path.join(TARGET, "release", "transcope")
GEN = os.path.join(TARGET, "release", "transcope-corpus")
SIZE = sys.argv[1] if len(sys.argv) > 1 else "1GB"
RUNS = int(os.environ.get("RUNS", "5"))
BENCH = os.environ.get("BENCH_DIR", os.path.join(ROOT, "target", "bench"))
CORPUS = os.environ.get("CORPUS", os.path.join(BENCH, f"corpus-{SIZE}"))
HOME = os.path.join(os.environ.get("HOME_DIR", "/dev/shm"), "transcope-fleet-bench")
MACHINES = 10


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def pg():
    url = os.environ.get("PG") or os.environ.get("TRANSCOPE_TEST_PG")
    if not url:
        url = sh([os.path.join(ROOT, ".ci", "pg"), "start"]).strip()
    return url


def db_url(admin, name):
    parts = [kv for kv in admin.split() if not kv.startswith("dbname=")]
    return " ".join(parts + [f"dbname={name}"])


def fresh_db(admin, name):
    sh(["psql", admin, "-XAtqc", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"])
    sh(["psql", admin, "-XAtqc", f"CREATE DATABASE {name}"])
    return db_url(admin, name)


def env():
    return run_env(HOME)


def main():
    if not os.path.exists(BIN) or not os.path.exists(GEN):
        raise SystemExit("build first: cargo build --release -p transcope -p transcope-corpus")
    if not os.path.isdir(CORPUS):
        print(f"generating {SIZE} into {CORPUS} …", flush=True)
        sh([GEN, "--out", CORPUS, "--size", SIZE, "--seed", "42"])
    shutil.rmtree(HOME, ignore_errors=True)
    os.makedirs(HOME)
    home = os.path.join(HOME, "agentihooks")
    t, _ = timed([BIN, "--home", home, "backfill", "--json", CORPUS], env())
    print(f"backfill of {SIZE}: {t:.1f} s", flush=True)
    admin = pg()

    pushes, rows_per_s, rows = [], [], 0
    for i in range(RUNS):
        url = fresh_db(admin, "bench_fleet")
        t, out = timed([BIN, "--home", home, "fleet", "push", "--to", url, "--machine", "m0", "--json"], env())
        v = json.loads(out)
        rows = v["sessions"] + v["transitions"] + v["markers"] + v["requests"]
        pushes.append(t)
        rows_per_s.append(rows / t)
        print(f"  push {i}: {t:.2f} s, {rows} rows ({v}), {rows / t:,.0f} rows/s", flush=True)
    again = []
    for i in range(RUNS):
        t, _ = timed([BIN, "--home", home, "fleet", "push", "--to", url, "--machine", "m0", "--json"], env())
        again.append(t)

    # Nine more machines: the first's rows under keys of their own.
    m0 = sh(["psql", url, "-XAtqc", "SELECT machine_id FROM machines"]).strip()
    clone = f"""
    INSERT INTO machines (machine_id, name, index_id, upto, last_push, pushes)
      SELECT 'm' || i, 'machine-' || i, 0, 0, now(), 1 FROM generate_series(1, {MACHINES - 1}) i;
    INSERT INTO sessions SELECT session || '~' || i, 'm' || i,
        CASE WHEN parent IS NULL THEN NULL ELSE parent || '~' || i END, agent, transcript,
        first_at, first_us, last_at, last_us
      FROM sessions, generate_series(1, {MACHINES - 1}) i WHERE machine = '{m0}';
    INSERT INTO transitions SELECT session || '~' || i, seq, 'm' || i, transition_id, at, at_us,
        project_id, project, repo, worktree, cwd, remote, branch, swarm, task, task_revision, lane, line
      FROM transitions, generate_series(1, {MACHINES - 1}) i WHERE machine = '{m0}';
    INSERT INTO markers (idempotency_key, machine, session, type, content, attrs, at, at_us,
        attribution, project_id, worktree, branch, task, body, origin, state, detail, found_us, changed_us)
      SELECT idempotency_key || '~' || i, 'm' || i, session || '~' || i, type, content, attrs, at, at_us,
        attribution, project_id, worktree, branch, task, body, origin, state, detail, found_us, changed_us
      FROM markers, generate_series(1, {MACHINES - 1}) i WHERE machine = '{m0}';
    INSERT INTO usage SELECT decode(md5(encode(message_key, 'hex') || i), 'hex'), 'm' || i,
        session || '~' || i, root_session || '~' || i, is_root, at_us, model, input_tokens, output_tokens,
        cache_creation_input_tokens, cache_creation_1h_input_tokens, cache_read_input_tokens,
        reasoning_output_tokens, project_id, worktree, branch, task, lane, place
      FROM usage, generate_series(1, {MACHINES - 1}) i WHERE machine = '{m0}';
    INSERT INTO usage_parts SELECT 'm' || i, session || '~' || i, root_session || '~' || i,
        project_id, worktree, branch, task, model, day, tier, input_tokens, output_tokens,
        cache_creation_input_tokens, cache_creation_1h_input_tokens, cache_read_input_tokens,
        reasoning_output_tokens, requests
      FROM usage_parts, generate_series(1, {MACHINES - 1}) i WHERE machine = '{m0}';
    VACUUM ANALYZE;
    """
    t0 = time.perf_counter()
    sh(["psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1"], input=clone)
    print(f"  nine more machines copied in {time.perf_counter() - t0:.1f} s", flush=True)
    requests = int(sh(["psql", url, "-XAtqc", "SELECT count(*) FROM usage"]))

    parts = int(sh(["psql", url, "-XAtqc", "SELECT count(*) FROM usage_parts"]))
    fleet_q, local_q = [], []
    first_fleet = None
    for i in range(RUNS + 1):
        t, out = timed([BIN, "--home", home, "usage", "--by", "project", "--json", "--fleet", url], env())
        if i:
            fleet_q.append(t)
        else:
            first_fleet = t
        t, _ = timed([BIN, "--home", home, "usage", "--by", "project", "--json", "--no-sync"], env())
        if i:
            local_q.append(t)
    groups = [json.loads(l) for l in out.splitlines()]
    # A time window reads every request in it (no parts): the whole span, for scale.
    windowed = []
    for i in range(RUNS):
        t, _ = timed([BIN, "--home", home, "usage", "--by", "project", "--json", "--since", "2000-01-01",
                      "--fleet", url], env())
        windowed.append(t)
    fleet_messages = sum(g["messages"] for g in groups)

    p, q, f, l, a = summary(pushes), summary(rows_per_s), summary(fleet_q), summary(local_q), summary(again)
    w = summary(windowed)
    stamp = time.strftime("%Y-%m-%d %H:%M")
    text = f"""
## {stamp} — {SIZE} archive, {rows:,} rows a machine, fleet of {MACHINES} ({requests:,} requests)

Same run, {RUNS} runs each (median, min–max); home on tmpfs, PostgreSQL 15 local (Unix socket).

| case | median | min–max | note |
| --- | --- | --- | --- |
| `fleet push`, first (whole index) | {p[0]:.2f} s | {p[1]:.2f}–{p[2]:.2f} s | {q[0]:,.0f} rows/s ({q[1]:,.0f}–{q[2]:,.0f}) |
| `fleet push`, nothing new | {a[0]*1e3:.0f} ms | {a[1]*1e3:.0f}–{a[2]*1e3:.0f} ms | |
| `usage --by project`, fleet of {MACHINES} (parts) | {f[0]*1e3:.0f} ms | {f[1]*1e3:.0f}–{f[2]*1e3:.0f} ms | first (cold) {first_fleet*1e3:.0f} ms; {fleet_messages:,} requests in {parts:,} parts |
| `usage --by project --since 2000-01-01`, fleet of {MACHINES} (every request) | {w[0]*1e3:.0f} ms | {w[1]*1e3:.0f}–{w[2]*1e3:.0f} ms | a window reads the requests, not the parts |
| `usage --by project`, one machine's SQLite | {l[0]*1e3:.0f} ms | {l[1]*1e3:.0f}–{l[2]*1e3:.0f} ms | ratio fleet / local: {f[0]/l[0]:.2f} |
"""
    record("results-fleet.md", text)


if __name__ == "__main__":
    main()
