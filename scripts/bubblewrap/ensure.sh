#!/usr/bin/env bash
# Makes sure bubblewrap (`bwrap`) exists for the sandbox tests, which run task bodies and agent CLIs
# inside it for real. Installs Debian's `bubblewrap` package when none is found. Prints the
# executable's path on stdout; exit 1 when none can be installed.
set -euo pipefail

find_bwrap() {
  local candidate
  for candidate in "${SMITHERS_BWRAP:-}" /usr/bin/bwrap; do
    if [[ -n "$candidate" && -x "$candidate" ]]; then
      echo "$candidate"
      return 0
    fi
  done
  if command -v bwrap >/dev/null 2>&1; then
    command -v bwrap
    return 0
  fi
  return 1
}

if find_bwrap; then exit 0; fi
"$(dirname "$0")/../apt-install.sh" bubblewrap "the sandbox tests" bubblewrap
find_bwrap
