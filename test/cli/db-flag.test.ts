import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { main } from "../../src/cli/index.ts";
import { createSmithers } from "../../src/index.ts";
import { runs } from "../../src/db/index.ts";
import { smithers } from "../e2e/cli-helpers.ts";
import { sql, tempDbPath } from "../helpers.ts";

const FIXTURE = resolve(import.meta.dir, "../fixtures/declared-db.tsx");
const quiet = { out: () => undefined, err: () => undefined };

describe("smithers up --db", () => {
  test("writes the run to the --db file, not the workflow's own database, and leaves process.env untouched", async () => {
    const dbPath = tempDbPath();
    const envBefore = { ...process.env };
    expect(await main(["up", FIXTURE, "--db", dbPath], quiet)).toBe(0);
    expect(process.env).toEqual(envBefore);
    expect(sql(dbPath, "SELECT node_id, text FROM note")).toEqual([{ node_id: "write", text: "stored" }]);
    expect(sql(dbPath, "SELECT status, workflow_name FROM _smithers_runs")).toEqual([{ status: "finished", workflow_name: "declared-db" }]);
    const workflow = (await import(FIXTURE)).default;
    expect(await runs.getRun(workflow.dbFor(), sql<{ run_id: string }>(dbPath, "SELECT run_id FROM _smithers_runs")[0]!.run_id)).toBeUndefined();
  });

  test("a later createSmithers in the same process keeps its own dbPath after an `up --db`", async () => {
    const dbPath = tempDbPath();
    expect(await main(["up", FIXTURE, "--db", dbPath], quiet)).toBe(0);
    const declared = tempDbPath("declared.db");
    const kit = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: declared });
    expect(kit.smithersDb.path).toBe(declared);
  });

  test("without --db, SMITHERS_DB_PATH from the environment names the database", () => {
    const dbPath = tempDbPath();
    const r = smithers(["up", "examples/hello.tsx"], { SMITHERS_DB_PATH: dbPath });
    expect(r.code).toBe(0);
    expect(sql(dbPath, "SELECT node_id FROM greeting")).toEqual([{ node_id: "greet" }]);
  });

  test("--db wins over SMITHERS_DB_PATH", () => {
    const dbPath = tempDbPath();
    const envPath = tempDbPath("env.db");
    const r = smithers(["up", "examples/hello.tsx", "--db", dbPath], { SMITHERS_DB_PATH: envPath });
    expect(r.code).toBe(0);
    expect(sql(dbPath, "SELECT node_id FROM greeting")).toEqual([{ node_id: "greet" }]);
    expect(existsSync(envPath)).toBe(false);
  });
});
