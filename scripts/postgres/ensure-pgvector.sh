#!/usr/bin/env bash
# Makes sure the pgvector extension is installed for the PostgreSQL server the tests start, so
# memory on PostgreSQL is tested with the real extension. Debian's package
# postgresql-<major>-pgvector is installed with apt-get when the archive has it for this major
# (trixie and later; bookworm has none). Without it, pgvector is built from source with Debian's
# postgresql-server-dev-<major>: the source tree in $PGVECTOR_SRC, else the source Debian's own
# package is built from (trixie's), fetched from the Debian archive and checked by its sha256.
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
"$here/../apt-install.sh" "PostgreSQL server headers" "building pgvector" "postgresql-server-dev-$major" make gcc curl xz-utils ca-certificates
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [[ -n "${PGVECTOR_SRC:-}" ]]; then
  cp -r "$PGVECTOR_SRC/." "$work/"
else
  # The source Debian itself builds postgresql-<major>-pgvector from (trixie's source package),
  # fetched from the Debian archive like any package, and checked against the archive's sha256.
  # The pool keeps the version trixie has; its name and digest are read from trixie's Sources
  # index, with the last known ones as the fallback.
  mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  orig="pgvector_0.8.0.orig.tar.gz"
  sha256="867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0"
  if curl -fsSL "$mirror/dists/trixie/main/source/Sources.xz" -o "$work/Sources.xz" 2>/dev/null; then
    listed="$(xz -dc "$work/Sources.xz" | awk '/^Package: pgvector$/{p=1} p&&/^$/{exit} p&&/^Checksums-Sha256:/{c=1; next} p&&c&&/^ /{if ($3 ~ /\.orig\.tar\./) print $1, $3; next} p&&c{c=0}')"
    if [[ -n "$listed" ]]; then read -r sha256 orig <<<"$listed"; fi
    rm -f "$work/Sources.xz"
  fi
  echo "pgvector: building $orig from the Debian archive" >&2
  curl -fsSL "$mirror/pool/main/p/pgvector/$orig" -o "$work/$orig"
  echo "$sha256  $work/$orig" | sha256sum -c --quiet -
  tar -xaf "$work/$orig" -C "$work" --strip-components=1
  rm -f "$work/$orig"
fi
pg_config="/usr/lib/postgresql/$major/bin/pg_config"
# OPTFLAGS="": no -march=native, so the library runs on any machine of the architecture.
make -C "$work" PG_CONFIG="$pg_config" OPTFLAGS="" >&2
make -C "$work" PG_CONFIG="$pg_config" install >&2
[[ -f "$sharedir/extension/vector.control" ]]
