/**
 * Nothing waits on a lock another process holds, against a real server: a transaction left open
 * (its client cut off mid-commit, say) keeps its row and table locks until the server ends it,
 * and claims, schema set-up and reads must go on around it.
 */
import { describe, expect, test } from "bun:test";
import { getTableConfig } from "drizzle-orm/pg-core";
import { cron, openSmithersDb, runs, type SmithersDb } from "../../../src/db/index.ts";
import { pgInternalTables } from "../../../src/db/pg/tables.ts";
import { connectPg, pgTestServer } from "../../support/postgres.ts";

const pg = await pgTestServer();
const TABLES = Object.values(pgInternalTables).map((t) => getTableConfig(t).name);

/** `work`, or a rejection when it takes longer than `ms` (it waited on a lock). */
function within<T>(ms: number, work: Promise<T>): Promise<T> {
  return Promise.race([work, Bun.sleep(ms).then(() => Promise.reject(new Error(`still waiting after ${ms} ms`)))]);
}

/** Holds a transaction open on another connection: `hold(sql)` runs in it; `release()` rolls it back. */
async function holdOpen(url: string, hold: (tx: ReturnType<typeof connectPg>) => Promise<unknown>) {
  const sql = connectPg(url, { max: 1 });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held!: () => void;
  const holding = new Promise<void>((resolve) => (held = resolve));
  const done = sql
    .begin(async (tx) => {
      await hold(tx as unknown as ReturnType<typeof connectPg>);
      held();
      await released;
      throw new Error("rolled back");
    })
    .catch(() => undefined);
  await holding;
  return {
    release: async () => {
      release();
      await done;
      await sql.end();
    },
  };
}

async function storedRun(db: SmithersDb, runId: string, fields: Partial<runs.NewRunRow>): Promise<runs.RunRow> {
  await runs.insertRun(db, { runId, workflowName: "w", status: "running", createdAtMs: 1, ...fields });
  return (await runs.getRun(db, runId))!;
}

describe.skipIf(!pg)("locks on PostgreSQL", () => {
  test("a claim of a run whose row another transaction holds is refused at once, and succeeds once the row is free", async () => {
    const url = await pg!.createDatabase();
    const db = openSmithersDb(url);
    try {
      const stale = await storedRun(db, "stale", { runtimeOwnerId: "gone:1:x", heartbeatAtMs: 1_000 });
      await storedRun(db, "due", { status: "waiting-timer", wakeAtMs: 1_000 });
      const nowMs = Date.now();
      const claim = () =>
        runs.claimRunForResume(db, {
          runId: "stale",
          expectedOwnerId: stale.runtimeOwnerId,
          expectedHeartbeatAtMs: stale.heartbeatAtMs,
          claimOwnerId: "me",
          nowMs,
        });
      const wake = () => runs.claimWaitingRun(db, { runId: "due", fromStatus: "waiting-timer", claimOwnerId: "me", nowMs });
      const holder = await holdOpen(url, (tx) => tx`SELECT run_id FROM _smithers_runs FOR UPDATE`);
      expect(await within(2_000, claim())).toBe(false);
      expect(await within(2_000, wake())).toBe(false);
      await holder.release();
      expect(await claim()).toBe(true);
      expect(await wake()).toBe(true);
      expect((await runs.getRun(db, "stale"))?.runtimeOwnerId).toBe("me");
    } finally {
      await db.close();
    }
  });

  test("a claim of a cron slot whose row another transaction holds is refused at once", async () => {
    const url = await pg!.createDatabase();
    const db = openSmithersDb(url);
    try {
      await cron.insertCron(db, { cronId: "nightly", pattern: "0 3 * * *", workflowPath: "wf.tsx", createdAtMs: 1, nextRunAtMs: 1_000 });
      const claim = () =>
        cron.claimCronSlot(db, { cronId: "nightly", expectedNextRunAtMs: 1_000, slotMs: 1_000, runId: "slot", nextRunAtMs: 2_000, skipped: 0 });
      const holder = await holdOpen(url, (tx) => tx`SELECT cron_id FROM _smithers_cron FOR UPDATE`);
      expect(await within(2_000, claim())).toBe(false);
      await holder.release();
      expect(await claim()).toBe(true);
    } finally {
      await db.close();
    }
  });

  test("opening a database whose schema is current takes no lock: it opens and reads while another transaction holds every table and the schema lock", async () => {
    const url = await pg!.createDatabase();
    const first = openSmithersDb(url);
    await storedRun(first, "r1", {});
    await first.close();
    const holder = await holdOpen(url, async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(0, 0)`;
      // What a step's transaction holds: written rows, so CREATE INDEX (a SHARE lock) would wait.
      for (const table of TABLES) await tx.unsafe(`LOCK TABLE "${table}" IN ROW EXCLUSIVE MODE`);
    });
    const db = openSmithersDb(url);
    try {
      expect((await within(3_000, runs.getRun(db, "r1")))?.runId).toBe("r1");
    } finally {
      await holder.release();
      await db.close();
    }
  });

  test("a database missing an index or a column gets it back on open", async () => {
    const url = await pg!.createDatabase();
    await openSmithersDb(url).close();
    const sql = connectPg(url);
    try {
      const index = getTableConfig(pgInternalTables.smithersRuns).indexes[0]!.config.name!;
      await sql.unsafe(`DROP INDEX "${index}"`);
      await sql.unsafe(`ALTER TABLE _smithers_runs DROP COLUMN wake_at_ms`);
      await openSmithersDb(url).close();
      expect((await sql`SELECT count(*)::int AS n FROM pg_indexes WHERE indexname = ${index}`)[0]!.n).toBe(1);
      expect(
        (await sql`SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = '_smithers_runs' AND column_name = 'wake_at_ms'`)[0]!.n,
      ).toBe(1);
    } finally {
      await sql.end();
    }
  });

  test("a search_path schema that does not exist yet gets its own tables, though public has current ones", async () => {
    const url = await pg!.createDatabase();
    await openSmithersDb(url).close();
    const db = openSmithersDb(`${url}?search_path=team_b`);
    try {
      await storedRun(db, "in-b", {});
      const sql = connectPg(url);
      expect((await sql`SELECT count(*)::int AS n FROM team_b._smithers_runs`)[0]!.n).toBe(1);
      expect((await sql`SELECT count(*)::int AS n FROM public._smithers_runs`)[0]!.n).toBe(0);
      await sql.end();
    } finally {
      await db.close();
    }
  });
});
