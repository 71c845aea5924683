#!/usr/bin/env bash
# Whole-CLI scaling of the marker grammar on the inputs of issue 13 (items 1 and 2):
# `transcope markers` at sizes n, 2n, 4n (the issue's size) and on to 32n. Records the
# median wall and CPU time, the instructions (callgrind, when valgrind is installed),
# the ratio per doubling and the peak RSS (/usr/bin/time -v); prints the table, appends
# it to benches/results.md, and exits non-zero when the work (instructions, else CPU
# time) grows more than 2.3x a doubling or the peak RSS is over 64 MB + the input.
# Usage: benches/markers_scaling.sh
#   RUNS=N   timed runs per size (default 11)
#   IR=0     no callgrind runs
# The in-process figures are the criterion bench:
#   cargo bench -p transcope-benches --bench markers_scaling
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p transcope
exec python3 benches/markers_scaling.py "$@"
