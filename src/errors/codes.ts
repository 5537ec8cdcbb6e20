/**
 * The error table: every code Smithers reports, declared once with its kind and what it means.
 * The CLI's exit code and the server's HTTP status come from the kind (ERROR_KINDS), and the
 * docs' error reference is generated from this table (scripts/docs-errors.ts), so a new code is
 * one line here. No imports: the dashboard bundles it too.
 */

/** What kind of failure a code is, and how each front door reports that kind. */
export const ERROR_KINDS = {
  /** The caller asked for something malformed or impossible; nothing was changed. */
  "bad-input": { http: 400, exit: 2 },
  /** Something the caller named does not exist. */
  "not-found": { http: 404, exit: 2 },
  /** The request is well-formed but the state refuses it now (already decided, ended, owned…). */
  conflict: { http: 409, exit: 2 },
  unauthorized: { http: 401, exit: 2 },
  forbidden: { http: 403, exit: 2 },
  "unsupported-media": { http: 415, exit: 2 },
  /** The request is larger than the server reads. */
  "too-large": { http: 413, exit: 2 },
  /** Something outside the request is not usable now (the database, a full queue): retry later. */
  unavailable: { http: 503, exit: 1 },
  /** The machine's set-up is wrong (a database file read-only, damaged or not a database): fix it, then run again. */
  environment: { http: 503, exit: 2 },
  /** A run (or a task in it) failed for this reason; the run's status says `failed`. */
  "run-failure": { http: 500, exit: 1 },
  /** A bug or broken state inside Smithers or its storage. */
  internal: { http: 500, exit: 1 },
} as const satisfies Record<string, { http: number; exit: number }>;

export type ErrorKind = keyof typeof ERROR_KINDS;

/** `aliasOf`: a former name, never raised; SmithersError.is and `catchErrors` take it for the code it names. */
type Entry = { kind: ErrorKind; summary: string; aliasOf?: string };

/** Every code: its kind and a one-line meaning (what the docs' error reference prints). */
export const ERROR_TABLE = {
  // input and authoring
  INVALID_INPUT: { kind: "bad-input", summary: "The run's input does not match the workflow's input schema." },
  INPUT_MISMATCH: { kind: "bad-input", summary: "A resume was given an input that differs from the stored one." },
  INVALID_RUN_ID: { kind: "bad-input", summary: "A new run was given a reserved id: empty, or starting with `_` (as `_server`)." },
  MISSING_OUTPUT: { kind: "bad-input", summary: "A `<Task>` or `<Subflow>` has no `output`." },
  DUPLICATE_ID: { kind: "bad-input", summary: "Two nodes of one workflow render with the same id." },
  INVALID_WORKFLOW: { kind: "bad-input", summary: "The workflow's tree is not one Smithers can run (rendering failed, a component misused)." },
  UNSUPPORTED_PROP: { kind: "bad-input", summary: "A component was given a prop Smithers does not support." },
  CONTEXT_OUTSIDE_WORKFLOW: { kind: "bad-input", summary: "`useCtx()` or a ctx method was called outside a workflow's render or task." },
  UNSUPPORTED_SCHEMA: { kind: "bad-input", summary: "An output schema uses a Zod type that has no column mapping." },
  CUSTOM_TABLE_INVALID: { kind: "bad-input", summary: "A Drizzle table given as an output lacks the columns Smithers needs." },
  OUTPUT_NOT_FOUND: { kind: "not-found", summary: "An output key or table named in a call is not one of the workflow's." },
  WORKFLOW_LOAD_FAILED: { kind: "not-found", summary: "A workflow file could not be loaded, or no workflow of that name is registered." },
  USAGE: { kind: "bad-input", summary: "A command line flag or argument is missing or malformed." },
  INVALID_OPTION: { kind: "bad-input", summary: "An option passed to a function or component is out of range or of the wrong type." },
  INVALID_LIMIT: {
    kind: "bad-input",
    summary: "A `limits` entry or `--limit` flag is malformed: an unknown option, or a limit that is not a whole number > 0.",
  },
  LIMIT_UNDECLARED: { kind: "bad-input", summary: "A task's `concurrencyKey` names a key with no declared limit (createSmithers `limits`, or `--limit`)." },
  INVALID_CRON: { kind: "bad-input", summary: "A cron expression or time zone does not parse." },
  CRON_EXISTS: { kind: "conflict", summary: "A cron schedule with that id exists already." },
  CRON_NOT_FOUND: { kind: "not-found", summary: "No cron schedule has that id." },
  // HTTP server
  UNAUTHORIZED: { kind: "unauthorized", summary: "The request lacks the server's bearer token, or carries a wrong one." },
  FORBIDDEN: { kind: "forbidden", summary: "A server without a token answered a request that is not loopback-to-loopback." },
  UNSUPPORTED_MEDIA_TYPE: { kind: "unsupported-media", summary: "A POST body is not `application/json`." },
  QUEUE_FULL: { kind: "unavailable", summary: "The server's run queue is at capacity; retry after `Retry-After` seconds." },
  BODY_TOO_LARGE: { kind: "too-large", summary: "A request body is over the server's limit (`serve --max-body`, default 1 MiB)." },
  TOKEN_TOO_SHORT: { kind: "bad-input", summary: "The server's bearer token has fewer than 16 characters; `serve` refuses to start." },
  TLS_REQUIRED: {
    kind: "bad-input",
    summary: "`serve` on a non-loopback host needs `--tls-cert`/`--tls-key`, or `--insecure-http` when a proxy terminates TLS.",
  },
  // execution
  INVALID_OUTPUT: { kind: "run-failure", summary: "A task's result does not match its output schema." },
  AGENT_FAILED: { kind: "run-failure", summary: "An agent call failed." },
  AGENT_REPLY_NOT_JSON: { kind: "run-failure", summary: "An agent's reply holds no JSON object for the task's output." },
  // agents, CLIs and tools
  AGENT_CLI_NOT_FOUND: { kind: "run-failure", summary: "The coding-agent CLI is not installed or not on PATH." },
  AGENT_CLI_EXIT: { kind: "run-failure", summary: "The coding-agent CLI exited with a non-zero status." },
  AGENT_AUTH_FAILED: { kind: "run-failure", summary: "The agent's provider refused its credentials; not retried." },
  AGENT_RATE_LIMITED: {
    kind: "run-failure",
    summary: "The agent's provider answered with a rate limit or an exhausted quota (429); retried after the delay it suggests (details.retryAfterMs).",
  },
  AGENT_MODEL_NOT_FOUND: { kind: "run-failure", summary: "The agent's provider does not know the model asked for; not retried." },
  AGENT_ROOT_REFUSED: { kind: "run-failure", summary: "The coding-agent CLI refused to skip its permission prompts as root; not retried." },
  AGENT_CLI_CRASHED: { kind: "run-failure", summary: "The coding-agent CLI died from a signal or crashed without a final record." },
  AGENT_STREAM_MALFORMED: { kind: "run-failure", summary: "A coding-agent CLI printed a stream Smithers could not read." },
  AGENT_TIMEOUT: { kind: "run-failure", summary: "An agent call took longer than its timeout." },
  REPLAY_EXHAUSTED: {
    kind: "run-failure",
    summary: "A replayed agent (`replayAgent`) was called more often than its transcript holds replies; record it again.",
  },
  REPLAY_MISMATCH: { kind: "run-failure", summary: "A replayed agent was called with a prompt its transcript does not hold; record it again." },
  TRANSCRIPT_INVALID: { kind: "bad-input", summary: "A recorded agent's transcript file is missing, or is not a transcript `recordAgent` wrote." },
  BUDGET_EXCEEDED: { kind: "run-failure", summary: "The run's agents spent its cost or token limit; raise it and resume." },
  BUDGET_UNPRICED: { kind: "run-failure", summary: "A cost limit is set but an agent reported tokens for a model with no price." },
  TOOL_INVALID_INPUT: { kind: "run-failure", summary: "A tool was called with input that fails its schema." },
  TOOL_PATH_OUTSIDE_ROOT: { kind: "run-failure", summary: "A file tool was asked for a path outside the run's root directory." },
  TOOL_FAILED: { kind: "run-failure", summary: "A tool's body threw." },
  TOOL_TIMEOUT: { kind: "run-failure", summary: "A tool call took longer than its timeout." },
  TOOL_OUTPUT_TOO_LARGE: { kind: "run-failure", summary: "A tool's output passed its size limit." },
  TOOL_CONTEXT_MISSING: { kind: "run-failure", summary: "A tool that needs a task's context was called outside a task." },
  TASK_FAILED: { kind: "run-failure", summary: "A task's body threw." },
  TASK_TIMEOUT: { kind: "run-failure", summary: "A task's attempt took longer than its `timeoutMs`." },
  TASK_CANCELLED: { kind: "run-failure", summary: "A task was stopped because its run was cancelled." },
  TASK_ABANDONED: { kind: "run-failure", summary: "A task's body did not settle within the grace period after being stopped." },
  TASK_CRASH_LOOP: { kind: "run-failure", summary: "A task's process died during it too many times in a row." },
  CACHE_KEY_FAILED: { kind: "run-failure", summary: "A task's `cache` key function threw; the task did not run." },
  APPROVAL_DENIED: { kind: "run-failure", summary: "An `<Approval>` was denied and its `onDeny` fails the run." },
  APPROVAL_NOT_FOUND: { kind: "not-found", summary: "No approval gate matches the run and node given." },
  APPROVAL_DECIDED: { kind: "conflict", summary: "The approval gate was decided already." },
  APPROVAL_AMBIGUOUS: { kind: "bad-input", summary: "The run waits at several gates: name the node." },
  APPROVAL_INVALID: { kind: "bad-input", summary: "An approval decision is malformed." },
  INVALID_TIMER: { kind: "bad-input", summary: "A `<Timer>` has no valid duration or until time." },
  SIGNAL_INVALID: { kind: "bad-input", summary: "A signal's payload fails the schema of the node waiting for it." },
  SIGNAL_AMBIGUOUS: { kind: "bad-input", summary: "A signal sent to a run that waits for it in several child runs: send it to one of them." },
  SIGNAL_TIMEOUT: { kind: "run-failure", summary: "A signal did not arrive before the wait's timeout." },
  HUMAN_REQUEST_NOT_FOUND: { kind: "not-found", summary: "No human request has that id." },
  HUMAN_REQUEST_CLOSED: { kind: "conflict", summary: "The human request was answered or closed already." },
  HUMAN_ANSWER_INVALID: { kind: "bad-input", summary: "A human task's answer fails its output schema (`fields` lists where)." },
  HUMAN_TASK_TIMEOUT: { kind: "run-failure", summary: "Nobody answered a human task before its timeout." },
  HUMAN_TASK_CANCELLED: { kind: "run-failure", summary: "A human task was closed because its run was cancelled." },
  RALPH_MAX_REACHED: {
    kind: "run-failure",
    summary: 'A `<Loop>` (or `<Ralph>`) with `onMaxReached="fail"` reached `maxIterations` without meeting its `until` condition.',
  },
  LOOP_MAX_REACHED: {
    kind: "run-failure",
    summary:
      "What `RALPH_MAX_REACHED` (smithers-orchestrator's code, raised instead) was called here before: never raised, still matched by `SmithersError.is` and `catchErrors`.",
    aliasOf: "RALPH_MAX_REACHED",
  },
  SAGA_FAILED: { kind: "run-failure", summary: "A saga step failed; its compensations ran." },
  SAGA_COMPENSATION_FAILED: { kind: "run-failure", summary: "A saga's compensation failed as well." },
  CONTINUATION_STATE_TOO_LARGE: { kind: "run-failure", summary: "The state handed to a continued run passes its size limit." },
  INVALID_CONTINUATION_STATE: { kind: "run-failure", summary: "The state handed to a continued run is not JSON." },
  WORKTREE_NOT_IN_REPO: { kind: "run-failure", summary: "A `<Worktree>` runs outside a git repository." },
  WORKTREE_INVALID: { kind: "run-failure", summary: "A `<Worktree>` path exists but is not a worktree of the repository, or is on another branch." },
  WORKTREE_FAILED: { kind: "run-failure", summary: "git could not create or update the worktree." },
  SANDBOX_UNAVAILABLE: {
    kind: "run-failure",
    summary:
      "A sandboxed task could not start its bubblewrap sandbox (no `bwrap`, `SMITHERS_BWRAP` naming no executable, no user namespaces, no `prlimit`); it is never run unsandboxed.",
  },
  SANDBOX_POLICY_UNSUPPORTED: {
    kind: "run-failure",
    summary:
      "A sandbox policy has a field Smithers cannot enforce, a bad value, or is set on a task that cannot run sandboxed (a subflow, an agent running in the engine's process).",
  },
  SANDBOX_FAILED: {
    kind: "run-failure",
    summary:
      "A sandboxed body threw, or its process ended before returning (a limit of its policy killed it); or a CLI agent failed in a sandbox without network.",
  },
  INVALID_SCORER: {
    kind: "bad-input",
    summary: "A task's `scorers` map is malformed: a binding without a scorer object, an unknown sampling type, a ratio outside 0..1, a bad timeoutMs.",
  },
  SCORER_FAILED: { kind: "run-failure", summary: "A scorer threw; recorded on its `_smithers_scorers` row, never failing the task or the run." },
  SCORER_TIMEOUT: { kind: "run-failure", summary: "A scorer did not settle within its timeout; recorded on its row, never failing the task or the run." },
  SCORER_INVALID_SCORE: {
    kind: "run-failure",
    summary: "A scorer returned a score that is not a number in 0..1; recorded on its row, never failing the task or the run.",
  },
  DEPENDENCY_DEADLOCK: { kind: "run-failure", summary: "Tasks wait on each other (or on a task that cannot run), so none can start." },
  SUBFLOW_FAILED: { kind: "run-failure", summary: "A `<Subflow>`'s child run failed." },
  SUBFLOW_WAITING: { kind: "run-failure", summary: "A `<Subflow>`'s child run stopped to wait (the parent waits with it)." },
  FILE_EXISTS: { kind: "conflict", summary: "A command would overwrite a file that exists (smithers init); --force overwrites it." },
  RUN_NOT_FOUND: { kind: "not-found", summary: "No run has that id." },
  // evals
  INVALID_EVAL_CASE: {
    kind: "bad-input",
    summary:
      "A line of `smithers eval --cases` is not a case (not a JSON object, an unknown field, a malformed assertion, a repeated id), or the file has none; nothing ran.",
  },
  EVAL_FAILED: { kind: "run-failure", summary: "One or more cases of `smithers eval` did not pass (the table says which and why)." },
  RUN_NOT_RESUMABLE: { kind: "conflict", summary: "The run cannot be resumed as asked (it continued as another run: resume that one)." },
  RUN_EXISTS: { kind: "conflict", summary: "A run (or a queued request) with that id exists already." },
  RUN_OWNED: { kind: "conflict", summary: "Another live process owns the run; its commits would be rejected." },
  RUN_STILL_RUNNING: { kind: "conflict", summary: "The run is running in a live process; stop it or wait." },
  RUN_ENDED: { kind: "conflict", summary: "The run has ended; it takes no more answers or signals." },
  ENGINE_ERROR: { kind: "internal", summary: "An unexpected failure inside Smithers (a bug: please report it)." },
  // storage
  DB_WRITE_FAILED: { kind: "unavailable", summary: "The database refused a write after retries (locked, full, or gone)." },
  DB_NESTED_TRANSACTION: { kind: "internal", summary: "A transaction was opened inside another on the same connection." },
  DB_CLOSED: { kind: "unavailable", summary: "The database connection was closed." },
  DB_SYNC_READ_UNSUPPORTED: { kind: "internal", summary: "A synchronous read was asked of a backend that has none (PostgreSQL)." },
  DB_UNAVAILABLE: { kind: "unavailable", summary: "The database cannot be reached." },
  DB_READ_ONLY: {
    kind: "environment",
    summary: "The database file (or its directory, or a -wal/-shm beside it) cannot be written by this user or file system.",
  },
  DB_NOT_A_DATABASE: { kind: "environment", summary: "The file given as the database is not a SQLite database." },
  DB_CORRUPT: { kind: "environment", summary: "The database file is damaged or cut short; restore a backup or try `sqlite3 FILE .recover`." },
  PORT_IN_USE: {
    kind: "environment",
    summary: "`serve`'s port (or `worker`/`supervise`'s `--metrics-port`) is taken by another process; stop it or pass another port (0 picks a free one).",
  },
  DB_OPEN_FAILED: {
    kind: "environment",
    summary: "The database cannot be opened or created there (a directory given as the file, a parent path that is a file).",
  },
  DB_UNREACHABLE: {
    kind: "environment",
    summary: "PostgreSQL did not answer the first connection, or refused its login or database: start the server or fix the URL.",
  },
  DB_UNSUPPORTED: { kind: "bad-input", summary: "The operation exists only on another backend (e.g. the Drizzle handle on SQLite)." },
  SCHEMA_DRIFT: { kind: "internal", summary: "Stored data does not have the shape its table promises." },
  INVALID_FRAME: { kind: "internal", summary: "A frame could not be encoded." },
  FRAME_NOT_FOUND: { kind: "not-found", summary: "The run has no frame of that number." },
  FRAME_CORRUPT: { kind: "internal", summary: "A stored frame or delta does not decode." },
  // time travel and code pinning
  WORKFLOW_CHANGED: { kind: "conflict", summary: "The workflow's code changed since the run ran; resume with `--allow-code-change`." },
  SIDE_EFFECT_BOUNDARY: { kind: "conflict", summary: "Going back would repeat side effects; pass `--force` to go on." },
  NODE_NOT_FOUND: { kind: "bad-input", summary: "The run has no node of that id." },
  RUN_NOT_REWINDABLE: { kind: "conflict", summary: "Only a finished, failed, cancelled or paused run can be rewound." },
  // queued starts: idempotency keys
  IDEMPOTENCY_CONFLICT: {
    kind: "conflict",
    summary:
      "An idempotency key was used again, within its window, for a different start request (another workflow, input or option); a new request needs a new key.",
  },
  // memory (embeddings in _smithers_vectors)
  MEMORY_EMBED_FAILED: { kind: "unavailable", summary: "The memory's embedding model failed or answered malformed embeddings; nothing was written." },
  MEMORY_DIMENSION_MISMATCH: {
    kind: "bad-input",
    summary: "Embeddings of a length other than the memory's `dimensions` or than its namespace's stored chunks; nothing was written.",
  },
  INVALID_MEMORY: {
    kind: "bad-input",
    summary:
      "A `<Memory>` or a task's `memory` prop has a bad value (no bank, bank and banks together, a malformed tag, recall, k, maxTokens, retain or tools).",
  },
  MEMORY_NOT_CONFIGURED: {
    kind: "bad-input",
    summary:
      "A task has memory but its workflow has no embedding model (`createSmithers(schemas, { memory: { embedder } })`), or memory was asked of a task that is not an agent task.",
  },
  MEMORY_AI_SDK_MISSING: { kind: "environment", summary: "Memory needs the `ai` package (an optional peer dependency) and it is not installed." },
} as const satisfies Record<string, Entry>;

export type SmithersErrorCode = keyof typeof ERROR_TABLE;

/** Every code, in the table's order. */
export const SMITHERS_ERROR_CODES = Object.keys(ERROR_TABLE) as SmithersErrorCode[];

/** The code `code` stands for: itself, or the code a former name (`aliasOf`) now goes by. */
export function canonicalCode(code: string): string {
  return (ERROR_TABLE as Record<string, Entry>)[code]?.aliasOf ?? code;
}

/** Whether an error with code `actual` answers a check for `wanted` (either may be a former name). */
export function codeMatches(actual: string, wanted: string): boolean {
  return canonicalCode(actual) === canonicalCode(wanted);
}

/** The kind of a code (ENGINE_ERROR's for a string that is none). */
export function errorKind(code: string): ErrorKind {
  return (ERROR_TABLE as Record<string, Entry>)[code]?.kind ?? "internal";
}

/** The HTTP status a code answers with. */
export function httpStatusOf(code: string): number {
  return ERROR_KINDS[errorKind(code)].http;
}

/** The exit code the CLI ends with for a code. */
export function exitCodeOf(code: string): number {
  return ERROR_KINDS[errorKind(code)].exit;
}
