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

describe("opening a database this version set up", () => {
  test("takes no write lock: it opens at once while another process holds the write lock", async () => {
    const path = join(tempDir(), "busy.db");
    await new SmithersDb(path).close();
    const other = new Database(path);
    other.exec("BEGIN IMMEDIATE");
    try {
      // With the old open (BEGIN IMMEDIATE) this threw once its 50 ms busy timeout ran out.
      const db = new SmithersDb(path, { busyTimeoutMs: 50 });
      expect(await db.read("probe", (q) => q.get<{ n: number }>("SELECT count(*) AS n FROM _smithers_runs"))).toEqual({ n: 0 });
      await db.close();
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
  });

  test("a database stamped by another version (or by none) is set up again: a dropped index comes back", async () => {
    const path = join(tempDir(), "older.db");
    await new SmithersDb(path).close();
    const raw = new Database(path);
    const index = raw.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '_smithers_%' LIMIT 1").get()!.name;
    raw.exec(`DROP INDEX "${index}"; PRAGMA application_id = 7`);
    raw.close();
    await new SmithersDb(path).close();
    const after = new Database(path, { readonly: true });
    try {
      expect(after.query("SELECT name FROM sqlite_master WHERE name = ?").all(index)).toEqual([{ name: index }]);
      expect(after.query<{ application_id: number }, []>("PRAGMA application_id").get()!.application_id).not.toBe(7);
    } finally {
      after.close();
    }
  });

  test("a scores table an earlier version made with score NOT NULL is rebuilt so a pending score can be stored, keeping its rows and index", async () => {
    const path = join(tempDir(), "scores.db");
    const old = new Database(path);
    old.exec(`CREATE TABLE "_smithers_scorers" ("id" text PRIMARY KEY NOT NULL, "run_id" text NOT NULL, "node_id" text NOT NULL,
      "iteration" integer DEFAULT 0 NOT NULL, "attempt" integer DEFAULT 1 NOT NULL, "scorer_id" text NOT NULL, "scorer_name" text NOT NULL,
      "source" text DEFAULT 'live' NOT NULL, "score" real NOT NULL, "reason" text, "meta_json" text, "latency_ms" integer, "scored_at_ms" integer NOT NULL);
      INSERT INTO _smithers_scorers (id, run_id, node_id, scorer_id, scorer_name, score, scored_at_ms) VALUES ('s1', 'r', 'n', 'len', 'Length', 0.5, 1);`);
    old.close();
    const db = new SmithersDb(path);
    db.sqlite.exec(
      "INSERT INTO _smithers_scorers (id, run_id, node_id, scorer_id, scorer_name, status, scored_at_ms) VALUES ('s2', 'r', 'n', 'len', 'Length', 'pending', 2)",
    );
    const rows = db.sqlite.query("SELECT id, status, score FROM _smithers_scorers ORDER BY id").all();
    const indexes = db.sqlite.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '_smithers_scorers' AND sql IS NOT NULL").all();
    await db.close();
    expect(rows).toEqual([
      { id: "s1", status: "scored", score: 0.5 },
      { id: "s2", status: "pending", score: null },
    ]);
    expect(indexes).toEqual([{ name: "_smithers_scorers_run_node_idx" }]);
  });
});
