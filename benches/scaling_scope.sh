#!/usr/bin/env bash
# Scaling benchmark for the scope-log inputs that used to cost the square of their size
# (issue 13, items 3 and 4): a Stop over n, 2n and 4n alternating transitions, and over
# a cwd n, 2n and 4n components deep (nothing of it existing, and below a work tree).
# Prints the table (median wall and CPU time, growth per doubling, peak RSS from
# /usr/bin/time -v on the release binary) and appends it to benches/results.md; exits 1
# when a doubling costs more than 2.3x the CPU or a peak RSS passes 64 MB + the input.
#   RUNS=N        timed runs per size (default 5)
#   WORK_DIR=DIR  where the inputs go (default target/bench/scaling)
#   HOME_DIR=DIR  where the agentihooks homes go (default /dev/shm/transcope-scaling-homes)
#   BASELINE=BIN  also run an earlier build once at each case's smallest size
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p transcope
exec python3 benches/scaling_scope.py "$@"
