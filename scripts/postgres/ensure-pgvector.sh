#!/usr/bin/env bash
# Makes sure the pgvector extension is installed for the PostgreSQL server the tests start, so
# memory on PostgreSQL is tested with the real extension. Debian's package
# postgresql-<major>-pgvector is installed with apt-get when the archive has it for this major
# (trixie and later; bookworm has none). Without it, pgvector is built from source with Debian's
# postgresql-server-dev-<major>: the source tree in $PGVECTOR_SRC, else the release tarball
# $PGVECTOR_VERSION (default below) downloaded from GitHub.
# Exit 0 when the extension is installed (already, or now); 1 otherwise, with the reason on stderr.
set -euo pipefail
here="$(dirname "$0")"
bindir="$(bash "$here/ensure.sh")"
pg_config="$bindir/pg_config"
[[ -x "$pg_config" ]] || pg_config="$(command -v pg_config || true)"
major="$(basename "$(dirname "$bindir")")"
sharedir="/usr/share/postgresql/$major"
if [[ -x "$pg_config" ]]; then sharedir="$("$pg_config" --sharedir)"; fi
if [[ -f "$sharedir/extension/vector.control" ]]; then exit 0; fi

package="postgresql-$major-pgvector"
if command -v apt-cache >/dev/null 2>&1; then
  [[ "$(id -u)" == "0" ]] && apt-get update >&2 || true
  if apt-cache policy "$package" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    "$here/../apt-install.sh" "pgvector" "the memory tests on PostgreSQL" "$package"
    [[ -f "$sharedir/extension/vector.control" ]] && exit 0
  fi
fi

echo "pgvector: no $package in the apt archive; building it from source" >&2
"$here/../apt-install.sh" "PostgreSQL server headers" "building pgvector" "postgresql-server-dev-$major" make gcc
version="${PGVECTOR_VERSION:-0.8.6}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [[ -n "${PGVECTOR_SRC:-}" ]]; then
  cp -r "$PGVECTOR_SRC/." "$work/"
else
  curl -fsSL "https://github.com/pgvector/pgvector/archive/refs/tags/v$version.tar.gz" | tar -xz -C "$work" --strip-components=1
fi
pg_config="/usr/lib/postgresql/$major/bin/pg_config"
# OPTFLAGS="": no -march=native, so the library runs on any machine of the architecture.
make -C "$work" PG_CONFIG="$pg_config" OPTFLAGS="" >&2
make -C "$work" PG_CONFIG="$pg_config" install >&2
[[ -f "$sharedir/extension/vector.control" ]]
