/** @jsxImportSource ../../src/jsx */
/**
 * One measured process of bench/cold (started by bench/cold/index.ts): imports the engine, opens a
 * new database and runs one workflow, with performance.now() marks around each phase and around
 * every database turn the engine takes (SqliteDb's read/write/withTransaction, by label), and the
 * time spent inside SQLite (preparing, executing) summed per phase. Nothing in src/ is changed:
 * the marks wrap prototypes from outside. argv[2]: JSON { shape, n, dbPath, warm?, count? }.
 * Prints `COLD_RESULT {json}`.
 *
 * Its workflows repeat bench/shape-workflows.tsx on purpose: index.ts copies this file alone into a
 * scratch project as a user's file (importing the package by name), so it cannot import that one.
 */
const T0 = performance.now();
const C0 = process.cpuUsage();
import { Database } from "bun:sqlite";

const spec = JSON.parse(process.argv[2] ?? "{}") as { shape: "one" | "seq" | "par" | "loop"; n: number; dbPath: string; warm?: boolean };

// ---- SQLite time: prepare vs execute, wrapped on the prototypes every connection uses --------
const probe = new Database(":memory:");
const nativeProto = Object.getPrototypeOf((probe.prepare("SELECT 1") as unknown as { native: object }).native) as Record<string, unknown>;
probe.close();
const sqlite = { prepareMs: 0, execMs: 0, statements: 0 };
function timed(target: Record<string, unknown>, name: string, bucket: "prepareMs" | "execMs", counts: boolean) {
  const original = target[name] as (...a: unknown[]) => unknown;
  target[name] = function (this: unknown, ...args: unknown[]) {
    const s = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      sqlite[bucket] += performance.now() - s;
      if (counts) sqlite.statements++;
    }
  };
}
for (const name of ["run", "get", "all", "values"]) timed(nativeProto, name, "execMs", true);
for (const name of ["exec", "run"]) timed(Database.prototype as unknown as Record<string, unknown>, name, "execMs", true);
for (const name of ["prepare", "query"]) timed(Database.prototype as unknown as Record<string, unknown>, name, "prepareMs", false);

const { createSmithers, runWorkflow, SmithersDb } = await import("../../src/index.ts");
const { z } = await import("../zod.ts");
const T1 = performance.now();
const C1 = process.cpuUsage(C0);

// ---- the engine's database turns, by label ---------------------------------------------------
/** Marks on two clocks: wall (performance.now) and this process's CPU time (user + system), both in ms. */
type Turn = { label: string; start: number; end: number; cpuStart: number; cpuEnd: number };
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const turns: Turn[] = [];
let recording = false;
const proto = SmithersDb.prototype as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
for (const method of ["read", "write", "withTransaction", "durableTransaction"]) {
  const original = proto[method]!;
  proto[method] = function (this: unknown, label: unknown, fn: unknown, ...rest: unknown[]) {
    if (!recording) return original.call(this, label, fn, ...rest);
    const turn: Turn = { label: String(label), start: 0, end: 0, cpuStart: 0, cpuEnd: 0 };
    const inner = async (...a: unknown[]) => {
      turn.cpuStart = cpuMs();
      turn.start = performance.now();
      try {
        return await (fn as (...x: unknown[]) => unknown)(...a);
      } finally {
        turn.end = performance.now();
        turn.cpuEnd = cpuMs();
      }
    };
    turns.push(turn);
    return original.call(this, label, inner, ...rest);
  };
}

const ids = Array.from({ length: spec.n }, (_, i) => i);
function build(dbPath: string) {
  const api = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
  const { Workflow, Task, Sequence, Parallel, Loop, smithers, outputs } = api;
  const tasks = () =>
    ids.map((i) => (
      <Task key={i} id={`t${i}`} output={outputs.out}>
        {{ n: i }}
      </Task>
    ));
  const wf = {
    one: () =>
      smithers(() => (
        <Workflow name="one">
          <Task id="t0" output={outputs.out}>
            {{ n: 0 }}
          </Task>
        </Workflow>
      )),
    seq: () =>
      smithers(() => (
        <Workflow name="seq">
          <Sequence>{tasks()}</Sequence>
        </Workflow>
      )),
    par: () =>
      smithers(() => (
        <Workflow name="par">
          <Parallel maxConcurrency={8}>{tasks()}</Parallel>
        </Workflow>
      )),
    loop: () =>
      smithers((ctx) => (
        <Workflow name="loop">
          <Loop id="l" until={ctx.iterationCount(outputs.out, "t") >= spec.n} maxIterations={spec.n}>
            <Task id="t" output={outputs.out}>
              {{ n: ctx.iterationCount(outputs.out, "t") }}
            </Task>
          </Loop>
        </Workflow>
      )),
  }[spec.shape]();
  return { wf, open: () => api.smithersDb };
}

if (spec.warm) {
  const first = build(`${spec.dbPath}.warm.db`);
  first.open();
  const r = await runWorkflow(first.wf, { input: {} });
  if (r.status !== "finished") throw new Error(`warm-up run ${r.status}`);
}
const T2 = performance.now();
const { wf, open } = build(spec.dbPath);
const T3 = performance.now();
const before = { ...sqlite };
open(); // new database: connection settings, the internal tables, the output tables
const T4 = performance.now();
const opened = { ...sqlite };
recording = true;
const C5 = cpuMs();
const T5 = performance.now();
const result = await runWorkflow(wf, { input: {} });
const T6 = performance.now();
const C6 = cpuMs();
recording = false;
if (result.status !== "finished") throw new Error(`run ${result.status}`);

console.log(
  "COLD_RESULT " +
    JSON.stringify({
      timeOrigin: performance.timeOrigin,
      processStartToScript: T0,
      importsMs: T1 - T0,
      importsCpuMs: (C1.user + C1.system) / 1000,
      createMs: T3 - T2,
      openMs: T4 - T3,
      openSql: { prepareMs: opened.prepareMs - before.prepareMs, execMs: opened.execMs - before.execMs, statements: opened.statements - before.statements },
      runStart: T5,
      runEnd: T6,
      runCpuStart: C5,
      runCpuEnd: C6,
      runSql: { prepareMs: sqlite.prepareMs - opened.prepareMs, execMs: sqlite.execMs - opened.execMs, statements: sqlite.statements - opened.statements },
      turns,
    }),
);
