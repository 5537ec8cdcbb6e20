/**
 * The floor: no engine at all. One committed INSERT per "task" with plain bun:sqlite on a WAL file
 * with synchronous = NORMAL, into a table shaped like an output table (run_id, node_id, iteration, n).
 * A durable engine writes at least this much per task, so no engine can beat it.
 * Runs in its own process like the engine runs (started by bench/compare/index.ts).
 */
import { Database } from "bun:sqlite";
import { parseSpec, peakRssKb, report } from "./protocol.ts";

const spec = parseSpec(process.argv[2]);
const db = new Database(spec.dbPath, { create: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec(
  "CREATE TABLE out (run_id TEXT NOT NULL, node_id TEXT NOT NULL, iteration INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (run_id, node_id, iteration))",
);
const insert = db.prepare("INSERT INTO out (run_id, node_id, iteration, n) VALUES (?, ?, 0, ?)");

const started = performance.now();
for (let i = 0; i < spec.n; i++) insert.run("floor", `t${i}`, i); // autocommit: one transaction per row
const wallMs = performance.now() - started;
db.close();
report({ wallMs, peakRssKb: peakRssKb() });
