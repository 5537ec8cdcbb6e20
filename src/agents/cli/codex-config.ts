import { join } from "node:path";
import { SmithersError } from "../../errors/index.ts";
import { obj } from "./cli-agent.ts";
import { nodeOs } from "./process-group.ts";

export type CodexConfigValue = string | number | boolean | CodexConfigValue[] | { [key: string]: CodexConfigValue };

function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

/** A config value as the TOML `codex -c` parses (strings quoted, inline arrays and tables). */
export function toToml(value: CodexConfigValue, key: string): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => toToml(v, key)).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${tomlKey(k)} = ${toToml(v, key)}`)
      .join(", ")} }`;
  }
  throw new SmithersError("INVALID_OPTION", `CodexAgent: config "${key}" has a value TOML cannot hold (${String(value)})`, { option: "config", key });
}

/** Dotted key -> value for every leaf of a (parsed TOML or `config` option) table; dotted keys in it are split. */
function flatten(table: Record<string, unknown>, prefix = "", into = new Map<string, unknown>()): Map<string, unknown> {
  for (const [key, value] of Object.entries(table)) {
    const path = prefix === "" ? key : `${prefix}.${key}`;
    const inner = obj(value);
    if (inner && Object.keys(inner).length > 0) flatten(inner, path, into);
    else into.set(path, value);
  }
  return into;
}

async function readToml(path: string): Promise<Record<string, unknown>> {
  const { readFile } = await import("node:fs/promises");
  const text = await readFile(path, "utf8").catch(() => undefined);
  if (text === undefined) return {};
  try {
    return obj(Bun.TOML.parse(text)) ?? {};
  } catch {
    // Codex itself reports a config.toml it cannot parse; here it only sets nothing.
    return {};
  }
}

/** A `-c` value as Codex reads it: TOML, else the text itself. */
function tomlValue(text: string): unknown {
  try {
    return obj(Bun.TOML.parse(`v = ${text}`))?.v ?? text;
  } catch {
    return text;
  }
}

/** The `-c key=value` / `--enable name` / `--disable name` / `--model m` / `--profile p` settings among extra arguments. */
function fromArgs(args: readonly string[]): Map<string, unknown> {
  const found = new Map<string, unknown>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flagName, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => inline ?? args[++i] ?? "";
    if (flagName === "-c" || flagName === "--config") {
      const setting = value();
      const eq = setting.indexOf("=");
      if (eq > 0) found.set(setting.slice(0, eq).trim(), tomlValue(setting.slice(eq + 1)));
    } else if (flagName === "--enable" || flagName === "--disable") {
      found.set(`features.${value()}`, flagName === "--enable");
    } else if (flagName === "-m" || flagName === "--model") {
      found.set("model", value());
    } else if (flagName === "-p" || flagName === "--profile") {
      found.set("profile", value());
    }
  }
  return found;
}

/** What the user's own Codex configuration sets, as far as the agent needs to know. */
export type CodexUserSettings = {
  /** Whether the user set `key` (or a table holding it) anywhere the agent looks. */
  sets: (key: string) => boolean;
  /** The model Codex will ask for, when the user's settings name one. */
  model?: string;
};

/**
 * The settings of one `codex exec` call as the user gave them, lowest layer first:
 * `$CODEX_HOME/config.toml` (default `~/.codex`), the profile (`[profiles.<p>]` there and
 * `$CODEX_HOME/<p>.config.toml`), the agent's `config` option, then `extraArgs`.
 */
export async function codexUserSettings(input: {
  codexHome: string | undefined;
  config: Record<string, CodexConfigValue> | undefined;
  extraArgs: readonly string[] | undefined;
  profile: string | undefined;
  model: string | undefined;
}): Promise<CodexUserSettings> {
  const home = input.codexHome ?? join(nodeOs().homedir(), ".codex");
  const base = await readToml(join(home, "config.toml"));
  const args = fromArgs(input.extraArgs ?? []);
  const option = flatten(input.config ?? {});
  const profile = [args.get("profile"), input.profile, option.get("profile"), base.profile].find((p): p is string => typeof p === "string");
  const layers = [flatten(base)];
  if (profile !== undefined) {
    layers.push(flatten(obj(obj(base.profiles)?.[profile]) ?? {}));
    layers.push(flatten(await readToml(join(home, `${profile}.config.toml`))));
  }
  layers.push(option, args);
  const keys = layers.flatMap((layer) => [...layer.keys()]);
  const model = [input.model, ...[...layers].reverse().map((layer) => layer.get("model"))].find((m): m is string => typeof m === "string");
  return {
    sets: (key) => keys.some((k) => k === key || key.startsWith(`${k}.`) || k.startsWith(`${key}.`)),
    ...(model !== undefined ? { model } : {}),
  };
}
