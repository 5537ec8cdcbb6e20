#!/usr/bin/env bash
# Makes sure a Prometheus server binary exists for the metrics test, which starts its own on a free
# loopback port in a temporary directory to scrape a real `smithers serve`. Installs Debian's
# `prometheus` package when none is found and stops the service the package may start: the test
# only wants the binary. Prints the executable's path on stdout; exit 1 when none can be installed.
set -euo pipefail

find_prometheus() {
  local candidate
  for candidate in "${SMITHERS_PROMETHEUS:-}" /usr/bin/prometheus; do
    if [[ -n "$candidate" && -x "$candidate" ]]; then
      echo "$candidate"
      return 0
    fi
  done
  if command -v prometheus >/dev/null 2>&1; then
    command -v prometheus
    return 0
  fi
  return 1
}

if find_prometheus; then exit 0; fi

"$(dirname "$0")/../apt-install.sh" Prometheus "the metrics test" prometheus

find_prometheus
