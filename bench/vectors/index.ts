/**
 * bench/vectors: what one memory recall costs (top-10 by cosine, brute force) over N chunks of
 * 384 dimensions in `_smithers_vectors`, on SQLite and PostgreSQL, as the namespace grows to N.
 * The embedder answers a fixed vector at once, so the figures are the scan and the ranking (a real
 * model's call comes on top). Prints a table; asserts nothing.
 *
 *   bun run bench/vectors/index.ts            # up to N = 100,000
 *   bun run bench/vectors/index.ts 20000      # another N
 *   bun run bench/vectors/index.ts --sqlite   # SQLite only
 *   bun run bench/vectors/index.ts --postgres # PostgreSQL only (pgvector when installed: scripts/postgres/ensure-pgvector.sh)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSmithersDb, type SmithersDb, vectors } from "../../src/db/index.ts";
import { createMemory } from "../../src/memory/index.ts";
import { ensurePostgresBinDir } from "../../scripts/postgres/binaries.ts";
import { startPostgres } from "../../scripts/postgres/server.ts";
import { markdownTable } from "../markdown-table.ts";

const DIMS = 384;
const RECALLS = 7;

/** A seeded generator so every run stores the same vectors. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

function vector(next: () => number): Float32Array {
  const v = new Float32Array(DIMS);
  for (let i = 0; i < DIMS; i++) v[i] = next();
  return v;
}

const fixedModel = (embedding: number[]) => ({
  specificationVersion: "v3" as const,
  provider: "bench",
  modelId: "fixed",
  maxEmbeddingsPerCall: undefined,
  supportsParallelCalls: true,
  doEmbed: async ({ values }: { values: string[] }) => ({ embeddings: values.map(() => embedding), warnings: [] }),
});

/** Grows the namespace from `from` to `to` chunks, 1,000 per transaction (a tenth tagged "faq"). */
async function grow(db: SmithersDb, from: number, to: number, next: () => number): Promise<void> {
  for (let start = from; start < to; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, to - start) }, (_, k) => {
      const i = start + k;
      return {
        id: `c${i}`,
        namespace: "bench",
        content: `chunk ${i}`,
        embedding: vector(next),
        metadata: { metadata: { source: i % 10 === 0 ? "faq" : "wiki" }, workflow: "w", runId: `r${i % 100}` },
        createdAtMs: Date.now(),
      };
    });
    await vectors.upsertVectors(db, "bench", batch);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function timeRecalls(fn: () => Promise<unknown>): Promise<number> {
  await fn(); // warm
  const times: number[] = [];
  for (let i = 0; i < RECALLS; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function measure(backend: string, target: string, sizes: number[]): Promise<string[][]> {
  const db = openSmithersDb(target);
  const next = prng(38);
  const query = Array.from(vector(prng(7)));
  const memory = createMemory({ db, embedder: fixedModel(query), namespace: "bench", workflow: "w", runId: "r1" });
  const rows: string[][] = [];
  let have = 0;
  try {
    for (const n of sizes) {
      await grow(db, have, n, next);
      have = n;
      const t0 = performance.now();
      const all = await vectors.scanVectors(db, "bench");
      const scanMs = performance.now() - t0;
      if (all.length !== n) throw new Error(`expected ${n} chunks, scanned ${all.length}`);
      // The first recall after the namespace grew: with pgvector it first fills the new rows' vector column.
      const t1 = performance.now();
      await memory.recall("q", { k: 10 });
      const firstMs = performance.now() - t1;
      const { method } = await memory.searchMethod();
      const plain = await timeRecalls(() => memory.recall("q", { k: 10 }));
      const filtered = await timeRecalls(() => memory.recall("q", { k: 10, filter: { source: "faq" } }));
      const scoped = await timeRecalls(() => memory.recall("q", { k: 10, scope: "run" }));
      rows.push([
        `${n.toLocaleString("en")} chunks, ${backend} (${method})`,
        scanMs.toFixed(1),
        firstMs.toFixed(1),
        plain.toFixed(1),
        filtered.toFixed(1),
        scoped.toFixed(1),
      ]);
    }
  } finally {
    await db.close();
  }
  return rows;
}

export async function runVectorsBench(args: string[] = []): Promise<void> {
  const n = Number(args.find((a) => /^\d+$/.test(a)) ?? 100_000);
  const sizes = [1_000, 10_000, 50_000, 100_000].filter((s) => s < n).concat(n);
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-vectors-"));
  let stopPg: (() => Promise<void>) | undefined;
  try {
    const rows = args.includes("--postgres") ? [] : await measure("SQLite", join(dir, "v.db"), sizes);
    if (!args.includes("--sqlite")) {
      const found = ensurePostgresBinDir();
      if (found.found) {
        const pg = await startPostgres({ fsync: true });
        stopPg = () => pg.stop();
        rows.push(...(await measure("PostgreSQL", await pg.createDatabase(), sizes)));
      } else console.log(`bench/vectors: PostgreSQL is not installed (${found.reason}); SQLite only`);
    }
    console.log(`\nbench/vectors: one recall, top-10 by cosine over ${DIMS}-dimension chunks (median of ${RECALLS})\n`);
    console.log(
      markdownTable(
        ["namespace", "scan + decode ms", "first recall after growing ms", "recall ms", "recall, filter 1 in 10 ms", "recall, scope run (1 in 100) ms"],
        rows,
      ),
    );
  } finally {
    await stopPg?.();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runVectorsBench(process.argv.slice(2));
