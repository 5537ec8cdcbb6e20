#!/bin/sh
//bin/true; s=$(readlink -f "$0" 2>/dev/null) || s=$0; d=${s%/*}/..; o=$(uname -s | tr A-Z a-z); a=$(uname -m); m=
//bin/true; case $a in x86_64|amd64) a=x64 ;; arm64|aarch64) a=aarch64 ;; esac; for l in /lib/ld-musl-*; do [ -e "$l" ] && m=-musl; done
//bin/true; for b in "$SMITHERS_BUN" "$d/../bun/bin/bun.exe" "$d/../@oven/bun-$o-$a$m/bin/bun" "$d/node_modules/bun/bin/bun.exe" "$d/node_modules/@oven/bun-$o-$a$m/bin/bun"; do
//bin/true; [ -f "$b" ] && [ -x "$b" ] && [ "$(wc -c <"$b")" -gt 1000000 ] && { [ -f "$d/dist/bundle/smithers.js" ] && exec "$b" --conditions=smithers-bundle "$d/dist/bundle/smithers.js" "$@"; exec "$b" "$d/src/cli/index.ts" "$@"; }; done
//bin/true; exec node "$0" "$@"
// The `smithers` command for npm installs. Smithers is TypeScript run by Bun, and Bun comes in as
// this package's `bun` dependency, so nothing needs installing by hand. The lines above are sh
// (and comments to JavaScript): where Bun's binary sits where npm puts it (bun/bin/bun.exe after
// Bun's postinstall, else its platform package @oven/bun-<os>-<arch>[-musl]) they start it at
// once, at no cost of a Node start; otherwise Node runs the rest, which looks further (other
// platform packages, PATH) and runs the CLI with what it finds. Under Bun already, the CLI runs
// in-process.
// The CLI is the bundle, dist/bundle/smithers.js, when the package has one (`npm pack` builds it:
// scripts/build-bundle.ts), started with `--conditions=smithers-bundle` so the workflow's own
// imports of smithers-workflows load the bundle too; else src/cli/index.ts. In-process under Bun
// the conditions are already set, so it is src/ there.
import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const cli = fileURLToPath(new URL("../src/cli/index.ts", import.meta.url));
const bundle = fileURLToPath(new URL("../dist/bundle/smithers.js", import.meta.url));
const exe = process.platform === "win32" ? ".exe" : "";

/** A real Bun binary (npm's placeholder for it, before Bun's postinstall, is a few bytes). */
function binary(path) {
  try {
    return statSync(path).size > 1_000_000 ? path : undefined;
  } catch {
    return undefined;
  }
}

/** The platform packages Bun's npm package lists as optional dependencies, most specific first. */
function platformPackages() {
  const os = { darwin: "darwin", linux: "linux", freebsd: "freebsd", win32: "windows", android: "linux" }[process.platform];
  const arch = { x64: "x64", arm64: "aarch64" }[process.arch];
  if (!os || !arch) return [];
  const musl = process.platform === "linux" && !process.report?.getReport?.().header?.glibcVersionRuntime;
  const base = `@oven/bun-${os}-${arch}`;
  return process.platform === "android" ? [`${base}-android`] : musl ? [`${base}-musl`, base] : [base, `${base}-musl`];
}

function findBun() {
  if (process.env.SMITHERS_BUN) return process.env.SMITHERS_BUN;
  const require = createRequire(import.meta.url);
  try {
    const bunDir = dirname(require.resolve("bun/package.json"));
    const installed = binary(join(bunDir, "bin", "bun.exe"));
    if (installed) return installed;
    const fromBun = createRequire(join(bunDir, "package.json"));
    for (const name of platformPackages()) {
      try {
        const found = binary(join(dirname(fromBun.resolve(`${name}/package.json`)), "bin", `bun${exe}`));
        if (found) return found;
      } catch {
        // not installed for this platform
      }
    }
  } catch {
    // the bun package is not installed: look on PATH
  }
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    // npm links node_modules/.bin/bun to Bun's placeholder, which binary() passes over.
    const candidate = dir ? binary(join(dir, `bun${exe}`)) : undefined;
    if (candidate) return candidate;
  }
  return undefined;
}

if (process.versions.bun) {
  const { runCommandLine } = await import(cli);
  await runCommandLine();
} else {
  const bun = findBun();
  if (!bun) {
    console.error(
      "BUN_NOT_FOUND: smithers runs on Bun, which comes with this package as the `bun` dependency, but no Bun binary was found.\n" +
        "Reinstall the package (npm install), or install Bun (https://bun.sh) and put it on PATH, or set SMITHERS_BUN to its path.",
    );
    process.exit(2);
  }
  const args = [...(existsSync(bundle) ? ["--conditions=smithers-bundle", bundle] : [cli]), ...process.argv.slice(2)];
  if (typeof process.execve === "function") {
    // Node 22.15+: become Bun, so signals, the exit code and the process id are Bun's own.
    process.execve(bun, [bun, ...args], process.env);
  }
  const child = spawn(bun, args, { stdio: "inherit" });
  // Ctrl-C reaches Bun from the terminal itself (same process group); counting it twice would
  // turn a graceful cancel into an abandon, so the launcher only ignores it. Other stop signals
  // sent to the launcher's pid are passed on.
  process.on("SIGINT", () => {});
  for (const signal of ["SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("error", (error) => {
    console.error(`BUN_NOT_FOUND: could not start ${bun}: ${error.message}`);
    process.exit(2);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
}
