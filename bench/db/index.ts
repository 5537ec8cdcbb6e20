/**
 * Events persisted per second on a WAL file: one BEGIN IMMEDIATE per event through the events
 * adapter, queued/batched through EventBus, and a plain bun:sqlite prepared INSERT loop (the
 * physical ceiling, autocommit and in one transaction). Prints a table; asserts nothing.
 * Usage: bun run bench/db/index.ts [events=20000]
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { events, SmithersDb } from "../../src/db/index.ts";
import { EventBus } from "../../src/engine/run/event-bus.ts";
import { markdownTable } from "../markdown-table.ts";

type Result = { name: string; events: number; ms: number };

const payload = (i: number) => ({
  type: "NodeFinished",
  runId: "bench",
  timestampMs: 1_700_000_000_000 + i,
  nodeId: `n${i % 50}`,
  iteration: 0,
  attempt: 1,
  durationMs: 12,
});

function withTempDir<T>(fn: (path: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-"));
  return fn(join(dir, "bench.db")).finally(() => rmSync(dir, { recursive: true, force: true }));
}

async function timed(name: string, events: number, run: () => Promise<void>): Promise<Result> {
  const start = performance.now();
  await run();
  return { name, events, ms: performance.now() - start };
}

const perTransaction = (n: number) =>
  withTempDir(async (path) => {
    const db = new SmithersDb(path);
    try {
      return await timed("adapter: insertEvent, 1 transaction per event", n, async () => {
        for (let i = 0; i < n; i++) {
          const e = payload(i);
          await events.insertEvent(db, { runId: e.runId, timestampMs: e.timestampMs, type: e.type, payloadJson: JSON.stringify(e) });
        }
      });
    } finally {
      await db.close();
    }
  });

const queued = (n: number) =>
  withTempDir(async (path) => {
    const db = new SmithersDb(path);
    try {
      const bus = new EventBus({ db, runId: "bench" });
      return await timed("EventBus: emitEventQueued + flush (batched)", n, async () => {
        for (let i = 0; i < n; i++) bus.emitEventQueued(payload(i));
        await bus.flush();
      });
    } finally {
      await db.close();
    }
  });

async function rawDatabase(path: string): Promise<Database> {
  // Same pragmas and table as SmithersDb, so only the Smithers layers differ.
  await new SmithersDb(path).close();
  const sqlite = new Database(path);
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  return sqlite;
}

const rawLoop = (n: number, oneTransaction: boolean) =>
  withTempDir(async (path) => {
    const sqlite = await rawDatabase(path);
    const insert = sqlite.prepare("INSERT INTO _smithers_events (run_id, seq, timestamp_ms, type, payload_json) VALUES (?, ?, ?, ?, ?)");
    const loop = () => {
      for (let i = 0; i < n; i++) {
        const e = payload(i);
        insert.run(e.runId, i, e.timestampMs, e.type, JSON.stringify(e));
      }
    };
    const name = oneTransaction ? "bun:sqlite prepared INSERT loop, 1 transaction" : "bun:sqlite prepared INSERT loop, autocommit";
    try {
      return await timed(name, n, async () => (oneTransaction ? sqlite.transaction(loop)() : loop()));
    } finally {
      sqlite.close();
    }
  });

const perSecond = (r: Result) => (r.events / r.ms) * 1_000;

export async function runDbBench(N = 20_000): Promise<void> {
  const results = [await perTransaction(Math.min(N, 5_000)), await queued(N), await rawLoop(N, false), await rawLoop(N, true)];
  const ceiling = perSecond(results[results.length - 1] as Result);
  const autocommit = perSecond(results[results.length - 2] as Result);
  const rows = results.map((r) => [
    r.name,
    String(r.events),
    Math.round(perSecond(r)).toLocaleString("en-US"),
    `${(perSecond(r) / autocommit).toFixed(2)}x`,
    `${((perSecond(r) / ceiling) * 100).toFixed(1)}%`,
  ]);
  const header = ["path", "events", "events/s", "vs raw autocommit", "of raw 1-tx ceiling"];
  console.log(`\nbench/db: events persisted per second (WAL file, synchronous=NORMAL, Bun ${Bun.version})\n`);
  console.log(markdownTable(header, rows));
}

if (import.meta.main) await runDbBench(Number(process.argv[2] ?? 20_000));
