#!/usr/bin/env bash
# Run one fuzz target (default 600 s) at the lowest CPU priority, growing the
# git-ignored working corpus fuzz/corpus/<target> from the committed seeds.
#   fuzz/run.sh <target> [seconds] [extra libFuzzer flags...]
# Crashes land in fuzz/artifacts/<target>/. Needs nightly and cargo-fuzz.
# Build output: $FUZZ_TARGET_DIR (default /work/target-fuzz).
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: fuzz/run.sh <target> [seconds] [libFuzzer flags...]}
secs=${2:-600}
shift $(( $# >= 2 ? 2 : 1 ))
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-/work/target-fuzz}
case $target in
  timestamp) max_len=128 ;;
  adapters) max_len=16384 ;;
  scopelog_reader) max_len=8192 ;;
  *) max_len=4096 ;;
esac
nice -n 19 cargo +nightly fuzz build "$target" >/dev/null
host=$(rustc +nightly -vV | sed -n 's/^host: //p')
mkdir -p "corpus/$target" "artifacts/$target"
exec nice -n 19 "$CARGO_TARGET_DIR/$host/release/$target" \
  -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="artifacts/$target/" "$@" \
  "corpus/$target" "seeds/$target"
