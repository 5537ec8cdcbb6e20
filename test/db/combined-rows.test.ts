/**
 * Rows of combinable INSERTs held inside a write transaction and written many per statement
 * (HeldRows, in SqliteSql and PgSql), on SQLite and on PostgreSQL: every statement of the
 * transaction sees them, they commit or roll back with it, an upsert of one key twice ends as two
 * statements would have left it (PostgreSQL refuses one multi-row upsert that updates a key
 * twice), and a held row's failure is the error the statement after it reports.
 */
import { afterEach, describe, expect, spyOn, test } from "bun:test";
import { attempts, nodes, openSmithersDb, type SmithersDb, type SqliteDb } from "../../src/db/index.ts";
import { pgCode, PgSql } from "../../src/db/pg/driver.ts";
import { connectPg, pgTestServer } from "../support/postgres.ts";
import { rejection, sql, tempDbPath } from "../helpers.ts";

const pg = await pgTestServer();

type Opened = {
  db: SmithersDb;
  /** The statement texts the database executed since it was opened (SQLite) or warmed up (PostgreSQL), in order. */
  executed: string[];
  rows: (text: string) => Promise<Record<string, unknown>[]>;
  /** Whether `error` is the backend's unique-key violation. */
  isUniqueViolation: (error: unknown) => boolean;
};

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openSqlite(): Promise<Opened> {
  const path = tempDbPath();
  const db = openSmithersDb(path) as SqliteDb;
  cleanups.push(() => db.close());
  const executed: string[] = [];
  const statement = db.sql.statement.bind(db.sql);
  db.sql.statement = (text: string) => {
    executed.push(text);
    return statement(text);
  };
  return { db, executed, rows: async (text) => sql(path, text), isUniqueViolation: (error) => String(error).includes("UNIQUE constraint failed") };
}

async function openPostgres(): Promise<Opened> {
  const url = await pg!.createDatabase();
  const db = openSmithersDb(url);
  cleanups.push(() => db.close());
  await db.read("warm up", (q) => q.get("SELECT 1 AS one")); // the schema work runs before anything is counted
  const executed: string[] = [];
  const proto = PgSql.prototype as unknown as { unsafe: (text: string, ...rest: unknown[]) => Promise<unknown> };
  const unsafe = proto.unsafe;
  const spy = spyOn(proto, "unsafe").mockImplementation(function (this: unknown, text: string, ...rest: unknown[]) {
    executed.push(text);
    return unsafe.call(this, text, ...rest);
  });
  cleanups.push(() => spy.mockRestore());
  const client = connectPg(url);
  cleanups.push(() => client.end());
  return { db, executed, rows: async (text) => [...(await client.unsafe(text))], isUniqueViolation: (error) => pgCode(error) === "23505" };
}

const BACKENDS = [
  { name: "sqlite", open: openSqlite, skip: false },
  { name: "postgres", open: openPostgres, skip: !pg },
];

const node = (nodeId: string, state: string, extra: Partial<nodes.NodeUpsert> = {}): nodes.NodeUpsert => ({
  runId: "r",
  nodeId,
  iteration: 0,
  state,
  updatedAtMs: 1,
  outputTable: "out",
  ...extra,
});
const ended = (nodeId: string) => ({ runId: "r", nodeId, iteration: 0, attempt: 1, startedAtMs: 1, state: "finished", finishedAtMs: 2 });

for (const backend of BACKENDS) {
  describe.skipIf(backend.skip)(`combined rows [${backend.name}]`, () => {
    test("100 node rows and 100 attempt rows in one transaction take a few statements, and all are stored", async () => {
      const { db, executed, rows } = await backend.open();
      await db.withTransaction("t", async (q) => {
        for (let i = 0; i < 100; i++) {
          await attempts.insertEndedAttempt(q, ended(`n${i}`));
          await nodes.upsertNode(q, node(`n${i}`, "finished"));
        }
      });
      // 100 = 64 + 16 + 16 + 4: four statements per table, not a hundred.
      expect(executed.filter((t) => t.includes('INTO "_smithers_nodes"')).length).toBe(4);
      expect(executed.filter((t) => t.includes('INTO "_smithers_attempts"')).length).toBe(4);
      expect(await rows("SELECT COUNT(*) AS c FROM _smithers_nodes WHERE state = 'finished'")).toEqual([{ c: 100 }]);
      expect(await rows("SELECT COUNT(*) AS c FROM _smithers_attempts WHERE state = 'finished'")).toEqual([{ c: 100 }]);
    });

    test("fewer rows than a chunk go in one statement of their own count: 5 rows in one, 21 in two (16 + 5)", async () => {
      const { db, executed, rows } = await backend.open();
      for (const [tx, count] of [
        ["five", 5],
        ["twenty-one", 21],
      ] as const) {
        const before = executed.length;
        await db.withTransaction(tx, async (q) => {
          for (let i = 0; i < count; i++) await nodes.upsertNode(q, node(`${tx}${i}`, "finished"));
        });
        expect(executed.slice(before).filter((t) => t.includes('INTO "_smithers_nodes"')).length).toBe(tx === "five" ? 1 : 2);
      }
      expect(await rows("SELECT COUNT(*) AS c FROM _smithers_nodes")).toEqual([{ c: 26 }]);
    });

    test("a read inside the transaction sees the rows held before it, through plain SQL and Drizzle", async () => {
      const { db } = await backend.open();
      const seen = await db.withTransaction("t", async (q) => {
        await nodes.upsertNode(q, node("a", "running"));
        await nodes.upsertNode(q, node("b", "running"));
        return await q.all<{ node_id: string }>("SELECT node_id FROM _smithers_nodes ORDER BY node_id");
      });
      expect(seen.map((r) => r.node_id)).toEqual(["a", "b"]);
      const viaOrm = await db.withTransaction("t2", async (q) => {
        await nodes.upsertNode(q, node("c", "running"));
        return (await nodes.readNodesInState(q, "r", "running")).map((r) => r.nodeId).sort();
      });
      expect(viaOrm).toEqual(["a", "b", "c"]);
    });

    test("one key upserted twice in a transaction ends as two statements would leave it", async () => {
      const { db, rows } = await backend.open();
      await db.withTransaction("t", async (q) => {
        await nodes.upsertNode(q, node("a", "pending", { lastAttempt: 1, defSig: "sig1", errorJson: "{}" }));
        await nodes.upsertNode(q, node("b", "pending"));
        // lastAttempt and defSig coalesce with the row the first upsert wrote; errorJson is replaced.
        await nodes.upsertNode(q, node("a", "finished", { updatedAtMs: 5 }));
        await nodes.upsertNode(q, node("b", "finished"));
      });
      expect(await rows("SELECT node_id, state, last_attempt, def_sig, error_json, updated_at_ms FROM _smithers_nodes ORDER BY node_id")).toEqual([
        { node_id: "a", state: "finished", last_attempt: 1, def_sig: "sig1", error_json: null, updated_at_ms: 5 },
        { node_id: "b", state: "finished", last_attempt: null, def_sig: null, error_json: null, updated_at_ms: 1 },
      ]);
    });

    test("a held row that breaks a constraint fails the statement after it with its own error and rolls the whole transaction back", async () => {
      const { db, rows, isUniqueViolation } = await backend.open();
      let seenInside: unknown;
      const failed = db.withTransaction("t", async (q) => {
        await nodes.upsertNode(q, node("a", "finished"));
        await attempts.insertEndedAttempt(q, ended("a"));
        await attempts.insertEndedAttempt(q, ended("a")); // the same primary key twice
        seenInside = await rejection(q.get("SELECT ? AS one", 1)); // the held rows go first
        throw seenInside;
      });
      // The unique violation itself (on PostgreSQL not "current transaction is aborted"), inside the transaction and from it.
      expect(isUniqueViolation(await rejection(failed))).toBe(true);
      expect(isUniqueViolation(seenInside)).toBe(true);
      expect(await rows("SELECT node_id FROM _smithers_nodes")).toEqual([]);
      expect(await rows("SELECT node_id FROM _smithers_attempts")).toEqual([]);
      await db.withTransaction("t2", async (q) => await nodes.upsertNode(q, node("b", "finished")));
      expect(await rows("SELECT node_id FROM _smithers_nodes")).toEqual([{ node_id: "b" }]);
    });

    test("outside a transaction a combinable statement runs at once", async () => {
      const { db, rows } = await backend.open();
      await db.write("w", async (q) => await nodes.upsertNode(q, node("a", "finished")));
      expect(await rows("SELECT node_id FROM _smithers_nodes")).toEqual([{ node_id: "a" }]);
    });
  });
}
