#!/usr/bin/env bash
# transcope backfill in shards: a Slurm job array (docs/fleet/sharding.md).
#
# One array task per shard: task K of N ($SLURM_ARRAY_TASK_ID of
# $SLURM_ARRAY_TASK_COUNT) reads shard K/N of the archive into a home of its own on
# the node's local disk, pushes it to the fleet as machine `shard-K`, and copies its
# scope logs to a shared folder. Together the N tasks write what one backfill of the
# whole archive writes; the shared folder ends up with one run's scope logs (no two
# shards write the same file).
#
#   sbatch --export=ALL,TRANSCOPE_FLEET_URL=postgres://… docs/fleet/slurm-array.sh
#
# The array must count from 0 with no gaps: `--array=0-(N-1)` (0-3 is N = 4). Every
# task must see the same archive at the same paths. The home is on node-local disk
# (the index is SQLite in write-ahead-log mode, which wants a local filesystem).
#
#SBATCH --job-name=transcope-backfill
#SBATCH --array=0-3
#SBATCH --cpus-per-task=4
#SBATCH --mem=2G
#SBATCH --time=02:00:00
#SBATCH --output=transcope-backfill-%a.log

set -u

# The agents' folders in the archive (name those your archive has) and where the
# scope logs are gathered.
ARCHIVE=${ARCHIVE:-/shared/agent-archive}
LOGS=${LOGS:-/shared/transcope/session-scopes}

k=$SLURM_ARRAY_TASK_ID
n=$SLURM_ARRAY_TASK_COUNT
home=${TMPDIR:-/tmp}/transcope-shard-$k-of-$n

status=0
transcope --home "$home" backfill --shard "$k/$n" --jobs "${SLURM_CPUS_PER_TASK:-1}" --json \
    "$ARCHIVE/claude/projects" "$ARCHIVE/codex/sessions" "$ARCHIVE/gemini/tmp" ||
    status=$?
# 2: a usage error (an array not counted from 0), nothing read. 1: some files could
# not be read or some rows not recorded (named above): what was recorded is pushed
# and kept all the same, and the task fails so that the array shows it.
if [ "$status" -le 1 ]; then
    transcope --home "$home" fleet push --machine "shard-$k" || status=1
    mkdir -p "$LOGS" &&
        cp -R "$home/brain/session-scopes/." "$LOGS/" || status=1
fi
exit "$status"
