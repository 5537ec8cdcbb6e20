/**
 * createSmithers: schemas in, typed authoring kit out (components, `outputs`, generated
 * `tables`, the Drizzle `db`), and `smithers(build)` to wrap a build function as a workflow.
 */
import { checkPricing, type ModelPricing } from "../../agents/index.ts";
import { checkBudget, checkLimits, DEFAULT_DB_PATH, type Budget, type Limits } from "../core/index.ts";
import { frameLocation, SmithersError } from "../../errors/index.ts";
import type { z } from "zod";
import {
  checkDurability,
  adoptOpenDb,
  databaseKey,
  openSmithersDb,
  OutputRegistry,
  type Drizzle,
  type Durability,
  SqliteDb,
  type MigrationReport,
  type OutputTarget,
  type SmithersDb,
  type SQLiteTable,
} from "../../db/index.ts";
import { components, ContinueAsNew, continueAsNew, Memory, Sandbox, Saga, SagaStep, TryCatchFinally, Worktree, type SmithersNode } from "../../jsx/index.ts";
import type { WorkflowMemoryOptions } from "../../memory/index.ts";
import { useCtx, type SmithersCtx } from "./ctx.ts";

type Schemas = Record<string, z.ZodObject | SQLiteTable>;

type InputOf<S extends Schemas> = S extends { input: infer I } ? (I extends z.ZodObject ? z.infer<I> : unknown) : Record<string, unknown>;

// biome-ignore lint/suspicious/noExplicitAny: the default admits a workflow of any input (ctx.input is contravariant in build)
export type SmithersWorkflow<Input = any> = {
  readonly kind: "smithers.workflow";
  /** Filled from `<Workflow name>` on first render; the file name until then. */
  name: string;
  readonly build: (ctx: SmithersCtx<Input>) => SmithersNode;
  readonly registry: OutputRegistry;
  /**
   * Which output's rows are this workflow's result when it runs as a `<Subflow>` child
   * (`smithers(build, { output })`); without it, the child's RunResult.output.
   */
  readonly output?: OutputTarget;
  /** The database at `path` (default: the one from createSmithers), tables created and migrated. */
  dbFor(path?: string): SmithersDb;
  /** createSmithers' durability: what a run commits with unless runWorkflow says otherwise (the connection may be shared). */
  readonly durability?: Durability;
  /** createSmithers' spend limits and prices: what a run gets unless runWorkflow says otherwise. */
  readonly spend?: { budget: Budget; pricing?: ModelPricing };
  /** createSmithers' limits by key: what a task's `concurrencyKey` runs under (RunOptions.limits overrides). */
  readonly limits?: Limits;
  /** createSmithers' memory: the embedding model behind the workflow's `<Memory>` and `memory` props. */
  readonly memory?: WorkflowMemoryOptions;
  /**
   * The file that called `smithers(...)`, when the stack tells: whose code a run started without
   * `workflowPath` is pinned to. A helper that returns `smithers(...)` as its last act leaves no
   * frame (a tail call), so the helper's caller is named; the helper is hashed as its import.
   */
  readonly sourcePath?: string;
};

/**
 * The file of the frame under `callee` on the stack: the module that called smithers(). Only that
 * one frame is captured (Error.captureStackTrace cuts `callee` and what it called), so no frame of
 * ours is formatted: from the bundle, formatting one reads the bundle's source map, a few ms of
 * every process that defines a workflow.
 */
function callerFile(callee: (...args: never[]) => unknown): string | undefined {
  const holder: { stack?: string } = {};
  const limit = Error.stackTraceLimit;
  try {
    Error.stackTraceLimit = 1;
    Error.captureStackTrace(holder, callee);
  } finally {
    Error.stackTraceLimit = limit;
  }
  const frame = (holder.stack ?? "").split("\n").find((line) => /^\s+at /.test(line));
  return frame === undefined ? undefined : frameLocation(frame)?.file;
}

export type CreateSmithersOptions = {
  /** Where runs are stored: a SQLite file path (or ":memory:") or a postgres:// URL. Default: SMITHERS_DATABASE_URL, else ./smithers.db. */
  db?: string;
  /** The same as `db` (the older name). */
  dbPath?: string;
  /** Called with the migration report when a table's type changed or a column was dropped from a schema. */
  onSchemaDrift?: (report: MigrationReport) => void;
  /** What a commit survives: "process" (default: kill -9) or "power" (also power loss, slower commits). */
  durability?: Durability;
  /** Default spend limit of each run, in US dollars (see RunOptions.maxCostUsd). */
  maxCostUsd?: number;
  /** Default token limit of each run (see RunOptions.maxTokens). */
  maxTokens?: number;
  /** Prices by model id, for agents that report tokens but no cost (see RunOptions.pricing). */
  pricing?: ModelPricing;
  /**
   * Limits shared by every run and process of the database, by key: `concurrency` (tasks at once),
   * `perMinute` (starts per sliding minute), `tokensPerMinute` (agent tokens per sliding minute).
   * A `<Task concurrencyKey>` names a key (or `prefix:anything`, under the `prefix` entry).
   * @example createSmithers(schemas, { limits: { anthropic: { concurrency: 2, perMinute: 50 } } })
   */
  limits?: Limits;
  /**
   * The embedding model behind `<Memory>` and tasks' `memory` props. Chunks live in the run's own
   * database (`_smithers_vectors`), so a retained digest commits with the task's output.
   * @example createSmithers(schemas, { memory: { embedder: openai.embedding("text-embedding-3-small") } })
   */
  memory?: WorkflowMemoryOptions;
};

function checkMemoryOptions(memory: WorkflowMemoryOptions | undefined): WorkflowMemoryOptions | undefined {
  if (memory === undefined) return undefined;
  if (typeof memory !== "object" || memory === null || !memory.embedder) {
    throw new SmithersError("INVALID_OPTION", "createSmithers: memory must be { embedder, dimensions?, maxRetries? } with an AI SDK embedding model");
  }
  const { dimensions } = memory;
  if (dimensions !== undefined && !(Number.isInteger(dimensions) && dimensions > 0))
    throw new SmithersError("INVALID_OPTION", "createSmithers: memory.dimensions must be a whole number > 0");
  return memory;
}

function warnDrift(report: MigrationReport): void {
  for (const c of report.typeChanges) {
    console.warn(`smithers: column ${c.table}.${c.column} is ${c.actual} on disk but ${c.expected} in the schema; not changed (migrate it by hand)`);
  }
  for (const c of report.removed) {
    console.warn(`smithers: column ${c.table}.${c.column} is no longer in the schema; kept on disk`);
  }
}

export function isSmithersWorkflow(value: unknown): value is SmithersWorkflow {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "smithers.workflow";
}

/** @example const { Workflow, Task, smithers, outputs } = createSmithers({ analysis: z.object({ summary: z.string() }) }); */
export function createSmithers<S extends Schemas>(schemas: S, options: CreateSmithersOptions = {}) {
  const registry = new OutputRegistry(schemas);
  const databases = new Map<string, SmithersDb>();
  const reportDrift = options.onSchemaDrift ?? warnDrift;
  const durability = options.durability === undefined ? undefined : checkDurability(options.durability);
  const budget = checkBudget(options);
  const pricing = checkPricing(options.pricing);
  const spend = { budget, ...(pricing ? { pricing } : {}) };
  const limits = checkLimits(options.limits);
  const memory = checkMemoryOptions(options.memory);
  // The CLI passes --db (or SMITHERS_DB_PATH) to runWorkflow as dbPath; SMITHERS_DATABASE_URL moves a whole deployment to PostgreSQL.
  const defaultPath = options.db || options.dbPath || process.env.SMITHERS_DATABASE_URL || DEFAULT_DB_PATH;

  // One connection per database per process: a database the server, a worker or another
  // workflow has open is adopted (and this workflow's output tables created on it).
  const dbFor = (path: string = defaultPath): SmithersDb => {
    const key = databaseKey(path) ?? path;
    let db = databases.get(key);
    if (!db || db.isClosed) {
      db = adoptOpenDb(path) ?? openSmithersDb(path, { durability });
      const drift = (report: MigrationReport) => {
        if (report.typeChanges.length > 0 || report.removed.length > 0) reportDrift(report);
      };
      // SQLite migrates at once (an error throws here); PostgreSQL in the background, and the
      // database holds every other operation until it is done (a failure fails them).
      const report = db.ensureOutputTables([registry.input, ...registry.all()]);
      if (report instanceof Promise) report.then(drift, () => undefined);
      else drift(report);
      databases.set(key, db);
    }
    return db;
  };
  const outputs = Object.fromEntries(Object.entries(schemas).filter(([k]) => k !== "input")) as Omit<S, "input">;
  const tables = Object.fromEntries(registry.all().map((i) => [i.key, i.table])) as Record<Exclude<keyof S, "input">, SQLiteTable>;

  function smithers(build: (ctx: SmithersCtx<InputOf<S>>) => SmithersNode, opts: { name?: string; output?: OutputTarget } = {}): SmithersWorkflow<InputOf<S>> {
    if (opts.output !== undefined) registry.resolve(opts.output); // an unknown target fails here, not in the parent's run
    const sourcePath = callerFile(smithers);
    return {
      kind: "smithers.workflow",
      name: opts.name ?? "workflow",
      build,
      registry,
      dbFor,
      spend,
      limits,
      ...(memory ? { memory } : {}),
      ...(durability ? { durability } : {}),
      ...(sourcePath ? { sourcePath } : {}),
      ...(opts.output !== undefined ? { output: opts.output } : {}),
    };
  }

  return {
    ...components,
    TryCatchFinally,
    Saga,
    SagaStep,
    ContinueAsNew,
    continueAsNew,
    Worktree,
    Sandbox,
    Memory,
    /** The ctx of the render in progress, typed with this workflow's input (see useCtx). */
    useCtx: (): SmithersCtx<InputOf<S>> => useCtx<InputOf<S>>(),
    smithers,
    outputs,
    tables,
    inputTable: registry.input.table,
    registry,
    /** The Drizzle database (opened, tables migrated, on first access). */
    get db(): Drizzle {
      const db = dbFor();
      if (db instanceof SqliteDb) return db.db;
      throw new SmithersError("DB_UNSUPPORTED", "createSmithers().db is the SQLite Drizzle database; on PostgreSQL query the tables with your own client");
    },
    get smithersDb(): SmithersDb {
      return dbFor();
    },
  };
}
