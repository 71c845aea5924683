#!/usr/bin/env bash
# Regenerate crates/cli/hot-code.txt: the functions a hook's Stops run, which the link
# of the release binary places first (crates/cli/build.rs explains why). Run it after
# a change of toolchain, of dependencies, or of the code a Stop runs; a stale list
# costs only some of the gain, never correctness.
#
# It builds the binary a hook runs (the static build on x86-64 Linux, as
# benches/bench.sh times it, so that the C library's hot code is ordered too; the
# release build elsewhere) with its link map, runs it under callgrind (every
# instruction's address: valgrind) through a hook's Stops over a generated Claude
# transcript (the first Stop with the brain writer on, one more turn, nothing new with
# the writer off and on, a session start), and writes each executed function's symbol
# in link order (benches/hot_code.py). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ "$(uname -sm)" == "Linux x86_64" ]]; then
  build=(build-static) out=x86_64-unknown-linux-gnu/release
else
  build=(build --release) out=release
fi
TRANSCOPE_LINK_MAP="$work/transcope.map" cargo "${build[@]}" -q -p transcope -p transcope-corpus
target=${CARGO_TARGET_DIR:-target}
bin="$target/$out/transcope"
"$target/$out/transcope-corpus" --single "$work/full.jsonl" --size 3MB --seed 42 >/dev/null
# The first Stop reads all but the last five lines; the turn Stop, those five.
total=$(wc -l < "$work/full.jsonl")
head -n $((total - 5)) "$work/full.jsonl" > "$work/t.jsonl"
home="$work/home"
payload="{\"session_id\":\"hot\",\"transcript_path\":\"$work/t.jsonl\"}"
export TRANSCOPE_ARCHIVE=off
run() {
    local name=$1; shift
    echo "$payload" | valgrind --tool=callgrind --dump-instr=yes \
        --callgrind-out-file="$work/$name.out" "$@" >/dev/null 2>&1
}
BRAIN_WRITER_ENABLED=1 run first "$bin" --home "$home" hook stop
BRAIN_WRITER_ENABLED=1 "$bin" --home "$home" deliver --no-sync >/dev/null
tail -n 5 "$work/full.jsonl" >> "$work/t.jsonl"
BRAIN_WRITER_ENABLED=1 run turn "$bin" --home "$home" hook stop
run nothing "$bin" --home "$home" hook stop
BRAIN_WRITER_ENABLED=1 run nothing-writer "$bin" --home "$home" hook stop
run start "$bin" --home "$home" hook session-start
python3 benches/hot_code.py "$work/transcope.map" "$(realpath "$bin")" crates/cli/hot-code.txt "$work"/*.out
