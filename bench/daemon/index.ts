/**
 * bench/daemon: what one daemon pass costs when many runs wait. N runs wait for an approval, of
 * which 1% were decided, beside 5N finished runs; the pass's look-up (runs.listWakeableRuns, what
 * `smithers supervise` asks each pass) is timed and its query plan printed.
 *
 *   bun run bench/daemon/index.ts [N]      # default 10,000
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSmithersDb, runs } from "../../src/db/index.ts";
import { markdownTable } from "../markdown-table.ts";

export async function runDaemonBench(n = 10_000): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-daemon-"));
  const db = openSmithersDb(join(dir, "bench.db"));
  try {
    const s = db.sqlite;
    const now = Date.now();
    s.exec("BEGIN");
    const run = s.prepare("INSERT INTO _smithers_runs (run_id, workflow_name, status, created_at_ms) VALUES (?, 'w', ?, ?)");
    const node = s.prepare(
      "INSERT INTO _smithers_nodes (run_id, node_id, iteration, state, updated_at_ms, output_table) VALUES (?, 'gate', 0, ?, ?, 'approval')",
    );
    const gate = s.prepare("INSERT INTO _smithers_approvals (run_id, node_id, iteration, status, requested_at_ms) VALUES (?, 'gate', 0, ?, ?)");
    for (let i = 0; i < n; i++) {
      run.run(`w${i}`, "waiting-approval", now + i);
      node.run(`w${i}`, "waiting-approval", now);
      gate.run(`w${i}`, i % 100 === 0 ? "approved" : "requested", now);
    }
    for (let i = 0; i < 5 * n; i++) {
      run.run(`f${i}`, "finished", now);
      node.run(`f${i}`, "finished", now);
      gate.run(`f${i}`, "approved", now);
    }
    s.exec("COMMIT");
    const times: number[] = [];
    let found = 0;
    for (let k = 0; k < 5; k++) {
      const started = performance.now();
      found = (await runs.listDueRuns(db, Date.now(), 500)).length;
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    console.log(`\nbench/daemon: one pass's look-up of runs to wake (Bun ${Bun.version}, ${process.platform}/${process.arch}), median of 5\n`);
    console.log(
      markdownTable(
        ["waiting runs", "decided (due)", "finished runs", "found", "median ms", "fastest ms"],
        [
          [
            n.toLocaleString("en-US"),
            (n / 100).toLocaleString("en-US"),
            (5 * n).toLocaleString("en-US"),
            String(found),
            times[2]!.toFixed(1),
            times[0]!.toFixed(1),
          ],
        ],
      ),
    );
    const plan = s
      .query<{ detail: string }, []>(
        "EXPLAIN QUERY PLAN SELECT * FROM _smithers_runs WHERE status = 'waiting-approval' AND EXISTS (SELECT 1 FROM _smithers_nodes n JOIN _smithers_approvals a ON a.run_id = n.run_id AND a.node_id = n.node_id AND a.iteration = n.iteration WHERE n.run_id = _smithers_runs.run_id AND n.state = 'waiting-approval' AND a.status <> 'requested')",
      )
      .all();
    console.log(`\nquery plan: ${plan.map((r) => r.detail).join(" | ")}`);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runDaemonBench(Number(process.argv[2] ?? 10_000));
