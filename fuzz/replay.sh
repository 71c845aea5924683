#!/usr/bin/env bash
# CI replay of the fuzz targets: build them, then run each over its committed seed
# corpus (fuzz/seeds/<target>) once (-runs=0). With FUZZ_REPLAY_SECONDS=N each target
# instead fuzzes for N seconds starting from its seeds (new inputs go to a temp dir;
# the seeds are never modified). Any crash, panic or timeout fails the script.
#
# Needs a nightly toolchain and cargo-fuzz; without them it prints a notice and exits 0.
# Build output: $FUZZ_TARGET_DIR, else /work/target-fuzz when /work is writable, else
# fuzz/target (git-ignored). CARGO_TARGET_DIR is deliberately not inherited, so the
# sanitizer build never shares the stable build's directory.
set -euo pipefail
cd "$(dirname "$0")"

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "NOTICE: no nightly toolchain (cargo +nightly); fuzz replay skipped"
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "NOTICE: cargo-fuzz not installed (cargo install cargo-fuzz); fuzz replay skipped"
  exit 0
fi

if [[ -n ${FUZZ_TARGET_DIR:-} ]]; then
  export CARGO_TARGET_DIR=$FUZZ_TARGET_DIR
elif [[ -d /work && -w /work ]]; then
  export CARGO_TARGET_DIR=/work/target-fuzz
else
  export CARGO_TARGET_DIR=$PWD/target
fi
host=$(rustc +nightly -vV | sed -n 's/^host: //p')
targets=$(cargo +nightly fuzz list)

echo "== cargo fuzz build (target dir $CARGO_TARGET_DIR)"
nice -n 19 cargo +nightly fuzz build

secs=${FUZZ_REPLAY_SECONDS:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in $targets; do
  bin=$CARGO_TARGET_DIR/$host/release/$t
  if [[ $secs -gt 0 ]]; then
    echo "== $t: fuzzing ${secs}s from seeds/$t"
    mkdir -p "$tmp/$t"
    nice -n 19 "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$tmp/" "$tmp/$t" "seeds/$t" 2>"$tmp/$t.log" \
      || { tail -40 "$tmp/$t.log"; exit 1; }
  else
    echo "== $t: replaying $(ls "seeds/$t" | wc -l) seeds"
    nice -n 19 "$bin" -runs=0 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$tmp/" "seeds/$t" 2>"$tmp/$t.log" \
      || { tail -40 "$tmp/$t.log"; exit 1; }
  fi
  grep -E 'DONE|Done' "$tmp/$t.log" | tail -1
done
echo "== fuzz replay: all targets OK"
