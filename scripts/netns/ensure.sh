#!/usr/bin/env bash
# Makes sure `ip` (Debian's iproute2) exists, so the network-partition test (network namespaces
# and a veth pair) runs instead of skipping. Prints its path on stdout; exit 1 when it cannot be
# installed (not root, no apt-get).
set -euo pipefail
if ! command -v ip >/dev/null 2>&1; then
  "$(dirname "$0")/../apt-install.sh" "ip (iproute2)" "the network partition test" iproute2
fi
command -v ip
