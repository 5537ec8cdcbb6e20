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

if [[ "$(id -u)" != "0" ]]; then
  echo "Chromium not found and not root: cannot install it (apt-get install chromium)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium not found and no apt-get to install it" >&2
  exit 1
fi

echo "Installing Chromium (apt-get install chromium) for the dashboard's browser tests" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2
apt-get install -y --no-install-recommends chromium >&2

find_chromium
