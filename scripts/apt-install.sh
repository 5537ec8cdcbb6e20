#!/usr/bin/env bash
# Installs Debian packages for the test suite: `apt-install.sh "<what>" "<why>" package…`.
# Needs root and apt-get (exit 1 with a message naming <what> otherwise); runs apt-get update,
# then apt-get install -y --no-install-recommends, all output on stderr.
set -euo pipefail
what="$1"
why="$2"
shift 2
if [[ "$(id -u)" != "0" ]]; then
  echo "$what not found and not root: cannot install it (apt-get install $*)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "$what not found and no apt-get to install it" >&2
  exit 1
fi
echo "Installing $what (apt-get install $*) for $why" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2
apt-get install -y --no-install-recommends "$@" >&2
