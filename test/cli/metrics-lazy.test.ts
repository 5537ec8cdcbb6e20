/** prom-client is loaded by the commands that serve metrics only: `up` and the rest pay nothing for it. */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../helpers.ts";

const ROOT = join(import.meta.dir, "../..");

/** Runs the CLI's main(args) in a fresh Bun process; answers its exit code and whether prom-client was loaded. */
function loads(args: string[], after = ""): { code: number; promClient: boolean } {
  const script = `
    const { main } = await import(${JSON.stringify(join(ROOT, "src/cli/index.ts"))});
    const code = await main(${JSON.stringify(args)}, { out: () => {}, err: (line) => console.error(line) });
    ${after}
    const promClient = Object.keys(require.cache).some((k) => k.includes("/node_modules/prom-client/"));
    console.log(JSON.stringify({ code, promClient }));
    process.exit(0);`;
  const p = Bun.spawnSync([process.execPath, "-e", script], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const lines = p.stdout.toString().trim().split("\n");
  return JSON.parse(lines.at(-1) ?? "{}") as { code: number; promClient: boolean };
}

test("smithers up runs a workflow without loading prom-client; up --help neither", () => {
  const db = join(tempDir(), "smithers.db");
  expect(loads(["up", join(ROOT, "test/fixtures/agent-usage.tsx"), "--db", db])).toEqual({ code: 0, promClient: false });
  expect(loads(["up", "--help"])).toEqual({ code: 0, promClient: false });
});

test("supervise without --metrics-port does not load it; making metrics in the same process does (the check sees it)", () => {
  const db = join(tempDir(), "smithers.db");
  expect(loads(["up", join(ROOT, "test/fixtures/agent-usage.tsx"), "--db", db]).code).toBe(0);
  expect(loads(["supervise", "--db", db])).toEqual({ code: 0, promClient: false });
  const makeMetrics = `
    const { createMetrics } = await import(${JSON.stringify(join(ROOT, "src/engine/index.ts"))});
    const { openSmithersDb } = await import(${JSON.stringify(join(ROOT, "src/db/index.ts"))});
    await createMetrics(openSmithersDb(${JSON.stringify(db)}));`;
  expect(loads(["supervise", "--db", db], makeMetrics)).toEqual({ code: 0, promClient: true });
});
