#!/usr/bin/env bash
# Play the sample session (claude/projects/-work-alpha-one/0f0e0d0c-…01.jsonl) as it
# would have happened on a machine that has its folders: in a throw-away folder, make
# the real git repositories it names (alpha, with the worktrees `one` and `two`, and
# beta), lay the transcript there with its folders moved under that folder, and run
# transcope's Stop hook twice, as Claude Code would: after the first three turns with
# the swarm's task variable saying `first`, after the rest with it saying `second`.
# Then print the session's scope log and timeline.
#
#   bash testdata/sample-archive/demo.sh [DIR]     # DIR: default a new temporary folder
#
# TRANSCOPE names the binary (default: `transcope` on the PATH). Nothing outside DIR
# is written: the agentihooks home is DIR/home. A temporary folder the script made
# itself is removed when it exits, however it exits; a DIR you named is kept.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tc="${TRANSCOPE:-transcope}"
if [ $# -gt 0 ]; then
  dir="$1"
  mkdir -p "$dir"
else
  dir="$(mktemp -d "${TMPDIR:-/tmp}/transcope-demo.XXXXXX")"
  trap 'rm -rf -- "$dir"' EXIT
fi
dir="$(cd "$dir" && pwd)"
echo "== working in $dir"
session=0f0e0d0c-0000-4000-8000-000000000001
source_transcript="$here/claude/projects/-work-alpha-one/$session.jsonl"

# Commits need a name; a fresh machine may have none configured.
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.invalid
export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.invalid
export GIT_CONFIG_NOSYSTEM=1

repo() { # repo FOLDER BRANCH REMOTE
  git init -q "$1"
  git -C "$1" checkout -q -b "$2"
  git -C "$1" remote add origin "$3"
  git -C "$1" commit -q --allow-empty -m "$2"
}
mkdir -p "$dir/scratch"
repo "$dir/work/alpha/one" one https://github.com/fixture/alpha.git
git -C "$dir/work/alpha/one" worktree add -q -b two ../two
repo "$dir/work/beta" main https://github.com/fixture/beta.git

# The transcript where Claude Code keeps it, its folders moved under $dir.
projects="$dir/claude/projects/$(printf '%s' "$dir/work/alpha/one" | tr '/.' '--')"
mkdir -p "$projects"
transcript="$projects/$session.jsonl"
moved="$(sed -e "s#\"/work/#\"$dir/work/#g" -e "s#\"/scratch\"#\"$dir/scratch\"#g" "$source_transcript")"

stop() { # stop TASK: one Stop hook, its payload on stdin, under the swarm's task TASK
  printf '{"session_id":"%s","transcript_path":"%s","cwd":"%s","hook_event_name":"Stop"}' \
    "$session" "$transcript" "$dir/work/alpha/one" |
    AGENTIHOOKS_SWARM=fixture AGENTIHOOKS_SWARM_TASK="$1" \
      "$tc" --home "$dir/home" hook stop --json >/dev/null
}
printf '%s\n' "$moved" | head -n 3 >"$transcript"
stop first
printf '%s\n' "$moved" | tail -n +4 >>"$transcript"
stop second

echo "== scope log of $session"
"$tc" --home "$dir/home" scope log --session "$session"
echo "== timeline"
"$tc" --home "$dir/home" timeline --no-sync --session "$session"
if [ $# -gt 0 ]; then
  echo "== everything is under $dir"
else
  echo "== done; $dir is removed"
fi
