/**
 * The soak's invariants, checked once every process has stopped: against the database, the log
 * of task-body executions ($SOAK_EXEC_FILE) and the driver's ledger of acknowledged starts.
 * Each invariant lists its violations (empty when it holds) and how many things it looked at.
 */
import { readFileSync } from "node:fs";
import type { Store } from "./store.ts";

export type Invariant = { name: string; checked: number; violations: string[]; notes?: string[] };

const ENDED = new Set(["finished", "continued", "failed", "cancelled"]);
/** The soak workflows' task tables: every row in them was written by a body that logged its execution. */
const BODY_TABLE = /_step$/;

type RunRow = { run_id: string; status: string; runtime_owner_id: string | null; heartbeat_at_ms: number | null; wake_at_ms: number | null };
type NodeRow = { run_id: string; node_id: string; iteration: number; state: string; wake_at_ms: number | null; wait_json: string | null; output_table: string };
type AttemptRow = { run_id: string; node_id: string; iteration: number; attempt: number; state: string };

const nodeKey = (r: { run_id: string; node_id: string; iteration: number }) => `${r.run_id} ${r.node_id} ${Number(r.iteration)}`;

/** Answers the soak's driver got an acknowledgement for: signalled run ids, decided gates as `runId|nodeId|iteration`. */
export type Answered = { signals: ReadonlySet<string>; gates: ReadonlySet<string> };

/** Why a waiting run waits, or undefined when what it waits for has come (it should have been woken). */
async function waitReason(store: Store, run: RunRow, waiting: NodeRow[], now: number, answered: Answered): Promise<string | undefined> {
  if (run.wake_at_ms !== null && Number(run.wake_at_ms) <= now) return undefined; // marked due: an answer arrived or a time passed
  if (run.status === "waiting-approval") {
    const open = await store.all<{ node_id: string; iteration: number }>(
      "SELECT node_id, iteration FROM _smithers_approvals WHERE run_id = ? AND status = 'requested'",
      run.run_id,
    );
    // A decision that was acknowledged and is not stored was lost.
    if (open.some((g) => answered.gates.has(`${run.run_id}|${g.node_id}|${Number(g.iteration)}`))) return undefined;
    return open.length > 0 ? "approval not decided" : undefined;
  }
  if (run.status === "waiting-timer") {
    const next = Math.min(...waiting.filter((n) => n.wake_at_ms !== null).map((n) => Number(n.wake_at_ms)));
    return next > now ? `timer due in ${next - now} ms` : undefined;
  }
  if (run.status === "waiting-event") {
    for (const n of waiting.filter((w) => w.state === "waiting-event")) {
      const event = (JSON.parse(n.wait_json ?? "{}") as { event?: string }).event ?? "";
      const sent = await store.all(
        "SELECT 1 AS x FROM _smithers_signals WHERE run_id = ? AND signal_name = ? AND consumed_by_node_id IS NULL AND rejected_json IS NULL",
        run.run_id,
        event,
      );
      if (sent.length > 0) return undefined;
    }
    const signals = await store.all<{ c: number; r: number; n: number }>(
      "SELECT count(consumed_by_node_id) AS c, count(rejected_json) AS r, count(*) AS n FROM _smithers_signals WHERE run_id = ?",
      run.run_id,
    );
    const s = signals[0];
    const stored = s ? `${s.n} signal(s) stored, ${s.c} taken, ${s.r} refused` : "";
    // A signal that was acknowledged and is neither waiting to be taken nor taken was lost.
    if (answered.signals.has(run.run_id)) return undefined;
    return `no signal sent (${stored})`;
  }
  return undefined;
}

/** What a waiting run was sent, for a violation's message: its gates' states, or its signals. */
async function answers(store: Store, run: RunRow): Promise<string> {
  if (run.status === "waiting-approval") {
    const gates = await store.all<{ status: string }>("SELECT status FROM _smithers_approvals WHERE run_id = ?", run.run_id);
    return `; gates ${gates.map((g) => g.status).join(", ") || "none"}`;
  }
  const rows = await store.all<{ seq: number; consumed_by_node_id: string | null; rejected_json: string | null; received_at_ms: number }>(
    "SELECT seq, consumed_by_node_id, rejected_json, received_at_ms FROM _smithers_signals WHERE run_id = ?",
    run.run_id,
  );
  const one = (r: (typeof rows)[number]) =>
    `#${r.seq} received ${r.received_at_ms}, ${r.consumed_by_node_id ? `taken by ${r.consumed_by_node_id}` : r.rejected_json ? "refused" : "not taken"}`;
  return `; signals: ${rows.map(one).join(", ") || "none"}`;
}

/** I1: every run ended, or waits for something that has not come; nothing acknowledged was lost, nothing left queued. */
async function runsSettled(store: Store, acked: ReadonlySet<string>, answered: Answered, now: number): Promise<Invariant> {
  const runs = await store.all<RunRow>("SELECT run_id, status, runtime_owner_id, heartbeat_at_ms, wake_at_ms FROM _smithers_runs");
  const open = await store.all<NodeRow>(
    "SELECT run_id, node_id, iteration, state, wake_at_ms, wait_json, output_table FROM _smithers_nodes WHERE state IN ('waiting-approval', 'waiting-event', 'waiting-timer', 'pending')",
  );
  const byRun = Map.groupBy(open, (n) => n.run_id);
  const queued = await store.all<{ run_id: string; claimed_by: string | null }>("SELECT run_id, claimed_by FROM _smithers_queue");
  const violations: string[] = [];
  const notes: string[] = [];
  for (const run of runs) {
    if (ENDED.has(run.status)) continue;
    if (run.status.startsWith("waiting-")) {
      const reason = await waitReason(store, run, byRun.get(run.run_id) ?? [], now, answered);
      if (reason) notes.push(`${run.run_id}: ${run.status}: ${reason}`);
      else
        violations.push(
          `${run.run_id}: ${run.status}, but what it waits for has come (wake_at_ms ${run.wake_at_ms ?? "null"}${await answers(store, run)}): not woken, or the answer was lost`,
        );
      continue;
    }
    const beat = run.heartbeat_at_ms === null ? "never" : `${now - Number(run.heartbeat_at_ms)} ms ago`;
    violations.push(`${run.run_id}: ${run.status} with every process stopped (owner ${run.runtime_owner_id ?? "none"}, heartbeat ${beat})`);
  }
  for (const q of queued) violations.push(`${q.run_id}: still queued (claimed by ${q.claimed_by ?? "nobody"})`);
  const known = new Set([...runs.map((r) => r.run_id), ...queued.map((q) => q.run_id)]);
  for (const id of acked) if (!known.has(id)) violations.push(`${id}: its start was acknowledged, but there is no run or queued request`);
  return { name: "every run ended or waits for a stated reason", checked: runs.length + queued.length, violations, notes };
}

/** I2: one output row per task that finished, none twice, none for a task that did not finish. */
async function outputsOnce(store: Store): Promise<Invariant> {
  const nodes = await store.all<NodeRow>("SELECT run_id, node_id, iteration, state, output_table FROM _smithers_nodes WHERE output_table <> ''");
  const violations: string[] = [];
  let checked = 0;
  for (const [table, list] of Map.groupBy(nodes, (n) => n.output_table)) {
    const rows = await store.all<{ run_id: string; node_id: string; iteration: number; n: number }>(
      `SELECT run_id, node_id, iteration, count(*) AS n FROM "${table.replace(/"/g, '""')}" GROUP BY run_id, node_id, iteration`,
    );
    checked += rows.length;
    const stored = new Map(rows.map((r) => [nodeKey(r), Number(r.n)]));
    for (const r of rows) if (Number(r.n) > 1) violations.push(`${table}: ${nodeKey(r)} has ${r.n} rows`);
    const finished = new Set(list.filter((n) => n.state === "finished").map(nodeKey));
    for (const key of finished) if (!stored.has(key)) violations.push(`${table}: ${key} finished without its row`);
    for (const key of stored.keys()) if (!finished.has(key)) violations.push(`${table}: ${key} has a row but its task is not finished`);
  }
  return { name: "each output row once", checked, violations };
}

export type ExecStats = { bodies: number; reRuns: number };

/**
 * I3: no body of a committed task ran twice. An attempt is recorded (and committed) before its
 * body starts, so every body execution belongs to exactly one attempt row. A body whose attempt
 * never finished (killed mid-body: `abandoned`; thrown: `failed`) is legitimately followed by a
 * body of the next attempt. Violations: an attempt's body started twice; a finished attempt whose
 * body did not run exactly once; a body with no attempt row; a task finished by two attempts;
 * a body started for a task after the attempt that finished it.
 */
async function bodiesOnce(store: Store, execFile: string): Promise<Invariant & ExecStats> {
  const lines = readFileSync(execFile, "utf8").split("\n").filter(Boolean);
  const runs = new Map<string, number>();
  for (const line of lines) {
    const [runId, nodeId, iteration, attempt] = line.split(" ");
    const key = `${runId} ${nodeId} ${iteration} ${attempt}`;
    runs.set(key, (runs.get(key) ?? 0) + 1);
  }
  const attempts = (
    await store.all<AttemptRow & { output_table: string }>(
      "SELECT a.run_id, a.node_id, a.iteration, a.attempt, a.state, n.output_table FROM _smithers_attempts a JOIN _smithers_nodes n ON n.run_id = a.run_id AND n.node_id = a.node_id AND n.iteration = a.iteration",
    )
  ).filter((a) => BODY_TABLE.test(a.output_table));
  const violations: string[] = [];
  const recorded = new Map(attempts.map((a) => [`${nodeKey(a)} ${Number(a.attempt)}`, a]));
  for (const [key, n] of runs) {
    if (n > 1) violations.push(`${key}: the body of this attempt started ${n} times`);
    if (!recorded.has(key)) violations.push(`${key}: a body ran with no attempt row for it`);
  }
  for (const [node, list] of Map.groupBy(attempts, nodeKey)) {
    const finished = list.filter((a) => a.state === "finished");
    if (finished.length > 1) violations.push(`${node}: finished by attempts ${finished.map((a) => a.attempt).join(", ")}`);
    const last = finished[0];
    if (!last) continue;
    const times = runs.get(`${node} ${Number(last.attempt)}`) ?? 0;
    if (times !== 1) violations.push(`${node}: attempt ${last.attempt} committed, its body ran ${times} times`);
    for (const a of list)
      if (Number(a.attempt) > Number(last.attempt))
        violations.push(`${node}: attempt ${a.attempt} (${a.state}) started after attempt ${last.attempt} committed`);
  }
  const reRuns = [...runs.keys()].filter((k) => recorded.get(k)?.state === "abandoned").length;
  return { name: "no body of a committed task ran twice", checked: lines.length, violations, bodies: lines.length, reRuns };
}

/** I4: nothing left running: no attempt, and no node, of any run, once every process stopped. */
async function nothingRunning(store: Store): Promise<Invariant> {
  const attempts = await store.all<AttemptRow>("SELECT run_id, node_id, iteration, attempt, state FROM _smithers_attempts WHERE state = 'running'");
  const nodes = await store.all<NodeRow>("SELECT run_id, node_id, iteration, state FROM _smithers_nodes WHERE state = 'running'");
  const total = await store.all<{ n: number }>("SELECT count(*) AS n FROM _smithers_attempts");
  return {
    name: "no attempt left running",
    checked: Number(total[0]?.n ?? 0),
    violations: [...attempts.map((a) => `${nodeKey(a)} attempt ${a.attempt} is running`), ...nodes.map((n) => `${nodeKey(n)} node is running`)],
  };
}

/** I6: each run is named after its workflow (`<Workflow name>`), whichever process created or resumed it. */
async function runsNamed(store: Store): Promise<Invariant> {
  const runs = await store.all<{ run_id: string; workflow_name: string }>("SELECT run_id, workflow_name FROM _smithers_runs");
  const violations = runs.filter((r) => r.workflow_name !== `soak-${r.run_id.replace(/^s\d+-/, "")}`).map((r) => `${r.run_id}: named "${r.workflow_name}"`);
  return { name: "each run carries its workflow's name", checked: runs.length, violations };
}

/** I5: each run's events are numbered 0, 1, 2 … with no gap and no repeat. */
async function eventsGapFree(store: Store): Promise<Invariant> {
  const per = await store.all<{ run_id: string; lo: number; hi: number; n: number; d: number }>(
    "SELECT run_id, min(seq) AS lo, max(seq) AS hi, count(*) AS n, count(DISTINCT seq) AS d FROM _smithers_events GROUP BY run_id",
  );
  const violations = per
    .filter((r) => Number(r.lo) !== 0 || Number(r.hi) + 1 !== Number(r.n) || Number(r.d) !== Number(r.n))
    .map((r) => `${r.run_id}: seq ${r.lo}..${r.hi} holds ${r.n} events (${r.d} distinct)`);
  return { name: "events gap-free per run", checked: per.length, violations };
}

export async function checkInvariants(
  store: Store,
  o: { execFile: string; acked: ReadonlySet<string>; answered: Answered },
): Promise<{ invariants: Invariant[]; exec: ExecStats }> {
  const now = Date.now();
  const bodies = await bodiesOnce(store, o.execFile);
  const invariants = [
    await runsSettled(store, o.acked, o.answered, now),
    await outputsOnce(store),
    bodies,
    await nothingRunning(store),
    await eventsGapFree(store),
    await runsNamed(store),
  ];
  return { invariants, exec: { bodies: bodies.bodies, reRuns: bodies.reRuns } };
}
