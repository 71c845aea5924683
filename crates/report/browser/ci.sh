#!/usr/bin/env bash
# The report's browser test (issue 17), run by .ci/run after `cargo test`.
#
# Installs Debian's chromium when it is missing (apt-get; CI runs as root on a clean
# Debian machine) and playwright-core from the committed lock file (no browser
# download: it drives /usr/bin/chromium), builds the binary and the corpus generator,
# then for two archives — the bundled sample archive and a generated one of a few
# hundred sessions of every agent (Claude Code, Codex, Gemini CLI, Qwen Code, Copilot
# CLI) — runs the real binary with a fresh home and a fresh $HOME whose agents' folders
# are the archive's (so `report` syncs them the way it syncs a user's), and loads the
# report headless (check.mjs says what is asserted).
# Screenshots and the reports stay in $ARTIFACTS (default target/report-artifacts).
set -euo pipefail
cd "$(dirname "$0")/../../.."

TARGET="${CARGO_TARGET_DIR:-target}"
ARTIFACTS="${ARTIFACTS:-target/report-artifacts}"
GENERATED_SIZE="${GENERATED_SIZE:-64MB}"

if ! command -v chromium >/dev/null 2>&1; then
  echo "-- installing chromium (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
chromium --version
if ! command -v npm >/dev/null 2>&1; then
  echo "-- installing nodejs and npm (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nodejs npm >/dev/null
fi

echo "-- npm ci (playwright-core, no browser download)"
(cd crates/report/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)

echo "-- building transcope and transcope-corpus"
cargo build -q -p transcope -p transcope-corpus --bins
BIN="$TARGET/debug/transcope"
GEN="$TARGET/debug/transcope-corpus"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$ARTIFACTS"

# report NAME ARCHIVE: a fresh home and $HOME, the archive as the agents' folders.
report() {
  local name="$1" archive="$2"
  local user="$WORK/$name/user" home="$WORK/$name/home"
  mkdir -p "$user" "$home"
  env -u AGENTIHOOKS_HOME -u AGENTIHOOKS_PROJECT_ID -u BRAIN_URL -u QWEN_RUNTIME_DIR \
    HOME="$user" CLAUDE_CONFIG_DIR="$archive/claude" CODEX_HOME="$archive/codex" \
    GEMINI_CLI_HOME="$archive/gemini" QWEN_HOME="$archive/qwen/.qwen" \
    COPILOT_HOME="$archive/copilot/.copilot" XDG_DATA_HOME="$archive/opencode/.local/share" \
    "$BIN" --home "$home" report --html "$ARTIFACTS/$name.html" --json
  HOME="$user" node crates/report/browser/check.mjs --bin "$BIN" --home "$home" \
    --html "$ARTIFACTS/$name.html" --name "$name" --out "$ARTIFACTS"
}

report sample "$PWD/testdata/sample-archive"

"$GEN" --out "$WORK/generated-archive" --size "$GENERATED_SIZE" --max-tool-output 2KiB \
  --repos 10 --seed 17 --gemini-share 0.1 --qwen-share 0.15 --copilot-share 0.15 --opencode-share 0.2 >/dev/null
report generated "$WORK/generated-archive"

echo "-- report artifacts in $ARTIFACTS"
