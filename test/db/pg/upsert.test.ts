/** Upserts keyed by several columns (loop state, sandboxes) on PostgreSQL: the second write updates the row the first made. */
import { afterEach, describe, expect, test } from "bun:test";
import { openSmithersDb, ralph, sandboxes, type SmithersDb } from "../../../src/db/index.ts";
import { unqualifiedConflictTarget } from "../../../src/db/pg/driver.ts";
import { pgTestServer } from "../../support/postgres.ts";

const pg = await pgTestServer();
const open: SmithersDb[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await db.close();
});

describe("unqualifiedConflictTarget", () => {
  test("drops the table from each column of the conflict target and leaves the rest of the statement alone", () => {
    const text = `insert into "t" ("a", "b") values (?, ?) on conflict ("t"."a", "t"."b") do update set "c" = "t"."c"`;
    expect(unqualifiedConflictTarget(text)).toBe(`insert into "t" ("a", "b") values (?, ?) on conflict ("a", "b") do update set "c" = "t"."c"`);
    expect(unqualifiedConflictTarget(`select 1`)).toBe(`select 1`);
  });
});

describe.skipIf(!pg)("upserts on PostgreSQL", () => {
  test("a loop's state and a sandbox are inserted, then updated in place", async () => {
    const db = openSmithersDb(await pg!.createDatabase());
    open.push(db);
    await db.withTransaction("t", (q) => ralph.setLoopState(q, { runId: "r", ralphId: "loop", iteration: 0, done: false, updatedAtMs: 1 }));
    await db.withTransaction("t", (q) => ralph.setLoopState(q, { runId: "r", ralphId: "loop", iteration: 1, done: true, updatedAtMs: 2 }));
    expect(await ralph.listLoopStates(db, "r")).toEqual([{ runId: "r", ralphId: "loop", iteration: 1, done: true, updatedAtMs: 2 }]);
    await sandboxes.upsertSandbox(db, { runId: "r", sandboxId: "s", configJson: "{}" });
    await sandboxes.upsertSandbox(db, { runId: "r", sandboxId: "s", configJson: "{}", status: "running" });
    expect((await sandboxes.getSandbox(db, "r", "s"))?.status).toBe("running");
  });
});
