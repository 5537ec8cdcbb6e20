/**
 * The `cache` prop of a Task, checked at render: a value the engine cannot honour (an unknown
 * field, a scope it does not know, a negative ttl) fails the render instead of being ignored.
 */
import { SmithersError } from "../errors/index.ts";
import { isPlainObject } from "../json/index.ts";
import type { CacheScope, CacheSpec, PlanTask } from "./plan.ts";

const FIELDS: ReadonlySet<string> = new Set(["by", "version", "key", "ttlMs", "scope"]);
const SCOPES: ReadonlySet<string> = new Set<CacheScope>(["run", "workflow", "global"]);

/** The checked policy of `<Task id cache={value}>`. */
export function cacheSpecOf(id: string, value: unknown): CacheSpec {
  const fail = (problem: string) => new SmithersError("INVALID_WORKFLOW", `<Task id="${id}"> cache ${problem}`, { nodeId: id, prop: "cache" });
  if (!isPlainObject(value)) throw fail("must be an object { by?, version?, key?, ttlMs?, scope? }");
  for (const [field, v] of Object.entries(value)) {
    if (v !== undefined && !FIELDS.has(field)) throw fail(`has no field "${field}"; it takes ${[...FIELDS].join(", ")}`);
  }
  const { by, version, key, ttlMs, scope } = value;
  if (by !== undefined && typeof by !== "function") throw fail("by must be a function of ctx");
  if (version !== undefined && typeof version !== "string" && !(typeof version === "number" && Number.isFinite(version))) {
    throw fail("version must be a string or a finite number");
  }
  if (key !== undefined && (typeof key !== "string" || key === "")) throw fail("key must be a non-empty string");
  if (ttlMs !== undefined && !(typeof ttlMs === "number" && ttlMs >= 0)) throw fail("ttlMs must be a number of milliseconds >= 0 (or Infinity)");
  if (scope !== undefined && !(typeof scope === "string" && SCOPES.has(scope))) throw fail(`scope must be "run", "workflow" or "global"`);
  return {
    by: by as CacheSpec["by"],
    version: version as CacheSpec["version"],
    key: key as CacheSpec["key"],
    ttlMs: ttlMs === Infinity ? undefined : (ttlMs as number | undefined),
    scope: (scope as CacheScope | undefined) ?? "workflow",
  };
}

/**
 * What `<Workflow cache>` gives an agent task without its own `cache`: keyed by its prompt and
 * iteration (with the workflow, node, agents and schema signature every key has), never expiring.
 * Compute tasks get nothing: a function's result cannot be keyed without the author's `by`.
 */
export function workflowDefaultCache(task: PlanTask): CacheSpec | undefined {
  if (task.mode !== "agent") return undefined;
  const material = { prompt: task.prompt ?? "", iteration: task.iteration };
  return { by: () => material, version: undefined, key: undefined, ttlMs: undefined, scope: "workflow" };
}
