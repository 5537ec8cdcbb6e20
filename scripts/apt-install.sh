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
# A policy-rc.d that answers 101 keeps the packages' maintainer scripts from starting services
# (PostgreSQL's own cluster, Prometheus): the tests only want the binaries. Keep any policy-rc.d already there.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  own_policy=1
fi
cleanup() { if [[ "$own_policy" == 1 ]]; then rm -f "$policy"; fi; }
trap cleanup EXIT
echo "Installing $what (apt-get install $*) for $why" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2
apt-get install -y --no-install-recommends "$@" >&2
