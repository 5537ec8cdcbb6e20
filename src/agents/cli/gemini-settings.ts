/**
 * Gemini CLI's settings for one call, without touching the user's files: a temporary
 * GEMINI_CLI_HOME whose `.gemini` links to every entry of the real one (login, extensions, memory,
 * sessions) but holds a settings.json of its own, our defaults with the user's settings.json
 * merged over them, so each setting of the user's wins. (The CLI's system-defaults file cannot
 * carry them: it is read only when root owns it and every directory above it.)
 */
import { join } from "node:path";
import { nodeOs } from "./process-group.ts";

type Settings = Record<string, unknown>;

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

/** JSON with `//` and `/* *\/` comments (as Gemini CLI's settings files allow) without them. */
export function stripJsonComments(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (text.startsWith("//", i)) {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (text.startsWith("/*", i)) {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
    } else {
      out += text[i++];
    }
  }
  return out;
}

/**
 * Makes the temporary home for one call over `realHome` (the GEMINI_CLI_HOME the CLI would use).
 * Nothing when the user's settings.json cannot be read as JSON: the CLI then runs on the real home,
 * its settings as they are.
 */
export async function overlayGeminiHome(
  ours: Settings,
  realHome: string,
  tmpDir: string = nodeOs().tmpdir(),
): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> } | undefined> {
  // Loaded here, on a Gemini call: every process that imports smithers-workflows loads this module.
  const { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } = await import("node:fs/promises");
  const real = join(realHome, ".gemini");
  let theirs: Settings = {};
  try {
    const parsed: unknown = JSON.parse(stripJsonComments(await readFile(join(real, "settings.json"), "utf8")));
    if (!isRecord(parsed)) return undefined;
    theirs = parsed;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return undefined;
  }
  // Where the CLI keeps sessions (`--resume`) and its project history: in the real home, as without us.
  for (const dir of ["tmp", "history"]) await mkdir(join(real, dir), { recursive: true }).catch(() => {});
  const home = await mkdtemp(join(tmpDir, "smithers-gemini-"));
  try {
    const overlay = join(home, ".gemini");
    await mkdir(overlay);
    const entries = await readdir(real).catch(() => [] as string[]);
    for (const name of entries) if (name !== "settings.json") await symlink(join(real, name), join(overlay, name));
    await writeFile(join(overlay, "settings.json"), JSON.stringify(mergeSettings(ours, theirs)));
  } catch (error) {
    await rm(home, { recursive: true, force: true });
    throw error;
  }
  return { env: { GEMINI_CLI_HOME: home }, cleanup: () => rm(home, { recursive: true, force: true }) };
}
