/**
 * Rows of combinable INSERTs held inside a write transaction and written many per statement
 * (SqliteSql): every statement of the transaction sees them, they commit or roll back with it,
 * and an upsert of one key twice ends as two statements would have left it.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { attempts, nodes, openSmithersDb, type SqliteDb } from "../../src/db/index.ts";
import { query, rejection, tempDbPath } from "../helpers.ts";

let dbPath: string;
let db: SqliteDb;
/** The statement texts the connection executed, in order (one entry per execution). */
let executed: string[];

beforeEach(() => {
  dbPath = tempDbPath();
  db = openSmithersDb(dbPath) as SqliteDb;
  executed = [];
  const statement = db.sql.statement.bind(db.sql);
  db.sql.statement = (text: string) => {
    executed.push(text);
    return statement(text);
  };
});
afterEach(() => db.close());

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

test("100 node rows and 100 attempt rows in one transaction take a few statements, and all are stored", async () => {
  await db.withTransaction("t", async (q) => {
    for (let i = 0; i < 100; i++) {
      await attempts.insertEndedAttempt(q, ended(`n${i}`));
      await nodes.upsertNode(q, node(`n${i}`, "finished"));
    }
  });
  // 100 = 64 + 16 + 16 + 4: four statements per table, not a hundred.
  expect(executed.filter((t) => t.includes('"_smithers_nodes"')).length).toBe(4);
  expect(executed.filter((t) => t.includes('"_smithers_attempts"')).length).toBe(4);
  expect((await query<{ c: number }>(dbPath, "SELECT COUNT(*) c FROM _smithers_nodes WHERE state = 'finished'"))[0]!.c).toBe(100);
  expect((await query<{ c: number }>(dbPath, "SELECT COUNT(*) c FROM _smithers_attempts WHERE state = 'finished'"))[0]!.c).toBe(100);
});

test("a read inside the transaction sees the rows held before it", async () => {
  const seen = await db.withTransaction("t", async (q) => {
    await nodes.upsertNode(q, node("a", "running"));
    await nodes.upsertNode(q, node("b", "running"));
    return await q.all<{ node_id: string }>("SELECT node_id FROM _smithers_nodes ORDER BY node_id");
  });
  expect(seen.map((r) => r.node_id)).toEqual(["a", "b"]);
  // Drizzle on the same connection sees them too.
  const viaOrm = await db.withTransaction("t2", async (q) => {
    await nodes.upsertNode(q, node("c", "running"));
    return (await nodes.readNodesInState(q, "r", "running")).map((r) => r.nodeId).sort();
  });
  expect(viaOrm).toEqual(["a", "b", "c"]);
});

test("one key upserted twice in a transaction ends as two statements would leave it", async () => {
  await db.withTransaction("t", async (q) => {
    await nodes.upsertNode(q, node("a", "pending", { lastAttempt: 1, defSig: "sig1", errorJson: "{}" }));
    // lastAttempt and defSig coalesce with the row the first upsert wrote; errorJson is replaced.
    await nodes.upsertNode(q, node("a", "finished", { updatedAtMs: 5 }));
  });
  expect(await query(dbPath, "SELECT state, last_attempt, def_sig, error_json, updated_at_ms FROM _smithers_nodes WHERE node_id = 'a'")).toEqual([
    { state: "finished", last_attempt: 1, def_sig: "sig1", error_json: null, updated_at_ms: 5 },
  ]);
});

test("a held row that breaks a constraint rolls the whole transaction back, and the next transaction starts clean", async () => {
  const failed = db.withTransaction("t", async (q) => {
    await nodes.upsertNode(q, node("a", "finished"));
    await attempts.insertEndedAttempt(q, ended("a"));
    await attempts.insertEndedAttempt(q, ended("a")); // the same primary key twice
  });
  expect(String(await rejection(failed))).toContain("UNIQUE constraint failed");
  expect(await query(dbPath, "SELECT node_id FROM _smithers_nodes")).toEqual([]);
  expect(await query(dbPath, "SELECT node_id FROM _smithers_attempts")).toEqual([]);
  await db.withTransaction("t2", async (q) => await nodes.upsertNode(q, node("b", "finished")));
  expect(await query(dbPath, "SELECT node_id FROM _smithers_nodes")).toEqual([{ node_id: "b" }]);
});

test("outside a transaction a combinable statement runs at once", async () => {
  await db.write("w", async (q) => await nodes.upsertNode(q, node("a", "finished")));
  expect(await query(dbPath, "SELECT node_id FROM _smithers_nodes")).toEqual([{ node_id: "a" }]);
});
