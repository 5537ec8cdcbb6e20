/**
 * bench/queue: what one claim costs (queue.claimNext: the pick by priority, tenant turn and age,
 * the lease, the tenant's turn counter) with N requests queued, on SQLite and PostgreSQL. Each
 * claimed request is then handed off (deleted, as the run that starts it does), so the queue
 * stays at about N. Prints a table; asserts nothing.
 *
 *   bun run bench/queue/index.ts            # N = 10,000
 *   bun run bench/queue/index.ts 50000      # another N
 *   bun run bench/queue/index.ts --sqlite   # SQLite only
 */
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { openSmithersDb, queue, type SmithersDb } from "../../src/db/index.ts";
import { ensurePostgresBinDir } from "../../scripts/postgres/binaries.ts";
import { startPostgres } from "../../scripts/postgres/server.ts";
import { markdownTable } from "../markdown-table.ts";

const CLAIMS = 300;

type Shape = { name: string; tenantOf: (i: number) => string; priorityOf: (i: number) => number };

const SHAPES: Shape[] = [
  { name: "one tenant, one priority (no options given)", tenantOf: () => "", priorityOf: () => 0 },
  { name: "100 tenants, 3 priorities", tenantOf: (i) => `t${i % 100}`, priorityOf: (i) => i % 3 },
  { name: "tenant A: all but one; tenant B: one", tenantOf: (i) => (i === 0 ? "B" : "A"), priorityOf: () => 0 },
];

/** N requests in one transaction (many rows per INSERT), ages spread so the order is well defined. */
async function fill(db: SmithersDb, n: number, shape: Shape): Promise<void> {
  await db.withTransaction("benchFill", async (q) => {
    for (let start = 0; start < n; start += 500) {
      const ids = Array.from({ length: Math.min(500, n - start) }, (_, k) => start + k);
      const values = ids.map(() => "(?, 'w', '/w.tsx', NULL, ?, ?, ?)").join(", ");
      await q.run(
        `INSERT INTO _smithers_queue (run_id, workflow_name, workflow_path, input_json, enqueued_at_ms, priority, tenant) VALUES ${values}`,
        ...ids.flatMap((i) => [`r${String(i).padStart(7, "0")}`, 1_000 + (shape.tenantOf(i) === "B" ? n : i), shape.priorityOf(i), shape.tenantOf(i)]),
      );
    }
  });
}

/**
 * The claim as it was before priorities and tenants (oldest request first, one SELECT and the
 * UPDATE in one transaction): the same commit, so the difference is what the new order costs.
 */
function oldestFirstClaim(db: SmithersDb): Promise<{ runId: string } | undefined> {
  return db.withTransaction("benchOldClaim", async (q) => {
    const lock = q.dialect === "postgres" ? " FOR UPDATE SKIP LOCKED" : "";
    const row = await q.get<{ runId: string }>(
      `SELECT run_id AS "runId" FROM _smithers_queue WHERE (started_at_ms IS NULL OR lease_expires_at_ms < ?) ORDER BY enqueued_at_ms, run_id LIMIT 1${lock}`,
      Date.now(),
    );
    if (row)
      await q.run(
        "UPDATE _smithers_queue SET started_at_ms = ?, claimed_by = 'bench', lease_expires_at_ms = ? WHERE run_id = ?",
        Date.now(),
        Date.now() + 60_000,
        row.runId,
      );
    return row;
  });
}

/** Median and p90 of CLAIMS claims (each handed off), and at which claim tenant B's one request came. */
async function claims(db: SmithersDb, claim: () => Promise<{ runId: string; tenant?: string } | undefined>): Promise<string[]> {
  const times: number[] = [];
  let bAt = -1;
  for (let i = 0; i < CLAIMS; i++) {
    const t0 = performance.now();
    const row = await claim();
    times.push(performance.now() - t0);
    if (!row) break;
    if (row.tenant === "B" && bAt < 0) bAt = i + 1;
    await db.write("benchHandOff", (q) => queue.handOff(q, row.runId));
  }
  times.sort((a, b) => a - b);
  const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(3);
  return [at(0.5), at(0.9), bAt < 0 ? "-" : String(bAt)];
}

async function measure(make: () => Promise<string>, n: number, shape: Shape): Promise<string[]> {
  const fresh = async () => {
    const db = openSmithersDb(await make());
    await fill(db, n, shape);
    return db;
  };
  const db = await fresh();
  const old = await fresh();
  try {
    const [median, p90, bAt] = await claims(db, () => queue.claimNext(db, { workerId: "bench", nowMs: Date.now(), leaseMs: 60_000 }));
    const [oldMedian, oldP90] = await claims(old, () => oldestFirstClaim(old));
    return [median!, p90!, oldMedian!, oldP90!, bAt!];
  } finally {
    await db.close();
    await old.close();
  }
}

export async function runQueueBench(args: string[] = []): Promise<void> {
  const n = Number(args.find((a) => /^\d+$/.test(a)) ?? 10_000);
  const targets: { backend: string; make: () => Promise<string> }[] = [];
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-queue-"));
  let db = 0;
  targets.push({ backend: "SQLite", make: async () => join(dir, `q${db++}.db`) });
  let stopPg: (() => Promise<void>) | undefined;
  if (!args.includes("--sqlite")) {
    const found = ensurePostgresBinDir();
    if (found.found) {
      const pg = await startPostgres({ fsync: true });
      stopPg = () => pg.stop();
      targets.push({ backend: "PostgreSQL", make: () => pg.createDatabase() });
    } else console.log(`bench/queue: PostgreSQL is not installed (${found.reason}); SQLite only`);
  }
  try {
    const rows: string[][] = [];
    for (const shape of SHAPES) {
      for (const t of targets) rows.push([`${shape.name}, ${t.backend}`, ...(await measure(t.make, n, shape))]);
    }
    console.log(`\nbench/queue: one claim with ${n.toLocaleString("en")} requests queued (${CLAIMS} claims, each handed off)\n`);
    console.log(markdownTable(["queue", "claim median ms", "claim p90 ms", "oldest-first claim median ms", "oldest-first p90 ms", "B's run claimed at"], rows));
  } finally {
    await stopPg?.();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runQueueBench(process.argv.slice(2));
