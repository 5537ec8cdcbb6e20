/**
 * The program the sandbox's child `bun` runs (see sandbox.ts). It crosses into the sandbox as its
 * own source text, written to a file there, so it must name nothing outside itself (modules come
 * by import()) and works the same from the sources or a bundle. It reads `request.json` in `io`,
 * rebuilds the task's body from its source text, calls it with the ctx data, and writes
 * `result.json` beside it.
 */
export async function sandboxChild(io: string): Promise<void> {
  const { readFileSync, writeFileSync } = await import("node:fs");
  const file = (name: string) => `${io}/${name}`;
  const write = (value: unknown) => writeFileSync(file("result.json"), JSON.stringify(value));
  // Written first: the parent tells "the child never started" from "the body failed" by it.
  writeFileSync(file("started"), String(process.pid));

  const request = JSON.parse(readFileSync(file("request.json"), "utf8")) as { source: string; ctx: Record<string, unknown> };
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
    // Built by the Function constructor: the body sees only globals, never this function's scope.
    const body = new Function(`return (${request.source});`)() as (c: typeof ctx) => unknown;
    if (typeof body !== "function") throw new Error("the task's body did not rebuild as a function from its source");
    const value = await body(ctx);
    write({ ok: true, value: value === undefined ? null : value });
  } catch (thrown) {
    const e = thrown instanceof Error ? thrown : new Error(String(thrown));
    write({ ok: false, error: { name: e.name, message: e.message, code: (e as { code?: unknown }).code ?? null } });
  }
  process.exit(0);
}
