#!/usr/bin/env bash
# Makes sure a Chromium exists for the dashboard's browser tests (playwright-core drives it; it
# downloads no browser of its own). Installs Debian's `chromium` package when none is found.
# Prints the executable's path on stdout; exit 1 when none can be installed.
set -euo pipefail

find_chromium() {
  local candidate
  # Debian's /usr/bin/chromium is a wrapper script; the binary behind it starts faster and quieter.
  for candidate in "${SMITHERS_CHROMIUM:-}" /usr/lib/chromium/chromium; do
    if [[ -n "$candidate" && -x "$candidate" ]]; then
      echo "$candidate"
      return 0
    fi
  done
  for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if find_chromium; then exit 0; fi

"$(dirname "$0")/../apt-install.sh" Chromium "the dashboard's browser tests" chromium

find_chromium
