/**
 * `defineTool`: an AI SDK tool whose every call is journaled in `_smithers_tool_calls`, with a
 * stable idempotency key and, for side-effect tools, replay protection across retries and resumes.
 */
import type { z } from "zod";
import { SmithersError, describeThrown, toSafeJson } from "../errors/index.ts";
import { formatZodIssues } from "../schema/index.ts";
import { hashJson } from "../json/index.ts";
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TOOL_TIMEOUT_MS } from "./constants.ts";
import { getToolContext, nextCallIndex, type ToolContext } from "./context.ts";
import { outcomeUnknown, previousCall, recordedCall, recordedOutcome, recordedResult, throwIfStopped, type CallScope } from "./recorded-call.ts";

/**
 * A tool as `defineTool` makes it: the shape of an AI SDK tool (the SDK's `tool()` is the identity),
 * declared here so Smithers needs no `ai` package of its own; an AI SDK agent (ai 6 or 7) takes it
 * in its `tools` as it is. `inputSchema` is the Zod schema, which the SDK reads as a Standard Schema.
 */
export type DefinedTool<I, O> = {
  description: string;
  inputSchema: z.ZodType<I>;
  execute: (input: I, options?: { abortSignal?: AbortSignal }) => Promise<O>;
};

/** What a tool's `execute` is given besides its arguments. */
export type ToolCallContext = Pick<ToolContext, "runId" | "nodeId" | "iteration" | "attempt" | "rootDir" | "signal"> & {
  /**
   * `${runId}:${nodeId}:${iteration}:${toolName}:${inputDigest}:${n}`, n counting the attempt's
   * earlier calls of this tool with the same input: the same on a retry or resume that asks for
   * the same operation, whatever the order; another input is another key.
   * Pass it to external systems that deduplicate (payment APIs, queues).
   */
  idempotencyKey: string;
  /**
   * An earlier call under this key recorded its start and never its outcome (the process died
   * during it): it may or may not have happened. Ask the external system before acting again.
   */
  uncertain: boolean;
  maxOutputBytes: number;
  timeoutMs: number;
};

export type DefineToolOptions<S extends z.ZodType, O> = {
  name: string;
  description?: string;
  schema: S;
  /** The tool changes something outside the conversation (files, a service): journaled durably and never run twice for the same key and input. Default false. */
  sideEffect?: boolean;
  /** Running it twice with the same input does no more harm than once. Metadata for callers; default true. */
  idempotent?: boolean;
  execute(args: z.output<S>, ctx: ToolCallContext): O | Promise<O>;
  /**
   * Undoes one call's effect (a side-effect tool): `smithers rewind` runs it, newest call first,
   * for each call of this tool it is about to discard, before anything is discarded. A revert
   * that throws keeps the rewind from crossing that call. It may run again for the same call if
   * the process dies before the call is marked reverted: make it idempotent.
   */
  revert?(args: z.output<S>, ctx: ToolRevertContext<O>): void | Promise<void>;
};

/** What a tool's `revert` is given besides the call's arguments. */
export type ToolRevertContext<O = unknown> = {
  runId: string;
  nodeId: string;
  iteration: number;
  attempt: number;
  /** The call's key, as its `execute` was given it. */
  idempotencyKey: string;
  /** `succeeded`: the call returned `output`; `unknown`: its process died during it, it may or may not have happened. */
  outcome: "succeeded" | "unknown";
  output: O | undefined;
};

export type DefinedToolMetadata = { name: string; sideEffect: boolean; idempotent: boolean };

const metadata = new WeakMap<object, DefinedToolMetadata>();

type RevertFn = (args: unknown, ctx: ToolRevertContext) => void | Promise<void>;

/** Reverts by tool name, of every tool defined in this process (a workflow's module defines its tools when loaded). */
const reverts = new Map<string, RevertFn>();

/**
 * The `revert` of the tool named `name` defined in this process, or undefined.
 * @example await toolRevert("shop.place_order")?.(args, ctx);
 */
export function toolRevert(name: string): RevertFn | undefined {
  return reverts.get(name);
}

/**
 * Smithers' metadata of a tool made by `defineTool`, or undefined for any other tool.
 * @example
 * getDefinedToolMetadata(tools.bash); // { name: "bash", sideEffect: true, idempotent: false }
 */
export function getDefinedToolMetadata(value: unknown): DefinedToolMetadata | undefined {
  return typeof value === "object" && value !== null ? metadata.get(value) : undefined;
}

/**
 * An AI SDK tool (give it to any `ToolLoopAgent` in `tools: {...}`) with Smithers' guarantees.
 * Inside a task (`runWithToolContext`, which the engine sets up around each agent attempt) every
 * call is a row in `_smithers_tool_calls`: `started` before it runs (committed with an fsync for
 * a side-effect tool), then `succeeded` or `failed` with the output or error; a call whose input
 * fails the schema is a `failed` row with TOOL_INVALID_INPUT. Before a side-effect call runs, the
 * latest call under the same idempotency key is looked up: if it succeeded with the same input,
 * its output is returned without running and the call is recorded as `replayed`; if it only
 * started, the call runs with `uncertain: true`; otherwise (none, failed, other input) it runs.
 * Errors other than SmithersErrors are wrapped as TOOL_FAILED (cause kept).
 *
 * Outside a task there is no journal: a tool without side effects runs unrecorded (rootDir is
 * the process's cwd, the key random), while a side-effect tool throws TOOL_CONTEXT_MISSING,
 * because with nothing to record its intent in it could not keep its exactly-once promise.
 *
 * The agent loop validates arguments against `schema` before calling; execute validates them
 * again (direct calls), so the schema should validate without transforming.
 * @example
 * const placeOrder = defineTool({
 *   name: "shop.place_order",
 *   description: "Place an order",
 *   schema: z.object({ sku: z.string() }),
 *   sideEffect: true,
 *   idempotent: false,
 *   execute: (args, ctx) => shop.order({ sku: args.sku, idempotencyKey: ctx.idempotencyKey }),
 * });
 * const agent = new ToolLoopAgent({ model, tools: { placeOrder } });
 */
export function defineTool<S extends z.ZodType, O>(options: DefineToolOptions<S, O>): DefinedTool<z.output<S>, O> {
  if (!options.name) throw new SmithersError("INVALID_WORKFLOW", "defineTool needs a name");
  const meta: DefinedToolMetadata = { name: options.name, sideEffect: options.sideEffect ?? false, idempotent: options.idempotent ?? true };
  if (options.revert !== undefined) {
    if (typeof options.revert !== "function") throw new SmithersError("INVALID_WORKFLOW", `defineTool "${options.name}": revert must be a function`);
    if (!meta.sideEffect) throw new SmithersError("INVALID_WORKFLOW", `defineTool "${options.name}": revert is for tools with sideEffect: true`);
    reverts.set(options.name, options.revert as RevertFn);
  }
  const defined: DefinedTool<z.output<S>, O> = {
    description: options.description ?? options.name,
    // Read from the options when asked: a built-in tool's options build the schema on first use (lazySchema).
    get inputSchema() {
      return options.schema as z.ZodType<z.output<S>>;
    },
    execute: (input, execution) => callTool(options, meta, input, execution?.abortSignal),
  };
  metadata.set(defined, meta);
  return defined;
}

/**
 * A schema built on its first use, for the options of a built-in tool (`get schema() { return input(); }`):
 * building zod objects is a cost of every process that imports the package, and most call no tool.
 */
export function lazySchema<S extends z.ZodType>(make: () => S): () => S {
  let schema: S | undefined;
  return () => (schema ??= make());
}

/** 12 hex digits of SHA-256 over the input's JSON with sorted keys. */
export function inputDigest(input: unknown): string {
  return hashJson(input).slice(0, 12);
}

async function callTool<O>(options: DefineToolOptions<z.ZodType, O>, meta: DefinedToolMetadata, raw: unknown, callSignal?: AbortSignal): Promise<O> {
  const tc = getToolContext();
  const signals = [tc?.signal, callSignal].filter((s): s is AbortSignal => s !== undefined);
  const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  if (!tc) return callUnscoped(options, meta, raw, signal);
  // The key names the operation: the tool, its input, and how many identical calls came before in
  // the attempt (counted before any await, so parallel calls are numbered in the order made). A
  // different input is another operation with another key, whatever order a retry calls them in.
  const digest = inputDigest(raw);
  const n = nextCallIndex(tc, `${meta.name}:${digest}`);
  const key = `${tc.runId}:${tc.nodeId}:${tc.iteration}:${meta.name}:${digest}:${n}`;
  const scope: CallScope = { ...pick(tc), now: tc.now ?? Date.now, onRecorded: tc.onRecorded, signal };
  throwIfStopped(scope, `Tool "${meta.name}"`);
  const call = { toolName: meta.name, sideEffect: meta.sideEffect, idempotencyKey: key };
  const parsed = await options.schema.safeParseAsync(raw);
  if (!parsed.success) {
    const error = invalidInput(meta.name, parsed.error, tc);
    await recordedOutcome(scope, { ...call, input: toSafeJson(raw) }, { status: "failed", error });
    throw error;
  }
  const input = parsed.data;
  let uncertain = false;
  if (meta.sideEffect) {
    const previous = await previousCall(tc.db, key);
    const recorded = recordedResult(previous);
    if (recorded && previous?.inputJson === JSON.stringify(input)) {
      await recordedOutcome(scope, { ...call, input }, { status: "replayed", output: recorded.output });
      return recorded.output as O;
    }
    uncertain = outcomeUnknown(previous);
  }
  const ctx = callContext(tc, { idempotencyKey: key, uncertain, signal });
  return recordedCall(scope, { ...call, input }, () => runBody(options, input, ctx));
}

async function callUnscoped<O>(options: DefineToolOptions<z.ZodType, O>, meta: DefinedToolMetadata, raw: unknown, signal: AbortSignal | undefined): Promise<O> {
  if (meta.sideEffect) {
    throw new SmithersError(
      "TOOL_CONTEXT_MISSING",
      `Tool "${meta.name}" has side effects and was called outside a Smithers task (no runWithToolContext): it cannot be journaled or protected from running twice`,
      { toolName: meta.name },
    );
  }
  throwIfStopped({ signal, nodeId: "", attempt: 0 }, `Tool "${meta.name}"`);
  const parsed = await options.schema.safeParseAsync(raw);
  if (!parsed.success) throw invalidInput(meta.name, parsed.error, undefined);
  const ctx = callContext(undefined, { idempotencyKey: `unscoped:${meta.name}:${crypto.randomUUID()}`, uncertain: false, signal });
  return runBody(options, parsed.data, ctx);
}

function pick(tc: ToolContext) {
  return { db: tc.db, runId: tc.runId, nodeId: tc.nodeId, iteration: tc.iteration, attempt: tc.attempt };
}

function callContext(tc: ToolContext | undefined, call: { idempotencyKey: string; uncertain: boolean; signal: AbortSignal | undefined }): ToolCallContext {
  return {
    idempotencyKey: call.idempotencyKey,
    runId: tc?.runId ?? "",
    nodeId: tc?.nodeId ?? "",
    iteration: tc?.iteration ?? 0,
    attempt: tc?.attempt ?? 0,
    rootDir: tc?.rootDir ?? process.cwd(),
    ...(call.signal === undefined ? {} : { signal: call.signal }),
    uncertain: call.uncertain,
    maxOutputBytes: tc?.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    timeoutMs: tc?.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
  };
}

async function runBody<O>(options: DefineToolOptions<z.ZodType, O>, input: unknown, ctx: ToolCallContext): Promise<O> {
  try {
    return await options.execute(input, ctx);
  } catch (error) {
    if (SmithersError.is(error)) throw error;
    throw new SmithersError("TOOL_FAILED", `Tool "${options.name}" failed: ${describeThrown(error)}`, {
      toolName: options.name,
      ...(ctx.nodeId ? { nodeId: ctx.nodeId, attempt: ctx.attempt } : {}),
      cause: error,
    });
  }
}

function invalidInput(name: string, error: z.ZodError, tc: ToolContext | undefined): SmithersError {
  return new SmithersError("TOOL_INVALID_INPUT", `Tool "${name}" got invalid input: ${formatZodIssues(error.issues, "; ")}`, {
    toolName: name,
    ...(tc ? { nodeId: tc.nodeId, attempt: tc.attempt } : {}),
  });
}
