#!/usr/bin/env bash
# Makes sure bubblewrap (`bwrap`) exists for the sandbox tests, which run task bodies inside it for
# real. Installs Debian's `bubblewrap` package when none is found. Prints the executable's path on
# stdout (SMITHERS_BWRAP's when it names an executable, as the engine does); exit 1 when none can be installed.
set -euo pipefail

found_bwrap() {
  if [[ -n "${SMITHERS_BWRAP:-}" && -x "${SMITHERS_BWRAP}" ]]; then echo "$SMITHERS_BWRAP"; else command -v bwrap; fi
}

found_bwrap || {
  "$(dirname "$0")/../apt-install.sh" bubblewrap "the sandbox tests" bubblewrap
  found_bwrap
}
