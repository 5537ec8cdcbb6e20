/** @jsxImportSource ../../src/jsx */
/**
 * One in-process measurement of the `rest` rows of bench/compare (see rest.ts), on OUR engine, in
 * its own process. argv[2] is a JSON RestSpec; the last stdout line is `BENCH_RESULT {json}` with
 * the wall time of the measured call, the statements it executed and the process's peak RSS.
 * `seed` builds the database the other steps are measured on and reports nothing.
 *
 * With BENCH_EXPLAIN=1 the child also prints, on stderr, EXPLAIN QUERY PLAN of every distinct
 * statement the measured call executed (SELECT, UPDATE, DELETE), so a scan shows up by name.
 */
import { Database } from "bun:sqlite";
import { SqliteDb } from "../../src/db/index.ts";
import { supervise } from "../../src/engine/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { PS_DEFAULT_LIMIT } from "../../src/cli/ps.ts";
import { listRunSummaries } from "../../src/engine/index.ts";
import { insertIdleRuns } from "../idle-runs.ts";
import { startCounting } from "../statement-counter.ts";
import { z } from "../zod.ts";
import { peakRssKb, RESULT_PREFIX } from "./protocol.ts";

export type RestStep = "seed" | "open" | "ps" | "supervise" | "run";
export type RestSpec = { step: RestStep; dbPath: string; waiting: number; finished: number };
export type RestReport = { wallMs: number; statements: number; peakRssKb: number; detail: string };

const spec = JSON.parse(process.argv[2] ?? "{}") as RestSpec;
const explain = process.env.BENCH_EXPLAIN === "1";

/** Times `fn` with every statement of the process counted (a JS wrapper per call: well under 1 µs each). */
async function measured(fn: () => Promise<string>): Promise<RestReport> {
  const { counted, stop } = startCounting(explain);
  const started = performance.now();
  let detail: string;
  try {
    detail = await fn();
  } finally {
    stop();
  }
  const wallMs = performance.now() - started;
  if (explain) printPlans(counted.sql);
  return { wallMs, statements: counted.total, peakRssKb: peakRssKb(), detail };
}

function printPlans(sqls: string[]): void {
  const sqlite = new Database(spec.dbPath, { readonly: true });
  try {
    for (const text of new Set(sqls)) {
      if (!/^\s*(select|update|delete|with)\b/i.test(text)) continue;
      const plan = sqlite
        .query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${text}`)
        .all()
        .map((r) => r.detail)
        .join(" | ");
      console.error(`${text.replace(/\s+/g, " ").slice(0, 400)}\n  plan: ${plan}`);
    }
  } finally {
    sqlite.close();
  }
}

let result: RestReport | undefined;
if (spec.step === "seed") {
  const db = new SqliteDb(spec.dbPath);
  insertIdleRuns(db.sqlite, spec.waiting, spec.finished, Date.now());
  await db.close();
} else if (spec.step === "open") {
  let db: SqliteDb | undefined;
  result = await measured(async () => {
    db = new SqliteDb(spec.dbPath);
    return "opened";
  });
  await db?.close();
} else if (spec.step === "ps") {
  const db = new SqliteDb(spec.dbPath);
  result = await measured(async () => `${(await listRunSummaries(db, { limit: PS_DEFAULT_LIMIT, withQueued: true })).length} runs listed`);
  await db.close();
} else if (spec.step === "supervise") {
  const db = new SqliteDb(spec.dbPath);
  result = await measured(async () => `${(await supervise({ db })).length} outcomes`);
  await db.close();
} else if (spec.step === "run") {
  const { Workflow, Task, smithers, outputs, smithersDb } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: spec.dbPath });
  const wf = smithers(() => (
    <Workflow name="one">
      <Task id="t0" output={outputs.out}>
        {{ n: 0 }}
      </Task>
    </Workflow>
  ));
  void smithersDb; // opened before the timer, as in the `one task` row
  result = await measured(async () => {
    const run = await runWorkflow(wf, { input: {} });
    if (run.status !== "finished") throw new Error(`the new run ended ${run.status}: ${run.error?.message ?? ""}`);
    return "finished";
  });
} else {
  throw new Error(`unknown step in ${process.argv[2]}`);
}
if (result) console.log(RESULT_PREFIX + JSON.stringify(result));
