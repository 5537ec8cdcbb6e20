import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { SmithersDb } from "../../src/db/index.ts";
import { GATES_BACKFILLED_USER_VERSION } from "../../src/db/ensure.ts";
import { tempDir } from "../helpers.ts";
import { join } from "node:path";

/** A database holding run `r`, waiting on gate `g`, which was approved at 7 without making the run due (as versions before that did). */
async function databaseWithUnmarkedDecision(userVersion: number): Promise<string> {
  const path = join(tempDir(), "gates.db");
  const db = new SmithersDb(path);
  db.sqlite.exec(`INSERT INTO _smithers_runs (run_id, workflow_name, status, created_at_ms) VALUES ('r', 'w', 'waiting-approval', 1);
    INSERT INTO _smithers_nodes (run_id, node_id, iteration, state, updated_at_ms, output_table) VALUES ('r', 'g', 0, 'waiting-approval', 1, 'approval');
    INSERT INTO _smithers_approvals (run_id, node_id, iteration, status, requested_at_ms, decided_at_ms) VALUES ('r', 'g', 0, 'approved', 1, 7);
    PRAGMA user_version = ${userVersion};`);
  await db.close();
  return path;
}

function read(path: string): { wake: number | null; userVersion: number } {
  const sqlite = new Database(path, { readonly: true });
  try {
    const wake = sqlite.query<{ wake_at_ms: number | null }, []>("SELECT wake_at_ms FROM _smithers_runs WHERE run_id = 'r'").get()!.wake_at_ms;
    return { wake, userVersion: sqlite.query<{ user_version: number }, []>("PRAGMA user_version").get()!.user_version };
  } finally {
    sqlite.close();
  }
}

describe("ensureSmithersTables", () => {
  test("a database not yet backfilled gets its runs waiting on a decided gate due at the decision, and records that it was backfilled", async () => {
    const path = await databaseWithUnmarkedDecision(0);
    await new SmithersDb(path).close();
    expect(read(path)).toEqual({ wake: 7, userVersion: GATES_BACKFILLED_USER_VERSION });
  });

  test("a database already backfilled is opened without reading its waiting runs again", async () => {
    const path = await databaseWithUnmarkedDecision(GATES_BACKFILLED_USER_VERSION);
    await new SmithersDb(path).close();
    expect(read(path)).toEqual({ wake: null, userVersion: GATES_BACKFILLED_USER_VERSION });
  });
});
