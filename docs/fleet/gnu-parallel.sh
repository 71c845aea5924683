#!/usr/bin/env bash
# transcope backfill in shards on one large host, with GNU parallel
# (docs/fleet/sharding.md).
#
#   docs/fleet/gnu-parallel.sh N ARCHIVE HOMES
#
# Runs N backfills at once, shard K/N of ARCHIVE into HOMES/shard-K-of-N for K = 0
# to N-1, each with its share of the cores, then pushes each home to the fleet
# (TRANSCOPE_FLEET_URL) as machine `shard-K` as soon as its backfill ends. One
# backfill already reads with every core, but it records into one index, one writer
# at a time; N shards are N indexes written side by side. Together they write what
# one backfill of the whole archive writes.
#
# Exits 0 when every shard was read and pushed, else 1 (each shard's summary is in
# HOMES/shard-K-of-N.json, its messages in HOMES/shard-K-of-N.log, and parallel's
# record of each in HOMES/joblog).

set -euo pipefail

if [ "$#" -ne 3 ]; then
    echo "usage: $0 N ARCHIVE HOMES" >&2
    exit 2
fi
case $1 in
'' | *[!0-9]* | 0*)
    echo "$0: N must be a whole number, 1 or more: $1" >&2
    exit 2
    ;;
esac
export SHARDS=$1 ARCHIVE=$2 HOMES=$3
# Each shard's share of the cores (at least one worker).
cores=$(nproc)
export WORKERS=$((cores / SHARDS > 0 ? cores / SHARDS : 1))
mkdir -p "$HOMES"

# Shard $1 of $SHARDS: backfill its home, then push it. A backfill that exits 1
# (some files could not be read: named in the log) still has its rows pushed, and
# the shard still counts as failed.
shard() {
    local k=$1 status=0
    local home=$HOMES/shard-$k-of-$SHARDS
    transcope --home "$home" backfill --shard "$k/$SHARDS" --jobs "$WORKERS" --json \
        "$ARCHIVE/claude/projects" "$ARCHIVE/codex/sessions" "$ARCHIVE/gemini/tmp" \
        >"$home.json" 2>"$home.log" || status=$?
    if [ "$status" -le 1 ]; then
        transcope --home "$home" fleet push --machine "shard-$k" 2>>"$home.log" || status=1
    fi
    return "$status"
}
export -f shard

seq 0 $((SHARDS - 1)) |
    parallel --jobs "$SHARDS" --halt never --joblog "$HOMES/joblog" shard {} ||
    exit 1
