import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { SmithersError } from "../../errors/index.ts";
import type { AgentGenerateArgs } from "../types.ts";

/** Options every CLI agent accepts. */
export type BaseCliAgentOptions = {
  /** The agent's id (default: the CLI's name, e.g. "claude"). */
  id?: string;
  /** The model, passed to the CLI's model flag. */
  model?: string;
  /** Instructions for the agent: the CLI's system-prompt flag where it has one, else put before the prompt. */
  systemPrompt?: string;
  /** Another name for `systemPrompt` (give one of them). */
  instructions?: string;
  /** The directory the CLI runs in; default: the call's `cwd` (the task's worktree or run root), else process.cwd(). */
  cwd?: string;
  /** Variables added to (or replacing) the inherited environment of the CLI. */
  env?: Record<string, string>;
  /** Skip the CLI's permission prompts (default true: nobody is there to answer them). */
  yolo?: boolean;
  /** Default total time limit of a call, in ms (a call's `timeout` overrides it). */
  timeoutMs?: number;
  /** Default limit on time without any output, in ms (a call's `timeout.idleMs` overrides it). */
  idleTimeoutMs?: number;
  /** The most of the CLI's output one call keeps in memory (reply text, a stdout line, stderr); default 8 MiB. */
  maxOutputBytes?: number;
  /** More arguments, appended after the ones the agent builds. */
  extraArgs?: string[];
  /** The CLI's configuration / login directory, set through its environment variable. */
  configDir?: string;
  /** An API key for the CLI, set through its environment variable. */
  apiKey?: string;
  /** The executable to run: a name looked up on PATH or a path (default: the CLI's usual name). */
  binary?: string;
};

export const BASE_OPTION_KEYS = [
  "id",
  "model",
  "systemPrompt",
  "instructions",
  "cwd",
  "env",
  "yolo",
  "timeoutMs",
  "idleTimeoutMs",
  "maxOutputBytes",
  "extraArgs",
  "configDir",
  "apiKey",
  "binary",
] as const;

/**
 * Refuses options this agent does not know (a misspelling, or another CLI's option that has no
 * flag here) and malformed limits, so that no option is silently ignored.
 */
export function checkOptions(agent: string, options: object, ownKeys: readonly string[]): void {
  const known = new Set<string>([...BASE_OPTION_KEYS, ...ownKeys]);
  const unknown = Object.keys(options).filter((key) => !known.has(key) && (options as Record<string, unknown>)[key] !== undefined);
  if (unknown.length > 0) {
    throw new SmithersError("INVALID_OPTION", `${agent} does not accept ${unknown.map((k) => `"${k}"`).join(", ")}: it has no such option`, {
      agent,
      options: unknown,
    });
  }
  const o = options as BaseCliAgentOptions;
  for (const key of ["timeoutMs", "idleTimeoutMs", "maxOutputBytes"] as const) {
    const value = o[key];
    if (value !== undefined && !(typeof value === "number" && Number.isFinite(value) && value > 0)) {
      throw new SmithersError("INVALID_OPTION", `${agent}: ${key} must be a positive number of ${key === "maxOutputBytes" ? "bytes" : "ms"}`, {
        agent,
        option: key,
      });
    }
  }
  if (o.systemPrompt !== undefined && o.instructions !== undefined && o.systemPrompt !== o.instructions) {
    throw new SmithersError("INVALID_OPTION", `${agent}: give systemPrompt or instructions (the same option), not two different texts`, { agent });
  }
}

/** The systemPrompt / instructions text, if any. */
export function systemPromptOf(options: BaseCliAgentOptions): string | undefined {
  return options.systemPrompt ?? options.instructions;
}

/** The prompt with the system prompt put before it, for a CLI without a system-prompt flag. */
export function withSystemPrompt(options: BaseCliAgentOptions, prompt: string): string {
  const system = systemPromptOf(options);
  return system === undefined || system === "" ? prompt : `${system}\n\n${prompt}`;
}

/** The call's limits: its own `timeout`, else the agent's `timeoutMs` / `idleTimeoutMs`. */
export function limitsOf(options: BaseCliAgentOptions, call: AgentGenerateArgs): { totalMs?: number; idleMs?: number } {
  const t = call.timeout;
  if (typeof t === "number") return { totalMs: t, idleMs: options.idleTimeoutMs };
  return { totalMs: t?.totalMs ?? options.timeoutMs, idleMs: t?.idleMs ?? options.idleTimeoutMs };
}

/** `base` (process.env by default; without unset entries) merged with `extra`. */
export function mergedEnv(extra: Record<string, string> | undefined, base: Readonly<Record<string, string | undefined>> = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) if (value !== undefined) env[key] = value;
  return { ...env, ...extra };
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The absolute path of `binary`: itself when it names a path (relative to `cwd`), else the
 * first executable of that name on the child's PATH. AGENT_CLI_NOT_FOUND when there is none.
 */
export function resolveBinary(agent: string, binary: string, env: Record<string, string>, cwd: string): string {
  if (binary.includes("/")) {
    const path = isAbsolute(binary) ? binary : resolve(cwd, binary);
    if (isExecutableFile(path)) return path;
  } else {
    for (const dir of (env.PATH ?? "").split(delimiter)) {
      const candidate = join(dir === "" ? cwd : resolve(cwd, dir), binary);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  throw new SmithersError(
    "AGENT_CLI_NOT_FOUND",
    `${agent}: the executable "${binary}" was not found${binary.includes("/") ? "" : " on PATH"}; install it or set the binary option`,
    {
      agent,
      binary,
      path: env.PATH,
    },
  );
}
