/**
 * `ai` is an optional peer: importing the package must not load it, and a memory loads it the
 * first time it embeds. Checked in a fresh `bun` process, whose module registry is its own.
 */
import { expect, test } from "bun:test";
import { resolve } from "node:path";
import { tempDbPath } from "../helpers.ts";

const ENTRY = resolve(import.meta.dir, "../../src/index.ts");

test("importing smithers-workflows does not load `ai`; the first remember does", () => {
  const script = `
    const loaded = () => Object.keys(require.cache).some((k) => k.includes("/node_modules/ai/"));
    const { createMemory, openSmithersDb } = await import(${JSON.stringify(ENTRY)});
    const before = loaded();
    const embedder = { specificationVersion: "v3", provider: "p", modelId: "m", maxEmbeddingsPerCall: undefined, supportsParallelCalls: false,
      doEmbed: async ({ values }) => ({ embeddings: values.map(() => [1, 0]), warnings: [] }) };
    const db = openSmithersDb(${JSON.stringify(tempDbPath())});
    await createMemory({ db, embedder }).remember("x");
    await db.close();
    console.log(JSON.stringify({ before, after: loaded() }));
  `;
  const child = Bun.spawnSync([process.execPath, "-e", script], { stderr: "pipe" });
  expect(child.stderr.toString()).toBe("");
  expect(JSON.parse(child.stdout.toString().trim().split("\n").at(-1)!)).toEqual({ before: false, after: true });
});
