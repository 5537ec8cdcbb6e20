/** After SIGTERM to a CLI's process group, how long its members get before SIGKILL. */
export const KILL_GRACE_MS = 2_000;

/** How often a group being ended is checked for live members during the grace. */
export const GROUP_POLL_MS = 25;

/**
 * After the CLI exited and its group was ended, how long to wait for its stdout and stderr to
 * close before closing them ourselves (a process that left the group with setsid may hold them).
 */
export const STREAMS_CLOSE_MS = 1_000;

/** The default `maxOutputBytes`: the most of a CLI's output one call keeps in memory. */
export const DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024;

/** How much of stderr (its end) an AGENT_CLI_EXIT / AGENT_AUTH_FAILED error carries in its details. */
export const STDERR_TAIL_CHARS = 4_000;

/** How many "skipped a stdout line" notices one call sends to `onStderr`; the rest are only counted. */
export const MALFORMED_NOTICES = 10;

/**
 * Environment `opencode run` gets unless the user set the variable: without it OpenCode fetches
 * models.opencode.ai/api.json at every start (in the background, and hourly); with it, model data
 * comes from its cache or the snapshot built into the CLI.
 */
export const OPENCODE_QUIET_ENV = { OPENCODE_DISABLE_MODELS_FETCH: "1" } as const;

/**
 * Wording of a login / credential failure in a CLI's error result or stderr. Only text the CLI
 * reported as an error is tested, never the reply itself, so a reply that talks about logins is fine.
 */
export const AUTH_FAILURE_PATTERN =
  /invalid api key|incorrect api key|api key not valid|missing api key|no api key|please run \/login|run `?\w+ login|not logged in|log ?in again|authentication[_ ]failed|authentication_error|unauthenticated|unauthorized|status:? 401\b|oauth token (?:has )?(?:expired|been revoked)|refresh token|could not resolve authentication|auth method/i;

/**
 * Gemini CLI settings the agent adds under the user's own settings (gemini-settings.ts), so that
 * any setting of the user's overrides them: no usage statistics (otherwise every call logs to
 * play.googleapis.com and sends an installation id with each model request), and one attempt per
 * model request, so a refused or rate-limited request ends the call within seconds and the engine
 * retries it, after Google's suggested delay, instead of the CLI's own backoff (5 s doubling, up
 * to 10 attempts, the suggested delay ignored when shorter).
 */
export const GEMINI_QUIET_DEFAULTS = { privacy: { usageStatisticsEnabled: false }, general: { maxAttempts: 1 } } as const;

/** Codes a CLI agent throws that another attempt cannot fix: the engine never retries them. */
export const AGENT_NEVER_RETRY_CODES = [
  "AGENT_AUTH_FAILED",
  "AGENT_CLI_NOT_FOUND",
  "AGENT_MODEL_NOT_FOUND",
  "AGENT_ROOT_REFUSED",
  "INVALID_OPTION",
  "UNSUPPORTED_SCHEMA",
] as const;

/**
 * `codex exec` settings the agent passes (`-c key=value`) unless the user set them: without them
 * an offline Codex looks for ab.chatgpt.com and waits about 5 s at exit to flush analytics, and
 * starts a plugin sync (github.com, api.github.com, chatgpt.com).
 */
export const CODEX_QUIET_DEFAULTS = { "analytics.enabled": false, "features.plugins": false } as const;
