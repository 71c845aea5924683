#!/usr/bin/env bash
# Whole-CLI benchmarks: backfill beside `cat` and `wc -l` over the same files, and the
# Stop hook on one large transcript. Prints a table and appends it to
# benches/results.md. Usage: benches/bench.sh [SIZE] (default 150MB).
#   CORPUS=DIR      reuse or create the corpus there (default target/bench/corpus-SIZE)
#   HOME_DIR=DIR    where the agentihooks homes go (default target/bench/homes;
#                   /dev/shm takes file-creation cost out of the figures)
#   RUNS=N          runs per case (default 7)
#   BASELINE=BIN    also time an earlier build's transcope binary, alternating runs
#                   with this build's, and give the ratio of the medians
#   CCUSAGE=BIN     also time an existing transcript reader, ccusage, over the same
#                   files (npm install ccusage @ccusage/ccusage-linux-x64; BIN is
#                   node_modules/@ccusage/ccusage-linux-x64/bin/ccusage)
#   BENCH_SCRIPT=F  run benches/F instead of bench.py with the same build and settings
#                   (stage_costs.py: what each stage and the index cost a read)
#   The binary timed is the one a hook should run: on x86-64 Linux the static build
#   (`cargo build-static`, .cargo/config.toml), elsewhere the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "$(uname -sm)" == "Linux x86_64" ]]; then
  cargo build-static -q -p transcope -p transcope-corpus
  export BENCH_BUILD=x86_64-unknown-linux-gnu/release
else
  cargo build --release -q -p transcope -p transcope-corpus
  export BENCH_BUILD=release
fi
exec python3 "benches/${BENCH_SCRIPT:-bench.py}" "$@"
