/**
 * `npm run demo`: runs examples/bugfix.tsx end to end through the CLI on a fresh SQLite file,
 * then shows the SQL an analyst would run against its output tables, and its result.
 */
import { Database } from "bun:sqlite";
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const dbPath = join(root, ".smithers", "demo.db");
mkdirSync(join(root, ".smithers"), { recursive: true });
for (const suffix of ["", "-wal", "-shm"]) rmSync(dbPath + suffix, { force: true });

const input = { description: "Auth tokens expire silently" };
console.log(`$ smithers up examples/bugfix.tsx --input '${JSON.stringify(input)}'\n`);
const proc = Bun.spawnSync(
  [process.execPath, join(root, "src/cli/index.ts"), "up", join(root, "examples/bugfix.tsx"), "--input", JSON.stringify(input), "--db", dbPath],
  { cwd: root, stdout: "inherit", stderr: "inherit" },
);
if (proc.exitCode !== 0) process.exit(proc.exitCode ?? 1);

const query = `SELECT a.node_id, a.severity, a.summary, f.approved
FROM analysis a JOIN fix f ON f.run_id = a.run_id
ORDER BY a.run_id;`;
console.log(`\nThe outputs are plain SQLite tables. Paste this into \`sqlite3 ${dbPath}\`:\n\n${query}\n`);
const db = new Database(dbPath, { readonly: true });
console.table(db.query(query).all());
console.log("Orchestration history lives apart, in _smithers_* tables, e.g.:");
const attemptsQuery = "SELECT node_id, attempt, state, finished_at_ms - started_at_ms AS ms FROM _smithers_attempts ORDER BY started_at_ms;";
console.log(`\n${attemptsQuery}\n`);
console.table(db.query(attemptsQuery).all());
db.close();
