/**
 * What a user of the system does during the soak: start runs of the four soak workflows (through
 * `smithers up`, `up --detach` and serve's `POST /runs`), and answer what they wait for at random
 * moments (approve or deny through `smithers approve|deny` or `POST /runs/:id/approve|deny`, send
 * `soak.go` through `smithers signal` or `POST /runs/:id/signals`). It keeps a ledger of the runs
 * whose start was acknowledged, which the checker holds against the database.
 */
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Pool } from "./procs.ts";
import { ROOT } from "./procs.ts";
import type { Store } from "./store.ts";

export const KINDS = ["pipeline", "approval", "timer", "signal"] as const;
export type Kind = (typeof KINDS)[number];
export type Channel = "up" | "detach" | "http";

const WORKFLOW_DIR = join(ROOT, "bench/soak/workflows");
export const workflowPath = (kind: Kind) => join(WORKFLOW_DIR, `${kind}.tsx`);
export const WORKFLOWS_DIR = WORKFLOW_DIR;

/** Timers of the timer workflow: the short ones wait inside the process, the long ones end it (waiting-timer) for a daemon to wake. */
const TIMER_WAITS = ["2s", "4s", "8s", "12s"];
/** One-shot CLI commands at once: each is a whole Bun process on a small machine. */
const MAX_CLI = 2;
const MAX_UP = 2;

export type Counters = Record<string, number>;

export type Driver = {
  /** Starts one run if fewer than `load` runs are running or queued. */
  submit(load: number): Promise<void>;
  /** Answers the approvals and signals that are due (all of them, at once, when `now` is set). */
  answer(now?: boolean): Promise<void>;
  /** Runs whose start was acknowledged (exit 0/1/3 of up, exit 0 of up --detach, 202 of POST /runs), with how. */
  acked: Map<string, { kind: Kind; channel: Channel }>;
  /** Answers that were acknowledged: signalled run ids, and decided gates as `runId|nodeId|iteration`. */
  answered: { signals: Set<string>; gates: Set<string> };
  counters: Counters;
  /** Error codes of answers and starts that were refused, with how often. */
  refusals: Counters;
  /** Waits for the one-shot commands still running, at most `ms`; what is still in flight then, with since when. */
  idle(ms: number): Promise<string[]>;
};

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
/** The error code a failed command printed (`smithers: CODE: …`), else its first line naming an error. */
const codeOf = (text: string) =>
  /\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b/.exec(text)?.[1] ?? (text.split("\n").find((l) => /error/i.test(l)) ?? text.trim().split("\n")[0] ?? "").trim().slice(0, 80);

/** `refusalLog`: every refused start or answer is appended there whole (the counters keep only its code). */
export function createDriver(o: { pool: Pool; store: Store; serveUrl: () => string | undefined; denyP: number; refusalLog: string }): Driver {
  const { pool, store } = o;
  const acked: Driver["acked"] = new Map();
  const counters: Counters = {};
  const refusals: Counters = {};
  const count = (c: Counters, key: string, n = 1) => (c[key] = (c[key] ?? 0) + n);
  const inFlight = new Map<Promise<unknown>, string>();
  let cli = 0;
  let ups = 0;
  let serial = 0;
  /** Approval keys and signal run ids: when first seen and when to answer; dropped once answered. */
  const due = new Map<string, number>();
  const done = new Set<string>();
  const busy = new Set<string>();
  const answered: Driver["answered"] = { signals: new Set(), gates: new Set() };

  const track = (p: Promise<unknown>, what: string) => {
    inFlight.set(p, `${what} since ${new Date().toISOString()}`);
    void p.finally(() => inFlight.delete(p));
  };

  type Outcome = { ok: boolean; code: string; text?: string };
  const refused = (how: string, id: string, r: Outcome) => {
    count(refusals, `${how}: ${r.code}`);
    appendFileSync(o.refusalLog, `${new Date().toISOString()} ${how} ${id}: ${r.code}\n${r.text ?? ""}\n`);
  };

  async function http(path: string, body: unknown): Promise<Outcome> {
    const url = o.serveUrl();
    if (!url) return { ok: false, code: "SERVE_DOWN" };
    try {
      const res = await fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      const text = await res.text();
      if (res.ok) return { ok: true, code: "" };
      let code = `HTTP_${res.status}`;
      try {
        code = (JSON.parse(text) as { code?: string }).code ?? code;
      } catch {
        // not JSON: the status says it
      }
      return { ok: false, code, text };
    } catch (e) {
      return { ok: false, code: (e as Error).name === "TimeoutError" ? "HTTP_TIMEOUT" : "HTTP_UNREACHABLE" };
    }
  }

  async function cliRun(args: string[]): Promise<Outcome> {
    cli++;
    try {
      const r = await pool.run([...args, "--db", store.target]);
      return { ok: r.code === 0, code: r.timedOut ? "CLI_TIMEOUT" : r.code === 0 ? "" : codeOf(r.out), text: r.out };
    } finally {
      cli--;
    }
  }

  async function submit(load: number): Promise<void> {
    const [statuses, queued] = await Promise.all([
      store.all<{ status: string; n: number }>("SELECT status, count(*) AS n FROM _smithers_runs WHERE status = 'running' GROUP BY status"),
      store.all<{ n: number }>("SELECT count(*) AS n FROM _smithers_queue"),
    ]);
    const active = Number(statuses[0]?.n ?? 0) + Number(queued[0]?.n ?? 0) + ups;
    if (active >= load) return;
    const kind = pick(KINDS);
    const runId = `s${String(++serial).padStart(5, "0")}-${kind}`;
    const input = { n: serial, onDeny: pick(["fail", "continue"] as const), wait: pick(TIMER_WAITS) };
    const wanted = pick<Channel>(["up", "detach", "http"]);
    const channel: Channel = wanted === "up" && ups >= MAX_UP ? "detach" : wanted === "detach" && cli >= MAX_CLI ? "http" : wanted;
    count(counters, `start via ${channel}`);
    if (channel === "up") {
      ups++;
      const child = pool.startTransient("up", ["up", workflowPath(kind), "--db", store.target, "--run-id", runId, "--input", JSON.stringify(input)]);
      track(
        child.proc.exited.then((code) => {
          ups--;
          // Its last line names the run and how it stopped; an exit 1 without it is an error before the run began.
          const named = readFileSync(child.log, "utf8").includes(`run ${runId} `);
          if (named) acked.set(runId, { kind, channel });
          count(counters, child.proc.signalCode === "SIGKILL" ? "up killed" : `up exit ${code}${named ? "" : " (no run)"}`);
        }),
        `up ${runId}`,
      );
      return;
    }
    const started =
      channel === "http"
        ? await http("/runs", { workflow: kind, runId, input })
        : await cliRun(["up", workflowPath(kind), "--detach", "--run-id", runId, "--input", JSON.stringify(input)]);
    if (started.ok) acked.set(runId, { kind, channel });
    else refused(`start via ${channel}`, runId, started);
  }

  async function decide(runId: string, nodeId: string, iteration: number, key: string): Promise<void> {
    const verb = Math.random() < o.denyP ? "deny" : "approve";
    const viaHttp = o.serveUrl() !== undefined && (cli >= MAX_CLI || Math.random() < 0.5);
    const r = viaHttp
      ? await http(`/runs/${encodeURIComponent(runId)}/${verb}`, { node: nodeId, iteration, by: "soak" })
      : await cliRun([verb, runId, "--node", nodeId, "--iteration", String(iteration), "--yes", "--by", "soak"]);
    const how = `${verb} via ${viaHttp ? "http" : "cli"}`;
    // Decided already (a racing answer, or an answer whose reply was lost to a kill): nothing left to do.
    if (r.ok || r.code === "APPROVAL_DECIDED" || r.code === "APPROVAL_NOT_FOUND") done.add(key);
    if (r.ok) {
      answered.gates.add(key);
      count(counters, how);
    } else refused(how, runId, r);
  }

  async function signal(runId: string, n: number): Promise<void> {
    const viaHttp = o.serveUrl() !== undefined && (cli >= MAX_CLI || Math.random() < 0.5);
    // The dedupe key makes a resend (after a lost reply) the same signal, never a second one.
    const r = viaHttp
      ? await http(`/runs/${encodeURIComponent(runId)}/signals`, { name: "soak.go", data: { k: n }, dedupeKey: runId, by: "soak" })
      : await cliRun(["signal", runId, "soak.go", "--data", JSON.stringify({ k: n }), "--dedupe-key", runId, "--by", "soak"]);
    const how = `signal via ${viaHttp ? "http" : "cli"}`;
    if (r.ok) {
      done.add(runId);
      answered.signals.add(runId);
      count(counters, how);
    } else refused(how, runId, r);
  }

  async function answer(now = false): Promise<void> {
    const gates = await store.all<{ run_id: string; node_id: string; iteration: number }>(
      "SELECT run_id, node_id, iteration FROM _smithers_approvals WHERE status = 'requested'",
    );
    const waiting = await store.all<{ run_id: string }>(
      // By the soak's own run ids, not workflow_name: a wrong name is what the checker looks for, not what hides a run from the driver.
      "SELECT run_id FROM _smithers_runs WHERE run_id LIKE '%-signal' AND status NOT IN ('finished', 'failed', 'cancelled', 'continued')",
    );
    const todo: { key: string; go: () => Promise<void> }[] = [
      ...gates.map((g) => ({
        key: `${g.run_id}|${g.node_id}|${g.iteration}`,
        go: () => decide(g.run_id, g.node_id, Number(g.iteration), `${g.run_id}|${g.node_id}|${g.iteration}`),
      })),
      ...waiting.map((w) => ({ key: w.run_id, go: () => signal(w.run_id, Number(/^s(\d+)/.exec(w.run_id)?.[1] ?? 0)) })),
    ];
    const t = Date.now();
    for (const { key, go } of todo) {
      if (done.has(key) || busy.has(key)) continue;
      // A random delay from when it was first seen: some answers come while the run's process still runs, some long after.
      if (!due.has(key)) due.set(key, t + Math.floor(Math.random() * 4_000));
      if (!now && due.get(key)! > t) continue;
      if (cli >= MAX_CLI && o.serveUrl() === undefined) break;
      busy.add(key);
      track(
        go().finally(() => busy.delete(key)),
        `answer to ${key}`,
      );
    }
  }

  return {
    submit,
    answer,
    acked,
    answered,
    counters,
    refusals,
    idle: async (ms) => {
      const end = Date.now() + ms;
      while (inFlight.size > 0 && Date.now() < end) await Promise.race([Promise.allSettled([...inFlight.keys()]), Bun.sleep(end - Date.now())]);
      return [...inFlight.values()];
    },
  };
}
