/**
 * `<Memory>` and a task's `memory` prop: which namespaces an agent task recalls from before it
 * runs, what it may add to them, and how much recalled text its prompt may carry. Checked here,
 * at render; the engine does the recalling and retaining (engine/attempt/memory.ts).
 */
import { SmithersError } from "../errors/index.ts";
import { makeElement, type SmithersNode } from "./element.ts";
import { ACCEPTED_PROPS, checkProps, DIFFERENCES } from "./props.ts";

export const MEMORY_HOST = "smithers:memory";

type Scalar = string | number | boolean | null;

/** Metadata a chunk must carry to be recalled, and that a retained digest is given. */
export type MemoryTags = Record<string, Scalar>;

/** What the peer's `<Memory>` takes and this one does the same with. */
export type MemoryConfig = {
  /** One namespace of `_smithers_vectors` (the peer's "bank"). */
  bank?: string;
  /** Several namespaces, recalled together; a retained digest goes into the first. */
  banks?: readonly string[];
  /**
   * Metadata filters: `"key:value"` strings (`"branch:main"`) or an object of key -> value. Recall
   * returns only chunks whose metadata has every one; a retained digest is stored with them.
   */
  tags?: readonly string[] | MemoryTags;
  /** `"auto"` (default): the task's prompt is the query; a string: that query; false: no recall before the task. */
  recall?: "auto" | string | false;
  /** How many chunks recall fetches before the maxTokens cap (default 5). */
  k?: number;
  /** Upper bound on the injected block, counted as UTF-8 bytes (a token is at least one byte); default 2048. */
  maxTokens?: number;
  /** `"on-complete"`: a digest of the successful task's output is stored, in the output's transaction; `"off"` (default). */
  retain?: "on-complete" | "off";
  /** The task's tool context carries the memory, so `memoryTools` (remember, recall) given to its agent work. */
  tools?: boolean;
};

/** A task's memory, resolved from its prop or its `<Memory>`, as the engine uses it. */
export type TaskMemory = {
  namespaces: readonly string[];
  tags: MemoryTags;
  /** null: no recall before the task. */
  query: "auto" | string | null;
  k: number;
  maxTokens: number;
  retain: boolean;
  tools: boolean;
};

export type MemoryProps = MemoryConfig & { skipIf?: boolean; children?: SmithersNode };

export const DEFAULT_MEMORY_MAX_TOKENS = 2048;
export const DEFAULT_MEMORY_K = 5;

const KEYS = ["bank", "banks", "tags", "recall", "k", "maxTokens", "retain", "tools"] as const;
/** The peer's props that mean something only to its Hindsight service. */
const HINDSIGHT_ONLY = ["budget", "primers"] as const;

const bad = (where: string, message: string, prop: string) => new SmithersError("INVALID_MEMORY", `${where} memory: ${message}`, { where, prop });

function isScalar(value: unknown): value is Scalar {
  return value === null || ["string", "number", "boolean"].includes(typeof value);
}

function tagsOf(where: string, value: unknown): MemoryTags {
  const out: MemoryTags = {};
  if (Array.isArray(value)) {
    for (const tag of value) {
      const at = typeof tag === "string" ? tag.indexOf(":") : -1;
      if (at < 1) throw bad(where, `tags must be "key:value" strings, got ${JSON.stringify(tag)}`, "tags");
      const key = tag.slice(0, at);
      if (key in out && out[key] !== tag.slice(at + 1)) throw bad(where, `tags give "${key}" two values`, "tags");
      out[key] = tag.slice(at + 1);
    }
    return out;
  }
  if (typeof value !== "object" || value === null) throw bad(where, 'tags must be an array of "key:value" strings or an object of key -> value', "tags");
  for (const [key, v] of Object.entries(value)) {
    if (!isScalar(v)) throw bad(where, `tags.${key} must be a string, number, boolean or null`, "tags");
    out[key] = v;
  }
  return out;
}

function namespacesOf(where: string, raw: Record<string, unknown>): readonly string[] | undefined {
  if (raw.bank !== undefined && raw.banks !== undefined) throw bad(where, "give bank or banks, not both", "banks");
  const list = raw.bank !== undefined ? [raw.bank] : raw.banks;
  if (list === undefined) return undefined;
  if (!Array.isArray(list) || list.length === 0 || list.some((b) => typeof b !== "string" || b === "")) {
    throw bad(where, "bank must be a non-empty string, banks a non-empty array of them", raw.bank !== undefined ? "bank" : "banks");
  }
  return [...new Set(list as string[])];
}

/**
 * A configuration, checked, laid over the enclosing one (`parent`): omitted fields are inherited,
 * `bank`/`banks` replace the parent's selection. Hindsight-only props fail with UNSUPPORTED_PROP.
 */
export function mergeMemoryConfig(where: string, value: unknown, parent: MemoryConfig | undefined): MemoryConfig {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw bad(where, "must be an object like { bank, recall, retain }", "memory");
  const raw = value as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (raw[key] === undefined || (KEYS as readonly string[]).includes(key)) continue;
    const hindsight = (HINDSIGHT_ONLY as readonly string[]).includes(key);
    throw new SmithersError(
      "UNSUPPORTED_PROP",
      hindsight
        ? `${where} memory: "${key}" belongs to smithers-orchestrator's Hindsight service, which this memory (pgvector or SQLite vectors) does not have (see ${DIFFERENCES})`
        : `${where} memory has no field "${key}"; it takes ${KEYS.join(", ")}`,
      { where, prop: key, peerOnly: hindsight },
    );
  }
  const out: MemoryConfig = { ...parent };
  const namespaces = namespacesOf(where, raw);
  if (namespaces) {
    delete out.bank;
    out.banks = namespaces;
  }
  if (raw.tags !== undefined) out.tags = tagsOf(where, raw.tags);
  if (raw.recall !== undefined) {
    if (!(raw.recall === false || (typeof raw.recall === "string" && raw.recall !== "")))
      throw bad(where, 'recall must be "auto", a query string or false', "recall");
    out.recall = raw.recall;
  }
  for (const key of ["k", "maxTokens"] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (!(typeof v === "number" && Number.isSafeInteger(v) && v > 0)) throw bad(where, `${key} must be a positive whole number`, key);
    out[key] = v;
  }
  if (raw.retain !== undefined) {
    if (raw.retain !== "on-complete" && raw.retain !== "off") throw bad(where, 'retain must be "on-complete" or "off"', "retain");
    out.retain = raw.retain;
  }
  if (raw.tools !== undefined) {
    if (typeof raw.tools !== "boolean") throw bad(where, "tools must be true or false", "tools");
    out.tools = raw.tools;
  }
  return out;
}

/** The configuration a task runs with; at least one namespace is required once inherited. */
export function taskMemory(where: string, config: MemoryConfig): TaskMemory {
  const namespaces = config.banks ?? (config.bank === undefined ? undefined : [config.bank]);
  if (!namespaces || namespaces.length === 0) throw bad(where, "needs a bank (or banks): the namespace it recalls from and retains into", "bank");
  return {
    namespaces,
    tags: (config.tags as MemoryTags | undefined) ?? {},
    query: config.recall === false ? null : (config.recall ?? "auto"),
    k: config.k ?? DEFAULT_MEMORY_K,
    maxTokens: config.maxTokens ?? DEFAULT_MEMORY_MAX_TOKENS,
    retain: config.retain === "on-complete",
    tools: config.tools === true,
  };
}

/**
 * Gives every agent task inside it this memory configuration (a task's own `memory` prop replaces
 * it; a nested `<Memory>` inherits what it omits). The embedding model comes from
 * `createSmithers(schemas, { memory: { embedder } })`. See docs/guides/memory.md.
 * @example
 * <Memory bank="support" tags={["product:billing"]} retain="on-complete">
 *   <Task id="answer" output={outputs.answer} agent={agent}>{ctx.input.question}</Task>
 * </Memory>
 */
export function Memory(props: MemoryProps): SmithersNode {
  checkProps("Memory", props, ACCEPTED_PROPS.Memory);
  return props.skipIf ? null : makeElement(MEMORY_HOST, props);
}
