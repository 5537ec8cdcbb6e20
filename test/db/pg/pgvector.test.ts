/**
 * Memory on PostgreSQL with pgvector, against a real server with the extension (installed by
 * scripts/postgres/ensure-pgvector.sh): recall ranks in SQL and answers what the SQLite scan
 * answers on the same chunks, with the same filters and scopes.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createMemory, openSmithersDb, type MemoryHit, type SmithersDb } from "../../../src/index.ts";
import { tempDbPath } from "../../helpers.ts";
import { hashEmbedding, hashEmbeddingModel } from "../../support/hash-embedder.ts";
import { connectPg, pgTestServer } from "../../support/postgres.ts";

const pg = await pgTestServer();
const opened: SmithersDb[] = [];
afterAll(() => Promise.all(opened.map((db) => db.close())));

const WORDS = ["refund", "card", "invoice", "deploy", "key", "rotate", "cat", "window", "billing", "gift", "outage", "latency", "retry", "queue"];

/** 300 chunks of 3..6 words drawn deterministically, with metadata to filter on. */
function chunks() {
  return Array.from({ length: 300 }, (_, i) => ({
    id: `c${i}`,
    content: Array.from({ length: 3 + (i % 4) }, (_, j) => WORDS[(i * 7 + j * 11 + (i >> 3)) % WORDS.length]).join(" "),
    metadata: { team: ["infra", "billing", "support"][i % 3]!, priority: i % 5 },
  }));
}

function open(path: string): SmithersDb {
  const db = openSmithersDb(path);
  opened.push(db);
  return db;
}

/** The same chunks remembered in two runs of one workflow, on a database. */
async function seed(db: SmithersDb) {
  const embedder = hashEmbeddingModel(64);
  const all = chunks();
  await createMemory({ db, embedder, namespace: "n", workflow: "w", runId: "r1" }).remember(all.slice(0, 150));
  await createMemory({ db, embedder, namespace: "n", workflow: "w", runId: "r2" }).remember(all.slice(150));
  await createMemory({ db, embedder, namespace: "other", workflow: "w", runId: "r1" }).remember(["refund card invoice"]);
  return createMemory({ db, embedder, namespace: "n", workflow: "w", runId: "r1" });
}

/**
 * Hits as comparable across backends: the scores in order, and the ids of each group of equal
 * scores as a set (the two break ties in their own order), but the last group, which k may cut.
 */
function shape(hits: MemoryHit[]) {
  const round = (h: MemoryHit) => Number(h.score.toFixed(5));
  const last = hits.length === 0 ? undefined : round(hits.at(-1)!);
  const groups = new Map<number, string[]>();
  for (const h of hits)
    if (round(h) !== last) groups.set(round(h), [...(groups.get(round(h)) ?? []), `${h.id} ${JSON.stringify(h.metadata)} ${h.runId}`].sort());
  return { scores: hits.map(round), groups: [...groups.entries()] };
}

describe.skipIf(!pg)("memory on PostgreSQL: pgvector, and the scan without it", () => {
  test("recall ranks with pgvector when the extension is there", async () => {
    const memory = await seed(open(await pg!.createDatabase()));
    expect((await memory.searchMethod()).method).toBe("pgvector");
  });

  test("top-k by cosine, metadata filters and scopes answer what the SQLite scan answers on the same chunks", async () => {
    const onPg = await seed(open(await pg!.createDatabase()));
    const onSqlite = await seed(open(tempDbPath()));
    expect((await onSqlite.searchMethod()).method).toBe("scan");
    const asks = [
      ["refund card", { k: 10 }],
      ["deploy key rotate", { k: 10, filter: { team: "infra" } }],
      ["cat window outage", { k: 7, filter: { team: ["billing", "support"], priority: 2 } }],
      ["retry queue latency", { k: 10, scope: "run" }],
      ["gift billing", { k: 5, scope: "workflow", minScore: 0.3 }],
    ] as const;
    for (const [query, options] of asks) {
      const pgHits = await onPg.recall(query, options);
      expect(pgHits.length).toBeGreaterThan(0);
      expect([query, shape(pgHits)]).toEqual([query, shape(await onSqlite.recall(query, options))]);
    }
  });

  test("a namespace's recall never returns another namespace's chunks", async () => {
    const memory = await seed(open(await pg!.createDatabase()));
    const hits = await memory.recall("refund card invoice", { k: 300 });
    expect(hits.length).toBe(300);
    expect(hits.every((h) => h.id.startsWith("c"))).toBe(true);
  });

  test("a chunk remembered again under its id is ranked by its new embedding", async () => {
    const url = await pg!.createDatabase();
    const db = open(url);
    const memory = await seed(db);
    await memory.recall("refund", { k: 1 }); // fills the pgvector column for every chunk
    await memory.remember([{ id: "c0", content: "zebra zebra zebra" }]);
    const [best] = await memory.recall("zebra", { k: 1 });
    expect([best?.id, Number(best?.score.toFixed(5))]).toEqual(["c0", 1]);
    const sql = connectPg(url);
    try {
      const [row] = await sql`SELECT embedding_v IS NOT NULL AS filled FROM _smithers_vectors WHERE id = 'c0'`;
      expect(row).toEqual({ filled: true });
    } finally {
      await sql.end();
    }
  });

  test("an embedding changed by another writer, which knows nothing of pgvector, is ranked by its new value", async () => {
    const url = await pg!.createDatabase();
    const memory = await seed(open(url));
    await memory.recall("refund", { k: 1 });
    const sql = connectPg(url);
    try {
      const zebra = Buffer.from(Float32Array.from(hashEmbedding("zebra zebra", 64)).buffer);
      await sql`UPDATE _smithers_vectors SET embedding = ${zebra} WHERE id = 'c7'`;
      const [row] = await sql`SELECT embedding_v IS NULL AS cleared FROM _smithers_vectors WHERE id = 'c7'`;
      expect(row).toEqual({ cleared: true });
    } finally {
      await sql.end();
    }
    const [best] = await memory.recall("zebra", { k: 1 });
    expect([best?.id, Number(best?.score.toFixed(5))]).toEqual(["c7", 1]);
  });

  test("a role that may not create the extension gets the scan, with the reason, and the same answers", async () => {
    const url = await pg!.createDatabase();
    const role = `plain_${process.pid}_${Date.now()}`;
    const admin = connectPg(url);
    try {
      await admin.unsafe(`CREATE ROLE ${role} LOGIN`);
      await admin.unsafe(`GRANT ALL ON DATABASE ${new URL(url).pathname.slice(1)} TO ${role}`);
      await admin.unsafe(`GRANT ALL ON SCHEMA public TO ${role}`);
    } finally {
      await admin.end();
    }
    const onPg = await seed(open(url.replace(/\/\/[^@]+@/, `//${role}@`)));
    const how = await onPg.searchMethod();
    expect(how.method).toBe("scan");
    expect(how.method === "scan" && how.reason).toContain("pgvector is not available");
    const onSqlite = await seed(open(tempDbPath()));
    expect(shape(await onPg.recall("deploy key", { k: 10, filter: { team: "infra" } }))).toEqual(
      shape(await onSqlite.recall("deploy key", { k: 10, filter: { team: "infra" } })),
    );
  });
});
