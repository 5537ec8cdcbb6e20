#!/usr/bin/env bash
# Installs the four coding-agent CLIs the agent tests run for real (pinned in package.json here),
# into scripts/agent-clis/node_modules, when they are not there yet. Prints the .bin directory.
# Their install scripts: Claude Code's and OpenCode's put their native binary in place (approved in
# allowScripts); Gemini CLI's optional node-pty and keytar builds are not needed headless (not run).
set -euo pipefail
cd "$(dirname "$0")"
bins=(claude codex gemini opencode)
missing=0
for b in "${bins[@]}"; do [[ -x node_modules/.bin/$b ]] || missing=1; done
if [[ $missing == 1 ]]; then
  # npm install, not npm ci: opencode-ai lists platform packages its lock entry cannot name, which npm ci refuses.
  npm install --no-save --no-audit --no-fund --loglevel=error >&2
fi
echo "$PWD/node_modules/.bin"
