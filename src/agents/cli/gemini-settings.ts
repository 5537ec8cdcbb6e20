/**
 * Gemini CLI's settings for one call, given as its system defaults (GEMINI_CLI_SYSTEM_DEFAULTS_PATH):
 * the lowest of its settings layers, under the user's (~/.gemini/settings.json), the workspace's
 * (.gemini/settings.json) and the system's, so a user's own setting always wins. A system-defaults
 * file the machine already has is merged over ours, not replaced.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

type Settings = Record<string, unknown>;

/** Where Gemini CLI reads its system settings, as the CLI decides it. */
function systemSettingsPath(env: Record<string, string>): string {
  if (env.GEMINI_CLI_SYSTEM_SETTINGS_PATH) return env.GEMINI_CLI_SYSTEM_SETTINGS_PATH;
  if (process.platform === "darwin") return "/Library/Application Support/GeminiCli/settings.json";
  if (process.platform === "win32") return "C:\\ProgramData\\gemini-cli\\settings.json";
  return "/etc/gemini-cli/settings.json";
}

/** The system-defaults file the CLI would read without us. */
export function systemDefaultsPath(env: Record<string, string>): string {
  return env.GEMINI_CLI_SYSTEM_DEFAULTS_PATH || join(dirname(systemSettingsPath(env)), "system-defaults.json");
}

function isRecord(value: unknown): value is Settings {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `over` merged onto `under`, object by object (`over`'s values win). */
export function mergeSettings(under: Settings, over: Settings): Settings {
  const out: Settings = { ...under };
  for (const [key, value] of Object.entries(over)) {
    const below = out[key];
    out[key] = isRecord(below) && isRecord(value) ? mergeSettings(below, value) : value;
  }
  return out;
}

/**
 * Writes `ours`, with the machine's own system defaults over it, to a fresh temporary file.
 * Returns the variable that points the CLI at it and a cleanup, or nothing when the machine's
 * file exists but is not plain JSON (it may hold comments): that file then stays in effect alone.
 */
export async function writeSystemDefaults(
  ours: Settings,
  env: Record<string, string>,
): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> } | undefined> {
  let theirs: Settings = {};
  try {
    const parsed: unknown = JSON.parse(await readFile(systemDefaultsPath(env), "utf8"));
    if (!isRecord(parsed)) return undefined;
    theirs = parsed;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return undefined;
  }
  const dir = await mkdtemp(join(tmpdir(), "smithers-gemini-"));
  const path = join(dir, "system-defaults.json");
  await writeFile(path, JSON.stringify(mergeSettings(ours, theirs)));
  return { env: { GEMINI_CLI_SYSTEM_DEFAULTS_PATH: path }, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
