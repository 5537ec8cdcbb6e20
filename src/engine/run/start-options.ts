/**
 * What a queued start may ask for besides its workflow and input, shared by the library's enqueue,
 * `up --detach` and POST /runs: a priority and tenant (the order workers claim in), an idempotency
 * key (a repeated start returns the first run), and a debounce (a burst becomes one run, started
 * after a quiet period with the latest input). Checked here once, so every front door refuses the
 * same bad values with the same words.
 */
import { queue, runs, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { sha256Hex } from "../../json/index.ts"; // Bun's hasher: node:crypto would cost every process its load
import type { RunStatus } from "../core/index.ts";

export type QueueStartOptions = {
  /** Claimed before every request of a lower priority (an integer, default 0; higher first). */
  priority?: number;
  /** Whose run it is: within a priority, workers take turns between tenants, so none waits behind another's backlog. */
  tenant?: string;
  /** A repeated start with this key (within the window) returns the first run instead of starting another. */
  idempotencyKey?: string;
  /** How long the key is remembered, in ms (default 24 h). */
  idempotencyWindowMs?: number;
  /** Starts with this key (same workflow) while one waits become that one: it takes the latest input and starts `ms` after the last. */
  debounce?: { key: string; ms: number };
};

export const QUEUE_START_OPTIONS = ["priority", "tenant", "idempotencyKey", "idempotencyWindowMs", "debounce"] as const;

export const DEFAULT_IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** The longest idempotency key, tenant or debounce key accepted (as payment APIs bound theirs). */
export const MAX_KEY_LENGTH = 255;
/** Priorities are 32-bit integers. */
const PRIORITY_RANGE = 2 ** 31;

type Code = "INVALID_INPUT" | "INVALID_OPTION" | "USAGE";

/** A name (tenant, key) that must be a non-empty string of at most MAX_KEY_LENGTH characters. */
function checkName(value: unknown, option: string, code: Code, name: string): void {
  if (typeof value !== "string" || value.trim() === "" || value.length > MAX_KEY_LENGTH) {
    throw new SmithersError(code, `${name} must be a non-empty string of at most ${MAX_KEY_LENGTH} characters, got ${JSON.stringify(value)?.slice(0, 80)}`, {
      option,
    });
  }
}

/**
 * Refuses bad values with `code` (INVALID_INPUT over HTTP, INVALID_OPTION from the library, USAGE
 * from the CLI) before anything is written; `label` names an option as the caller spelled it.
 */
export function checkStartOptions(
  o: QueueStartOptions & { runId?: string; resume?: boolean },
  code: Code,
  label: (option: string) => string = (option) => option,
): void {
  if (o.resume && (o.debounce !== undefined || o.idempotencyKey !== undefined)) {
    throw new SmithersError(code, "A queued resume takes no debounce or idempotency key: those are for starting new runs");
  }
  if (o.debounce !== undefined && o.runId !== undefined) {
    throw new SmithersError(code, "debounce names its run by its key (a start may become an earlier waiting run); runId cannot be given with it");
  }
  if (o.priority !== undefined && !(Number.isInteger(o.priority) && Math.abs(o.priority) < PRIORITY_RANGE)) {
    throw new SmithersError(code, `${label("priority")} must be an integer (between -2^31 and 2^31), got ${JSON.stringify(o.priority)}`, {
      option: "priority",
    });
  }
  if (o.tenant !== undefined) checkName(o.tenant, "tenant", code, label("tenant"));
  if (o.idempotencyKey !== undefined) checkName(o.idempotencyKey, "idempotencyKey", code, label("idempotencyKey"));
  if (o.idempotencyWindowMs !== undefined && !(Number.isSafeInteger(o.idempotencyWindowMs) && o.idempotencyWindowMs > 0)) {
    throw new SmithersError(code, `${label("idempotencyWindowMs")} must be a whole number of ms > 0, got ${JSON.stringify(o.idempotencyWindowMs)}`, {
      option: "idempotencyWindowMs",
    });
  }
  if (o.debounce !== undefined) {
    const d = o.debounce as { key?: unknown; ms?: unknown };
    if (typeof d !== "object" || d === null) throw new SmithersError(code, `${label("debounce")} must be { key, ms }`, { option: "debounce" });
    checkName(d.key, "debounce", code, label("debounce.key"));
    if (!(typeof d.ms === "number" && Number.isSafeInteger(d.ms) && d.ms > 0)) {
      throw new SmithersError(code, `${label("debounce.ms")} must be a positive whole number of ms, got ${JSON.stringify(d.ms)}`, { option: "debounce" });
    }
  }
}

/** JSON with object keys sorted at every level, so the same request hashes the same however its keys were ordered. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The fingerprint an idempotency key is stored with: the whole start request, so a repeat with another one is told apart. */
export function startRequestHash(
  request: { workflow: string; input: unknown; runId?: string } & Omit<QueueStartOptions, "idempotencyKey" | "idempotencyWindowMs">,
): string {
  return sha256Hex(canonical(request));
}

/** What the admission needs of the options (undefined parts are left out, so a plain start pays for none). */
export function admissionOf(
  o: QueueStartOptions,
  request: Parameters<typeof startRequestHash>[0],
  defaultWindowMs = DEFAULT_IDEMPOTENCY_WINDOW_MS,
): Pick<queue.AdmissionOptions, "debounce" | "idempotency"> {
  return {
    ...(o.debounce ? { debounce: { key: o.debounce.key, ms: o.debounce.ms } } : {}),
    ...(o.idempotencyKey !== undefined
      ? { idempotency: { key: o.idempotencyKey, requestHash: startRequestHash(request), windowMs: o.idempotencyWindowMs ?? defaultWindowMs } }
      : {}),
  };
}

/**
 * Where the run an idempotency key started stands now: its status when it exists, `queued` while
 * its request waits (or is being claimed), `cancelled` when the request was dropped before it started.
 */
export async function startedRunStatus(db: SmithersDb, runId: string): Promise<"queued" | RunStatus> {
  const run = await runs.getRun(db, runId);
  if (run) return run.status as RunStatus;
  return (await queue.getRequest(db, runId)) ? "queued" : "cancelled";
}

/** IDEMPOTENCY_CONFLICT: the key started another request. */
export function idempotencyConflict(key: string, runId: string): SmithersError {
  return new SmithersError(
    "IDEMPOTENCY_CONFLICT",
    `Idempotency key "${key}" was used for a different start request (run "${runId}"); use a new key for a new request`,
    { runId },
  );
}
