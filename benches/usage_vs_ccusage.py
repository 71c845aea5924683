#!/usr/bin/env python3
"""Issue 15's bench: transcope's usage beside ccusage over one generated archive.

  CCUSAGE=path/to/ccusage python3 benches/usage_vs_ccusage.py [SIZE]   (default 1GB)

ccusage is npm `ccusage@20.0.24`; its native binary is
node_modules/@ccusage/ccusage-linux-x64/bin/ccusage. Times (median, min–max of RUNS):
backfill with usage on and off, `transcope usage` (sync + query) over the indexed
archive, `transcope statusline` for one of its sessions, ccusage `session`. Then the totals: input, output, cache-creation
and cache-read tokens per UTC day and per root session, Claude Code only (ccusage and
transcope read Codex differently; see the closing note), with every difference
listed. Appends its report to benches/results.md."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

SIZE = sys.argv[1] if len(sys.argv) > 1 else "1GB"
CORPUS = os.environ.get("CORPUS", os.path.join(bench.BENCH, f"corpus-{SIZE}"))
CCUSAGE = os.environ.get("CCUSAGE")
HOMES = os.environ.get("HOME_DIR", "/dev/shm/tc-usage-homes")
RUNS = bench.RUNS
BIN = bench.BIN


def timed(cmd, env, runs=RUNS, stdin=None):
    ts = [bench.timed(cmd, stdin=stdin, env=env)[0] for _ in range(runs)]
    return statistics.median(ts) * 1e3, min(ts) * 1e3, max(ts) * 1e3


def out(cmd, env):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout


def is_uuid(s):
    return len(s) == 36 and all(c in "0123456789abcdef-" for c in s) and s.count("-") == 4


def roots_of(projects):
    """The root session of each name ccusage may give a session (a file's stem, a
    folder's name) under `projects`: the first UUID folder on its path, else (a
    sub-agent file beside its parent's, the older layout) the sessionId its lines
    carry."""
    roots = {}
    for base, dirs, names in os.walk(projects):
        rel = os.path.relpath(base, projects).split(os.sep)[1:]
        up = next((p for p in rel if is_uuid(p)), None)
        for d in dirs:
            if up:
                roots.setdefault(d, up)
        for n in names:
            if not n.endswith(".jsonl") or is_uuid(n[:-6]):
                continue
            root = up
            if root is None:
                with open(os.path.join(base, n), encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        try:
                            sid = json.loads(line).get("sessionId")
                        except (ValueError, AttributeError):
                            continue
                        if isinstance(sid, str):
                            root = sid
                            break
            if root:
                roots.setdefault(n[:-6], root)
    return roots


def main():
    if not CCUSAGE:
        raise SystemExit("CCUSAGE=path to the ccusage binary (npm ccusage@20.0.24)")
    os.makedirs(HOMES, exist_ok=True)
    if not os.path.exists(os.path.join(CORPUS, "manifest.json")):
        subprocess.run([bench.GEN, "--out", CORPUS, "--size", SIZE, "--seed", "42"], check=True)
    claude, codex = os.path.join(CORPUS, "claude"), os.path.join(CORPUS, "codex")
    user = tempfile.mkdtemp(dir=HOMES)
    empty = os.path.join(user, "none")
    os.makedirs(empty)
    env = bench.env_for(claude, codex, user)
    srcs = [os.path.join(claude, "projects"), os.path.join(codex, "sessions")]
    rows = []

    # The backfill cases alternate run by run, so a change in the machine's load
    # falls on all of them alike.
    cases = [("backfill --no-markers --no-usage", ["--no-markers", "--no-usage"]),
             ("backfill --no-markers (usage on)", ["--no-markers"]),
             ("backfill (markers and usage, the default)", [])]
    times = {label: [] for label, _ in cases}
    for _ in range(RUNS):
        for label, extra in cases:
            h = tempfile.mkdtemp(dir=HOMES)
            times[label].append(bench.timed([BIN, "--home", h, "backfill", "--jobs", "2", "--json"] + extra + srcs,
                                            env=env)[0])
            shutil.rmtree(h, ignore_errors=True)
    for label, _ in cases:
        ts = times[label]
        rows.append((label, statistics.median(ts) * 1e3, min(ts) * 1e3, max(ts) * 1e3))
    home = tempfile.mkdtemp(dir=HOMES)
    subprocess.run([BIN, "--home", home, "backfill", "--jobs", "2"] + srcs, env=env, check=True, capture_output=True)
    rows.append(("usage --by root-session (sync + query, indexed)",
                 *timed([BIN, "--home", home, "usage", "--by", "root-session", "--json"], env)))
    # A time window reads every request (the sums kept in the index are not used):
    # what the first query after new requests costs.
    rows.append(("usage --by root-session --since 1970-01-01 (sync + every request read)",
                 *timed([BIN, "--home", home, "usage", "--by", "root-session", "--json", "--since", "1970-01-01"], env)))
    rows.append(("usage --by root-session --no-sync (query)",
                 *timed([BIN, "--home", home, "usage", "--by", "root-session", "--json", "--no-sync"], env)))
    # Claude Code's status line for one of the archive's sessions: its scope now, and
    # what its project and the session have cost (two sums over the indexed requests).
    first = json.loads(out([BIN, "--home", home, "usage", "--by", "root-session", "--json", "--no-sync"],
                           env).splitlines()[0])["root_session"]
    payload = json.dumps({"session_id": first}).encode()
    rows.append(("statusline (scope now, the project's and the session's cost)",
                 *timed([BIN, "--home", home, "statusline"], env, runs=max(RUNS, 15), stdin=payload)))
    rows.append(("ccusage session --json --offline (Claude + Codex)",
                 *timed([CCUSAGE, "session", "--json", "--offline"], env, runs=max(3, RUNS // 2))))
    # Totals, Claude Code only.
    cenv = bench.env_for(claude, empty, user)
    cc_days = {d["period"] if "period" in d else d["date"]: d
               for d in json.loads(out([CCUSAGE, "daily", "--json", "--offline", "-z", "UTC"], cenv))["daily"]}
    cc_sessions = {s["period"]: s for s in json.loads(out([CCUSAGE, "session", "--json", "--offline", "-z", "UTC"], cenv))["session"]}
    chome = tempfile.mkdtemp(dir=HOMES)
    subprocess.run([BIN, "--home", chome, "backfill", "--jobs", "2", "--no-markers", os.path.join(claude, "projects")],
                   env=cenv, check=True, capture_output=True)
    tc = lambda by: [json.loads(l) for l in out([BIN, "--home", chome, "usage", "--by", by, "--json", "--no-sync"], cenv).splitlines()]
    tc_days = {r["day"]: r for r in tc("day")}
    tc_sessions = {r["root_session"]: r for r in tc("root-session")}
    fields = [("inputTokens", "input_tokens"), ("outputTokens", "output_tokens"),
              ("cacheCreationTokens", "cache_creation_input_tokens"), ("cacheReadTokens", "cache_read_input_tokens")]

    def compare(a, b):
        diffs = []
        for k in sorted(set(a) | set(b)):
            x, y = a.get(k), b.get(k)
            if x is None or y is None:
                diffs.append((k, "only in " + ("transcope" if x is None else "ccusage")))
                continue
            d = [(f, x[f], y[g]) for f, g in fields if x[f] != y[g]]
            if d:
                diffs.append((k, d))
        return diffs

    # ccusage names a session by its file (a sub-agent's file, or its workflow folder,
    # is a session of its own); transcope's root session holds its sub-agents' usage.
    # ccusage's sessions summed by the root session each belongs to compare like with
    # like.
    roots = roots_of(os.path.join(claude, "projects"))
    cc_roots = {}
    for k, v in cc_sessions.items():
        r = cc_roots.setdefault(roots.get(k, k), {f: 0 for f, _ in fields})
        for f, _ in fields:
            r[f] += v[f]
    day_diffs = compare(cc_days, tc_days)
    session_diffs = compare(cc_roots, tc_sessions)
    load = os.getloadavg()
    files = bench.files_of(claude) + bench.files_of(codex)
    nbytes = sum(os.path.getsize(f) for f in files)
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M')} — usage vs ccusage 20.0.24, {SIZE} corpus ({len(files)} files, "
             f"{nbytes/1e6:.0f} MB), load {load[0]:.2f}, homes in {HOMES}", "",
             "| case | median ms | min–max ms |", "|---|---:|---:|"]
    for label, med, lo, hi in rows:
        lines.append(f"| {label} | {med:.1f} | {lo:.1f}–{hi:.1f} |")
    base = rows[0][1]
    lines += ["", f"usage on / off (--no-markers): {rows[1][1]/base:.3f}; default / --no-markers --no-usage: {rows[2][1]/base:.3f}",
              f"Claude totals: {len(cc_days)} UTC days in ccusage, {len(tc_days)} in transcope; "
              f"{len(day_diffs)} days differ. {len(cc_sessions)} ccusage sessions (one a file or workflow folder) in "
              f"{len(cc_roots)} root sessions, {len(tc_sessions)} transcope root sessions; "
              f"{len(session_diffs)} root sessions differ.", ""]
    for k, d in (day_diffs[:20] + session_diffs[:20]):
        lines.append(f"- {k}: {d}")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(bench.ROOT, "benches", "results.md"), "a") as fh:
        fh.write(text)
    for h in (home, chome, user):
        shutil.rmtree(h, ignore_errors=True)


if __name__ == "__main__":
    main()
