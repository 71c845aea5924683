#!/usr/bin/env bash
# Regenerate crates/cli/hot-code.txt (the release build's) and, on x86-64 Linux,
# crates/cli/hot-code-static.txt (the static build's, `cargo build-static`): the
# functions a hook's Stops run, which the link of each binary places first
# (crates/cli/build.rs explains why; the two builds' symbols differ in their hashes,
# and the static one holds the C library's code too). Run it after a change of
# toolchain, of dependencies, or of the code a Stop runs; a stale list costs only
# some of the gain, never correctness.
#
# For each build it links the binary with its link map, runs it under callgrind
# (every instruction's address: valgrind) through a hook's Stops over a generated
# Claude transcript (the first Stop with the brain writer on, one more turn, nothing
# new with the writer off and on, a session start), and writes each executed
# function's symbol in link order (benches/hot_code.py). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target=${CARGO_TARGET_DIR:-target}
export TRANSCOPE_ARCHIVE=off

# hot_list NAME OUT CARGO-ARGS...: the list of the build `cargo CARGO-ARGS` makes in
# $target/OUT, written to crates/cli/NAME.
hot_list() {
    local name=$1 out=$2; shift 2
    local dir="$work/$name"
    mkdir -p "$dir"
    TRANSCOPE_LINK_MAP="$dir/transcope.map" cargo "$@" -q -p transcope -p transcope-corpus
    local bin="$target/$out/transcope"
    "$target/$out/transcope-corpus" --single "$dir/full.jsonl" --size 3MB --seed 42 >/dev/null
    # The first Stop reads all but the last five lines; the turn Stop, those five.
    local total
    total=$(wc -l < "$dir/full.jsonl")
    head -n $((total - 5)) "$dir/full.jsonl" > "$dir/t.jsonl"
    local home="$dir/home"
    local payload="{\"session_id\":\"hot\",\"transcript_path\":\"$dir/t.jsonl\"}"
    run() {
        local run_name=$1; shift
        echo "$payload" | valgrind --tool=callgrind --dump-instr=yes \
            --callgrind-out-file="$dir/$run_name.out" "$@" >/dev/null 2>&1
    }
    BRAIN_WRITER_ENABLED=1 run first "$bin" --home "$home" hook stop
    BRAIN_WRITER_ENABLED=1 "$bin" --home "$home" deliver --no-sync >/dev/null
    tail -n 5 "$dir/full.jsonl" >> "$dir/t.jsonl"
    BRAIN_WRITER_ENABLED=1 run turn "$bin" --home "$home" hook stop
    run nothing "$bin" --home "$home" hook stop
    BRAIN_WRITER_ENABLED=1 run nothing-writer "$bin" --home "$home" hook stop
    run start "$bin" --home "$home" hook session-start
    python3 benches/hot_code.py "$dir/transcope.map" "$(realpath "$bin")" "crates/cli/$name" "$dir"/*.out
}

hot_list hot-code.txt release build --release
if [[ "$(uname -sm)" == "Linux x86_64" ]]; then
    hot_list hot-code-static.txt x86_64-unknown-linux-gnu/release build-static
fi
