/** The HTTP API's routes: thin adapters from requests (validated with Zod) to engine and db calls. */
import type { Context, Hono } from "hono";
import type { OutputRow, QueuedRunReport, RunListItem, StartRunResponse } from "../contract/index.ts";
import { z } from "zod";
import { loadOutputRows, loadStoredOutputs, nodes as nodeRows, queue, runs, stripBookkeeping, type OutputRegistry, type SmithersDb } from "../db/index.ts";
import {
  answerHuman,
  approve,
  checkNewRunId,
  checkStartOptions,
  deny,
  inspectRun,
  isOver,
  listRunItems,
  queuedSummary,
  requestCancel,
  runStatusSchema,
  sendSignal,
} from "../engine/index.ts";
import { isTraceparent, ownerAlive } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import type { RunQueue } from "./queue.ts";
import { followRun, startSeq, type FollowOptions } from "./sse.ts";
import { registerForkRoute } from "./fork-route.ts";

const StartRunBody = z.strictObject({
  workflow: z.string().min(1),
  input: z.unknown().optional(),
  runId: z.string().min(1).optional(),
  // Their rules (an integer priority, a non-empty tenant, a positive ms) are checkStartOptions', shared with the CLI and the library.
  priority: z.number().optional(),
  tenant: z.string().optional(),
  debounce: z.strictObject({ key: z.string(), ms: z.number() }).optional(),
});
const DecideBody = z.strictObject({
  node: z.string().optional(),
  iteration: z.number().int().nonnegative().optional(),
  note: z.string().optional(),
  by: z.string().optional(),
  select: z.string().optional(),
  rank: z.array(z.string()).optional(),
});
const AnswerBody = z.strictObject({ data: z.unknown(), by: z.string().optional() });
const SignalBody = z.strictObject({
  name: z.string().min(1),
  data: z.unknown().optional(),
  correlationId: z.string().optional(),
  dedupeKey: z.string().optional(),
  by: z.string().optional(),
});
const ListQuery = z.object({
  status: z.union([z.literal("queued"), runStatusSchema()]).optional(),
  workflow: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

/** The request's JSON body checked against `schema` (an empty body is `{}`); INVALID_INPUT otherwise. */
async function body<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  const text = await c.req.text();
  let value: unknown = {};
  if (text.trim() !== "") {
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new SmithersError("INVALID_INPUT", `The request body is not JSON: ${(cause as Error).message}`, { cause });
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new SmithersError("INVALID_INPUT", `Invalid request body: ${z.prettifyError(parsed.error)}`, { issues: parsed.error.issues });
  return parsed.data;
}

export type RunsQuery = z.infer<typeof ListQuery>;

/** `?status=&workflow=&limit=` checked; INVALID_INPUT otherwise. */
export function runsQuery(query: Record<string, string>): RunsQuery {
  const q = ListQuery.safeParse(query);
  if (!q.success) throw new SmithersError("INVALID_INPUT", `Invalid query: ${z.prettifyError(q.error)}`);
  return q.data;
}

/** 404 unless the run is stored or queued. */
export async function knownRun(db: SmithersDb, runId: string): Promise<{ run?: runs.RunRow; queued?: queue.QueueRow }> {
  const run = await runs.getRun(db, runId);
  if (run) return { run };
  const queued = await queue.getRequest(db, runId); // accepted, or claimed and not yet set up
  if (queued) return { queued };
  throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}"`, { runId });
}

export function registerRoutes(app: Hono, o: { db: SmithersDb; queue: RunQueue; follow: FollowOptions }): void {
  const { db } = o;

  app.post("/runs", async (c) => {
    const b = await body(c, StartRunBody);
    if (b.runId !== undefined) checkNewRunId(b.runId); // here: the queue would accept it, and the run fail later
    const idempotencyKey = c.req.header("Idempotency-Key");
    const options = { ...pick(b, ["priority", "tenant", "debounce"]), ...(idempotencyKey === undefined ? {} : { idempotencyKey }) };
    checkStartOptions({ ...options, ...pick(b, ["runId"]) }, "INVALID_INPUT", (option) =>
      option === "idempotencyKey" ? "The Idempotency-Key header" : option,
    );
    // A caller's trace context, when well formed (W3C: a malformed one is ignored, the run starts its own trace).
    const traceParent = c.req.header("traceparent")?.trim().toLowerCase();
    const started = await o.queue.enqueue({
      ...options,
      ...(traceParent !== undefined && isTraceparent(traceParent) ? { traceParent } : {}),
      workflow: b.workflow,
      runId: b.runId ?? crypto.randomUUID(),
      explicitRunId: b.runId !== undefined,
      input: b.input,
    });
    // A repeated key answers with the first run as it stands now (200, as the first answer was already given).
    if (started.reused === "idempotency-key") c.header("Idempotent-Replayed", "true");
    return c.json(started satisfies StartRunResponse, started.reused === "idempotency-key" ? 200 : 202);
  });

  app.get("/runs", async (c) => c.json({ runs: await listRunItems(db, runsQuery(c.req.query())) } satisfies { runs: RunListItem[] }));

  app.get("/runs/:id", async (c) => {
    const found = await knownRun(db, c.req.param("id"));
    if (found.queued)
      return c.json({
        ...queuedSummary(found.queued),
        workflow: found.queued.workflowName,
        nodes: [],
        usage: null,
        error: null,
        pendingApprovals: [],
      } satisfies QueuedRunReport);
    return c.json(await inspectRun(db, c.req.param("id")));
  });

  // Each task's output row as its author sees it (without run, node and iteration keys).
  app.get("/runs/:id/outputs", async (c) => {
    const runId = c.req.param("id");
    const { run } = await knownRun(db, runId);
    return c.json({ outputs: run ? await runOutputs(db, o.queue, run) : [] } satisfies { outputs: OutputRow[] });
  });

  app.get("/runs/:id/events", async (c) => {
    const runId = c.req.param("id");
    await knownRun(db, runId);
    const after = startSeq(c.req.header("Last-Event-ID"), c.req.query("afterSeq"));
    if (after === undefined) throw new SmithersError("INVALID_INPUT", "afterSeq and Last-Event-ID must be an integer >= -1");
    return followRun(c, o.follow, runId, after);
  });

  for (const verb of ["approve", "deny"] as const) {
    app.post(`/runs/:id/${verb}`, async (c) => {
      const b = await body(c, DecideBody);
      const options = {
        runId: c.req.param("id"),
        ...(b.node !== undefined ? { nodeId: b.node } : {}),
        ...(b.iteration !== undefined ? { iteration: b.iteration } : {}),
        ...(b.by !== undefined ? { by: b.by } : {}),
        ...(b.note !== undefined ? { note: b.note } : {}),
        ...(b.select !== undefined ? { selected: b.select } : {}),
        ...(b.rank !== undefined ? { ranked: b.rank } : {}),
      };
      await knownRun(db, options.runId);
      return c.json(await (verb === "approve" ? approve : deny)(db, options));
    });
  }

  app.post("/human/:requestId/answer", async (c) => {
    const b = await body(c, AnswerBody);
    return c.json(await answerHuman(db, { requestId: c.req.param("requestId"), data: b.data, ...(b.by !== undefined ? { by: b.by } : {}) }));
  });

  app.post("/runs/:id/signals", async (c) => {
    const b = await body(c, SignalBody);
    const runId = c.req.param("id");
    await knownRun(db, runId);
    return c.json(await sendSignal(db, { runId, name: b.name, data: b.data, ...pick(b, ["correlationId", "dedupeKey", "by"]) }));
  });

  app.post("/runs/:id/resume", async (c) => {
    const runId = c.req.param("id");
    const { run } = await knownRun(db, runId);
    if (!run) throw new SmithersError("RUN_EXISTS", `Run "${runId}" is queued already`, { runId });
    // Refused now rather than accepted and dropped by the worker.
    if (run.status === "running" && ownerAlive(run.runtimeOwnerId, run.heartbeatAtMs, await runs.databaseNow(db), run.heartbeatMs)) {
      throw new SmithersError("RUN_STILL_RUNNING", `Run "${runId}" is running in process ${run.runtimeOwnerId}`, { runId });
    }
    await o.queue.enqueue({ workflow: o.queue.workflowOf(run).name, runId, resume: true });
    return c.json({ runId, status: "queued" }, 202);
  });

  registerForkRoute(app, { db, queue: o.queue, body });

  app.post("/runs/:id/cancel", async (c) => {
    const runId = c.req.param("id");
    const known = await knownRun(db, runId);
    // A request that has not started is dropped; when it is a resume of a stored run, that run is cancelled too.
    const dropped = await queue.removeWaiting(db, runId);
    if (dropped && !known.run) return c.json({ runId, status: "cancelled" }, 200);
    if (dropped && known.run && isOver(known.run.status)) return c.json({ runId, status: known.run.status }, 200); // its queued resume is gone
    const outcome = await requestCancel(db, runId);
    // Its owner would see the request at its next heartbeat; when that owner is this server, stop it now.
    if (outcome.status === "cancel-requested") o.queue.cancelLocal(runId);
    return c.json(outcome, outcome.status === "cancelled" ? 200 : 202);
  });
}

/**
 * Read through the workflow's own tables when this server serves it (booleans, JSON and dates
 * decoded as Drizzle maps them); otherwise the stored columns as they are (a boolean reads 0/1).
 */
async function runOutputs(db: SmithersDb, runQueue: RunQueue, run: runs.RunRow) {
  const keys = await nodeRows.listNodes(db, run.runId);
  let registry: OutputRegistry | undefined;
  try {
    registry = runQueue.workflowOf(run).workflow.registry;
  } catch {
    registry = undefined; // a workflow this server does not serve
  }
  const rows = new Map<string, Record<string, unknown>>();
  const known = new Set<string>();
  for (const info of registry?.all() ?? []) {
    if (!keys.some((k) => k.outputTable === info.tableName)) continue;
    known.add(info.tableName);
    for (const row of await loadOutputRows(db, info, run.runId)) rows.set(`${row.nodeId}#${row.iteration}`, stripBookkeeping(row)!);
  }
  const rest = keys.filter((k) => !known.has(k.outputTable));
  for (const [key, row] of await loadStoredOutputs(db, run.runId, rest)) rows.set(key, row);
  return keys.flatMap((k) => {
    const row = rows.get(`${k.nodeId}#${k.iteration}`);
    return row ? [{ nodeId: k.nodeId, iteration: k.iteration, table: k.outputTable, row }] : [];
  });
}

function pick<T extends Record<string, unknown>, K extends keyof T>(o: T, keys: readonly K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]])) as Partial<Pick<T, K>>;
}
