/**
 * Chromium for the dashboard's browser tests (playwright-core drives it; it ships no browser).
 * Where no Chromium can be found at all, the tests skip with one loud warning instead of failing;
 * scripts/chromium/ensure.sh (run by .ci/run) installs Debian's package.
 *
 * @example
 * const chromiumPath = findChromium();
 * describe.skipIf(!chromiumPath)("the dashboard", () => { … chromium.launch({ executablePath: chromiumPath }) … });
 */
import { existsSync } from "node:fs";

let warned = false;

/** The Chromium executable to launch, or undefined (after one warning per process) when there is none. */
export function findChromium(): string | undefined {
  const fixed = [process.env.SMITHERS_CHROMIUM, "/usr/lib/chromium/chromium"].find((p) => p && existsSync(p));
  const found = fixed ?? ["chromium", "chromium-browser", "google-chrome"].map((name) => Bun.which(name)).find((p) => p !== null);
  if (found) return found;
  if (!warned) {
    warned = true;
    console.warn("\n!!! Dashboard browser tests SKIPPED: no Chromium found. Run scripts/chromium/ensure.sh as root to install it. !!!\n");
  }
  return undefined;
}
