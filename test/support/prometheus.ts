/**
 * A Prometheus server for the metrics test: the binary of Debian's `prometheus` package, which
 * scripts/prometheus/ensure.sh (run by .ci/run) installs. Where none is found the test skips with
 * one loud warning instead of failing.
 */
import { existsSync } from "node:fs";

let warned = false;

/** The prometheus executable, or undefined (after one warning per process) when there is none. */
export function findPrometheus(): string | undefined {
  const fixed = [process.env.SMITHERS_PROMETHEUS, "/usr/bin/prometheus"].find((p) => p && existsSync(p));
  const found = fixed ?? Bun.which("prometheus") ?? undefined;
  if (found) return found;
  if (!warned) {
    warned = true;
    console.warn("\n!!! Prometheus test SKIPPED: no prometheus found. Run scripts/prometheus/ensure.sh as root to install it. !!!\n");
  }
  return undefined;
}
