#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, pg_ctl, postgres) exist, so the PostgreSQL tests
# run instead of skipping. Tests start their own throwaway server (scripts/postgres/server.ts);
# this script only installs the binaries and never leaves a server of the package running.
# Prints the binary directory on stdout when found; exit 1 when none can be installed.
set -euo pipefail

find_bindir() {
  local dir
  if command -v pg_config >/dev/null 2>&1; then
    dir="$(pg_config --bindir 2>/dev/null || true)"
    if [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
      echo "$dir"
      return 0
    fi
  fi
  # Debian keeps the server binaries off PATH, one directory per major version; take the newest.
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
      echo "$dir"
      return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

if find_bindir; then exit 0; fi

"$(dirname "$0")/../apt-install.sh" "PostgreSQL server binaries" "the PostgreSQL tests" postgresql

# Belt and braces: should a cluster have started anyway (no invoke-rc.d honouring the policy),
# stop it so CI leaves no server of its own behind.
if command -v pg_lsclusters >/dev/null 2>&1; then
  pg_lsclusters --no-header 2>/dev/null | while read -r version name _; do
    pg_ctlcluster "$version" "$name" stop >/dev/null 2>&1 || true
  done
fi

find_bindir
