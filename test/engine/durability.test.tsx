/** @jsxImportSource smithers-workflows */
/** `durability` on createSmithers, runWorkflow and supervise, and side-effect intents at FULL in both modes. */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { openSmithersDb, type Durability, type SmithersDb } from "../../src/db/index.ts";
import { loadWorkflowFile, supervise, type SmithersWorkflow } from "../../src/engine/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { databaseExists, errorOf, query, rejection, sqliteOf, sqliteOnly, tempDbPath, tempDir } from "../helpers.ts";
import { startUntil } from "../e2e/cli-helpers.ts";

const PRAGMA_SYNCHRONOUS = "checks PRAGMA synchronous, the SQLite connection's durability level (PgDb commits both modes alike)";
const level = (db: SmithersDb) => (sqliteOf(db).sqlite.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
const out = { charge: z.object({ receipt: z.string(), levelDuringCall: z.number().int() }) };

function payWorkflow(dbPath: string, durability?: Durability) {
  const kit = createSmithers(out, durability === undefined ? { dbPath } : { dbPath, durability });
  const wf = kit.smithers(() => (
    <kit.Workflow name="pay">
      <kit.Task id="charge" output={kit.outputs.charge}>
        {async (ctx) => {
          // runs right after the intent was committed: the connection is back at its own level
          const levelDuringCall = await ctx.sideEffect("stripe", () => level(kit.smithersDb));
          return { receipt: "ok", levelDuringCall };
        }}
      </kit.Task>
    </kit.Workflow>
  ));
  return { kit, wf };
}

describe("durability", () => {
  sqliteOnly(PRAGMA_SYNCHRONOUS)("createSmithers({ durability }) opens its database in that mode (default process)", async () => {
    expect(level(createSmithers(out, { dbPath: tempDbPath() }).smithersDb)).toBe(1);
    expect(level(createSmithers(out, { dbPath: tempDbPath(), durability: "process" }).smithersDb)).toBe(1);
    expect(level(createSmithers(out, { dbPath: tempDbPath(), durability: "power" }).smithersDb)).toBe(2);
  });

  test("runs overlapping on one connection keep a durability until the last of them ends, then the connection's own comes back", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
    const gates = new Map<string, () => void>();
    const wf = kit.smithers((ctx) => (
      <kit.Workflow name="held">
        <kit.Task id="wait" output={kit.outputs.step}>
          {() => new Promise<{ n: number }>((done) => gates.set(ctx.runId, () => done({ n: 1 })))}
        </kit.Task>
      </kit.Workflow>
    ));
    const db = wf.dbFor();
    expect(db.durability).toBe("process");
    const a = runWorkflow(wf, { runId: "a", durability: "power" });
    const b = runWorkflow(wf, { runId: "b", durability: "power" });
    while (gates.size < 2) await Bun.sleep(5);
    expect(db.durability).toBe("power");
    gates.get("a")!();
    expect((await a).status).toBe("finished");
    expect(db.durability).toBe("power"); // b still commits durably
    gates.get("b")!();
    expect((await b).status).toBe("finished");
    expect(db.durability).toBe("process");
  });

  test("createSmithers with an unknown durability is INVALID_OPTION at once", () => {
    const error = errorOf(() => createSmithers(out, { dbPath: tempDbPath(), durability: "disk" as Durability }));
    expect(SmithersError.is(error, "INVALID_OPTION")).toBe(true);
  });

  for (const mode of ["process", "power"] as const) {
    sqliteOnly(PRAGMA_SYNCHRONOUS)(`in ${mode} mode the side-effect intent is committed at FULL and the connection then returns to its mode`, async () => {
      const dbPath = tempDbPath();
      const { kit, wf } = payWorkflow(dbPath, mode);
      const result = await runWorkflow(wf, { runId: "r1" });
      expect(result.status).toBe("finished");
      const back = mode === "power" ? 2 : 1;
      expect(result.output).toEqual({ receipt: "ok", levelDuringCall: back });
      expect(kit.smithersDb.durableCommits).toBe(1);
      expect(level(kit.smithersDb)).toBe(back);
      expect(await query(dbPath, "SELECT status, side_effect FROM _smithers_tool_calls")).toEqual([{ status: "succeeded", side_effect: 1 }]);
    });
  }

  sqliteOnly(PRAGMA_SYNCHRONOUS)("runWorkflow({ durability }) switches a database already open in another mode for the run, and back after it", async () => {
    const dbPath = tempDbPath();
    const { kit, wf } = payWorkflow(dbPath);
    expect(level(kit.smithersDb)).toBe(1);
    const result = await runWorkflow(wf, { runId: "r1", durability: "power" });
    expect(result.output).toEqual({ receipt: "ok", levelDuringCall: 2 });
    expect([kit.smithersDb.durability, level(kit.smithersDb)]).toEqual(["process", 1]);
  });

  test("runWorkflow with an unknown durability rejects with INVALID_OPTION and writes nothing", async () => {
    const dbPath = tempDbPath();
    const { wf } = payWorkflow(dbPath);
    const error = await rejection(runWorkflow(wf, { runId: "r1", durability: "fsync" as Durability }));
    expect(SmithersError.is(error, "INVALID_OPTION")).toBe(true);
    expect(await databaseExists(dbPath)).toBe(false);
  });

  sqliteOnly(PRAGMA_SYNCHRONOUS)("supervise({ durability }) resumes a stale run in that mode", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(tempDir(), "calls.txt");
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"s"}', "--db", dbPath, "--run-id", "run-d"];
    const proc = await startUntil(args, { STEP_B: "hang", CALLS_FILE: callsFile }, "start   b");
    for (let i = 0; i < 500 && !(existsSync(callsFile) && readFileSync(callsFile, "utf8").includes("b\n")); i++) await Bun.sleep(10);
    proc.kill("SIGKILL");
    await proc.exited;

    let used: SmithersDb | undefined;
    const resolveWorkflow = async (run: { workflowPath: string | null }): Promise<SmithersWorkflow> => {
      const wf = await loadWorkflowFile(run.workflowPath!);
      return { ...wf, dbFor: (path?: string) => (used = wf.dbFor(path)) };
    };
    const db = openSmithersDb(dbPath);
    try {
      const levels: number[] = [];
      const onEvent = (e: { type: string }) => e.type === "NodeFinished" && levels.push(level(used!));
      const outcomes = await supervise({ db, now: () => Date.now() + 60_000, resolveWorkflow, durability: "power", onEvent });
      expect(outcomes.map((o) => [o.runId, o.action, o.action === "resumed" ? o.result.status : undefined])).toEqual([["run-d", "resumed", "finished"]]);
      expect(levels).toEqual([2, 2]); // b and c committed at FULL
      expect(level(used!)).toBe(1); // and the workflow's connection is back to its own mode
    } finally {
      await db.close();
    }
  });
});
