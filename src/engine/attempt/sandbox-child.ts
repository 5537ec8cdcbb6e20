/**
 * Runs inside bubblewrap (see sandbox.ts): reads `request.json` from the directory named by its
 * argument, rebuilds the task's body from its source text, calls it with the ctx data, and writes
 * `result.json` beside it. Imports nothing of Smithers so it starts fast and sees no engine state.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const io = process.argv[2] ?? "";
const write = (value: unknown) => writeFileSync(join(io, "result.json"), JSON.stringify(value));
// Written first: the parent tells "bubblewrap could not start" from "the body failed" by it.
writeFileSync(join(io, "started"), String(process.pid));

const request = JSON.parse(readFileSync(join(io, "request.json"), "utf8")) as { source: string; ctx: Record<string, unknown> };
const controller = new AbortController();
process.on("SIGTERM", () => controller.abort(new Error("stopped")));
const ctx = {
  ...request.ctx,
  signal: controller.signal,
  sideEffect: () => {
    throw new Error("ctx.sideEffect is not available in a sandbox: the journal lives in the engine's database, outside it");
  },
};

try {
  // Built by the Function constructor: the body sees only globals, never this module's scope.
  const body = new Function(`return (${request.source});`)() as (c: typeof ctx) => unknown;
  if (typeof body !== "function") throw new Error("the task's body did not rebuild as a function from its source");
  const value = await body(ctx);
  write({ ok: true, value: value === undefined ? null : value });
} catch (thrown) {
  const e = thrown instanceof Error ? thrown : new Error(String(thrown));
  write({ ok: false, error: { name: e.name, message: e.message, code: (e as { code?: unknown }).code ?? null } });
}
process.exit(0);
