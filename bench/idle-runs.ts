/**
 * A database full of runs at rest, for the benches that must show a cost that does not grow with
 * them (bench/daemon, the `rest` rows of bench/compare): waiting runs that are not due and
 * finished runs, bulk-inserted with prepared statements in one transaction.
 */
import type { Database } from "bun:sqlite";

/** The waits a run can be parked on, and the run status each leaves it in. */
export const WAITS = ["approval", "timer", "signal"] as const;
export const WAITING_STATUS = { approval: "waiting-approval", timer: "waiting-timer", signal: "waiting-event" } as const;

/**
 * `waiting` runs spread over waiting-approval (gate still requested), waiting-event (nothing sent)
 * and waiting-timer (a day or more away), and `finished` finished runs: a run row and a node row
 * each, a gate row per approval. Runs `w0…` and `f0…`, one waiting run in every six while both
 * last, each created a millisecond after the one before, the newest a millisecond before `nowMs`:
 * distinct creation times, as real runs have, so no listing by time sorts a tie of thousands.
 */
export function insertIdleRuns(sqlite: Database, waiting: number, finished: number, nowMs: number): void {
  const run = sqlite.prepare("INSERT INTO _smithers_runs (run_id, workflow_name, status, created_at_ms, wake_at_ms) VALUES (?, 'w', ?, ?, ?)");
  const node = sqlite.prepare(
    "INSERT INTO _smithers_nodes (run_id, node_id, iteration, state, updated_at_ms, output_table, wake_at_ms) VALUES (?, 'wait', 0, ?, ?, 'step', ?)",
  );
  const gate = sqlite.prepare("INSERT INTO _smithers_approvals (run_id, node_id, iteration, status, requested_at_ms) VALUES (?, 'wait', 0, ?, ?)");
  const total = waiting + finished;
  sqlite.transaction(() => {
    let w = 0;
    let f = 0;
    for (let i = 0; i < total; i++) {
      const createdAtMs = nowMs - (total - i);
      if (w < waiting && (i % 6 === 0 || f >= finished)) {
        const wait = WAITS[w % WAITS.length]!;
        const wakeAtMs = wait === "timer" ? nowMs + 86_400_000 + w : null;
        run.run(`w${w}`, WAITING_STATUS[wait], createdAtMs, wakeAtMs);
        node.run(`w${w}`, WAITING_STATUS[wait], createdAtMs, wakeAtMs);
        if (wait === "approval") gate.run(`w${w}`, "requested", createdAtMs);
        w++;
      } else {
        run.run(`f${f}`, "finished", createdAtMs, null);
        node.run(`f${f}`, "finished", createdAtMs, null);
        f++;
      }
    }
  })();
}
