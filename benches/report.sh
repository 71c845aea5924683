#!/usr/bin/env bash
# Issue 17's scale bench: the HTML report of an archive of at least 2,000 sessions —
# its size, how long `transcope report` takes to write it, and how long headless
# Chromium takes to draw it (crates/report/browser/bench.mjs; target: under 2 s, the
# file under 10 MB). Appends a table to benches/results.md.
#
# Usage: benches/report.sh [SIZE] (default 560MB of transcripts: about 2,100
# sessions, sub-agents included, with the generator's shape below).
#   CORPUS=DIR  reuse or create the corpus there (default target/bench/report-corpus-SIZE)
#   RUNS=N      page loads (default 9)
# Needs /usr/bin/chromium and `npm ci` in crates/report/browser (crates/report/browser/ci.sh
# does both).
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE="${1:-560MB}"
RUNS="${RUNS:-9}"
TARGET="${CARGO_TARGET_DIR:-target}"
BENCH="target/bench"
CORPUS="${CORPUS:-$BENCH/report-corpus-$SIZE}"
HOMEDIR="$BENCH/report-home-$SIZE"
OUT="$BENCH/report-$SIZE.html"

cargo build --release -q -p transcope -p transcope-corpus --bins
BIN="$TARGET/release/transcope"
GEN="$TARGET/release/transcope-corpus"
[ -d crates/report/browser/node_modules/playwright-core ] ||
  (cd crates/report/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)

mkdir -p "$BENCH"
if [ ! -f "$CORPUS/manifest.json" ]; then
  # Small tool outputs: many sessions per byte (the lanes are what is measured).
  "$GEN" --out "$CORPUS" --size "$SIZE" --max-tool-output 2KiB --repos 24 --seed 42
fi
if [ ! -f "$HOMEDIR/transcope/index.sqlite" ]; then
  mkdir -p "$HOMEDIR"
  "$BIN" --home "$HOMEDIR" backfill --json "$CORPUS/claude" "$CORPUS/codex" >/dev/null
fi

# `transcope report` itself (index already synced): median of 5.
write_times=()
for _ in 1 2 3 4 5; do
  s=$(date +%s%N)
  "$BIN" --home "$HOMEDIR" report --no-sync --json --html "$OUT" >"$BENCH/report-summary.json"
  e=$(date +%s%N)
  write_times+=("$(( (e - s) / 1000000 ))")
done
write_median=$(printf '%s\n' "${write_times[@]}" | sort -n | sed -n 3p)

result=$(node crates/report/browser/bench.mjs --html "$OUT" --runs "$RUNS")
echo "$result"
summary=$(cat "$BENCH/report-summary.json")

python3 - "$result" "$summary" "$write_median" "$SIZE" <<'EOF'
import json, os, platform, sys, time
r, s, write, size = json.loads(sys.argv[1]), json.loads(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
chromium = os.popen("chromium --version 2>/dev/null").read().strip()
load = os.getloadavg()
d, z, f = r["drawn_ms"], r["zoom_step_ms"], r["fit_toggle_ms"]
lines = [
    "",
    f"## report ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, corpus {size}, {platform.node()}, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})",
    "",
    f"{s['sessions']} sessions, {s['transitions']} transitions, {s['markers']} markers, "
    f"{s['usage_projects']} projects with usage; {r['nodes']} DOM elements; {chromium}, headless, 1280×720.",
    "",
    "| case | median | min | max |",
    "|---|---|---|---|",
    f"| page drawn (navigation → painted), {r['runs']} fresh loads | {d['median']} ms | {d['min']} ms | {d['max']} ms |",
    f"| one keyboard zoom step (+) | {z['median']} ms | {z['min']} ms | {z['max']} ms |",
    f"| 'each session fills the width' toggle | {f['median']} ms | {f['min']} ms | {f['max']} ms |",
    f"| `transcope report --no-sync` (release, median of 5) | {write:.0f} ms | | |",
    "",
    f"File: {r['bytes']:,} bytes ({r['bytes']/1048576:.2f} MiB).",
]
with open("benches/results.md", "a") as fh:
    fh.write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
