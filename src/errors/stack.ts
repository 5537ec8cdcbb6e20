/**
 * A thrown error's stack as its author needs it: the frames of their own files (the workflow and
 * what it imports) kept, in order; the frames of Smithers itself, of node_modules and of the
 * runtime (`native`, `node:`) counted, not listed; bounded in frames and characters. An error
 * with no frame of the author's (one the engine made, such as a schema check's) keeps no stack:
 * the author has no line to look at, and none is invented.
 */
import { dirname, resolve, sep } from "node:path";

/**
 * The bounds of a stored stack: the first error of a chain that has one keeps up to `frames`
 * frames in `chars` characters, each cause after it up to `causeFrames` in `causeChars`; at most
 * `stacks` errors of one chain keep one; a frame's text is cut at `frameChars`.
 */
export const STACK_LIMITS = { frames: 12, chars: 4_096, causeFrames: 4, causeChars: 1_024, stacks: 4, frameChars: 300 } as const;

/**
 * The file a module's frames name, read from an Error made at its top level: its own path, or,
 * when it runs from the bundle (scripts/build-bundle.ts), its source's, as Bun maps bundled
 * frames through the source map. `fallback` when the stack names no file.
 */
export function sourceFileOf(madeAtTopLevel: Error, fallback: string): string {
  const first = (madeAtTopLevel.stack ?? "").split("\n").find((line) => /^\s+at /.test(line));
  return (first === undefined ? undefined : frameLocation(first)?.file) ?? fallback;
}

let packageSrc: string | undefined;
/**
 * This package's own source (src/, this file being src/errors/stack.ts): its frames are the
 * engine's, not the author's. Found on first use, not at import: from the bundle, reading a stack
 * makes Bun read the chunk's source map, which a command that reads no stack need not pay for.
 */
function packageSourceDir(): string {
  packageSrc ??= resolve(dirname(sourceFileOf(new Error(), import.meta.path)), "..") + sep;
  return packageSrc;
}

/** Where a frame points: an absolute file (a `file://` URL made a path), line and column. */
export type FrameLocation = { file: string; line: number; column: number };

/** The place a frame line (`at fn (/a/b.ts:1:2)` or `at /a/b.ts:1:2`) names, if it names a file. */
export function frameLocation(frame: string): FrameLocation | undefined {
  const body = frame.trim().replace(/^at\s+/, "");
  const inParens = /\(([^()]*)\)$/.exec(body);
  const where = inParens ? inParens[1]! : body;
  const m = /^(.*?):(\d+):(\d+)$/.exec(where);
  if (!m) return undefined;
  let file = m[1]!;
  if (file.startsWith("file://")) {
    try {
      file = Bun.fileURLToPath(file);
    } catch {
      return undefined;
    }
  }
  if (!file.startsWith("/") && !/^[A-Za-z]:[\\/]/.test(file)) return undefined; // native, node:internal, bun:…, eval
  return { file, line: Number(m[2]), column: Number(m[3]) };
}

/** A file of the author's: not this package's src/, not in node_modules. */
export function isUserFile(file: string): boolean {
  return !file.startsWith(packageSourceDir()) && !/[\\/]node_modules[\\/]/.test(file);
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * The author's frames of `stack` (an Error's `stack` text), at most `frames` of them within
 * `chars` characters, then one line saying what was left out (`… 7 internal frames`);
 * undefined when no frame is the author's.
 *
 * @example
 * userStack(error.stack); // ["at helper (/w/x.tsx:10:13)", "at <anonymous> (/w/x.tsx:18:15)", "… 3 internal frames"]
 */
export function userStack(stack: unknown, frames: number = STACK_LIMITS.frames, chars: number = STACK_LIMITS.chars): string[] | undefined {
  if (typeof stack !== "string") return undefined;
  const kept: string[] = [];
  let internal = 0;
  let more = 0;
  let used = 0;
  for (const raw of stack.split("\n")) {
    const line = raw.trim();
    if (!line.startsWith("at ")) continue; // the header (name and message), or a message's own lines
    const where = frameLocation(line);
    if (!where || !isUserFile(where.file)) {
      internal++;
      continue;
    }
    const text = line.length > STACK_LIMITS.frameChars ? `${line.slice(0, STACK_LIMITS.frameChars)}…` : line;
    if (kept.length >= frames || used + text.length > chars) more++;
    else {
      kept.push(text);
      used += text.length;
    }
  }
  if (kept.length === 0) return undefined;
  const left = [more > 0 ? plural(more, "more frame") : "", internal > 0 ? plural(internal, "internal frame") : ""].filter(Boolean);
  if (left.length > 0) kept.push(`… ${left.join(" and ")}`);
  return kept;
}

/** How many stacks an error chain has kept so far (errorToJson's walk counts them). */
export type StackCount = { kept: number };

/** The next error of a chain: its bounded user stack, counted in `count`; undefined when it keeps none. */
export function nextStack(count: StackCount, stack: unknown): string[] | undefined {
  if (count.kept >= STACK_LIMITS.stacks) return undefined;
  const first = count.kept === 0;
  const kept = first ? userStack(stack) : userStack(stack, STACK_LIMITS.causeFrames, STACK_LIMITS.causeChars);
  if (kept) count.kept++;
  return kept;
}

/**
 * The stack a stored error (errorToJson's shape, parsed) shows its reader: the first one along
 * its cause chain (a task's TASK_FAILED keeps none itself; the author's error, its cause, does).
 */
export function storedStack(error: unknown): string[] | undefined {
  let at: unknown = error;
  for (let depth = 0; depth < 16 && typeof at === "object" && at !== null; depth++) {
    const stack = (at as { stack?: unknown }).stack;
    if (Array.isArray(stack) && stack.length > 0 && stack.every((s) => typeof s === "string")) return stack as string[];
    at = (at as { cause?: unknown }).cause;
  }
  return undefined;
}

/** `file` relative to `cwd` when it lies under it, else as it is. */
function underCwd(file: string, cwd: string): string {
  const base = resolve(cwd) + sep;
  return file.startsWith(base) ? file.slice(base.length) : file;
}

/** A stored frame line with its path relative to `cwd` (when under it), for a terminal. */
export function relativeFrame(frame: string, cwd: string = process.cwd()): string {
  const where = frameLocation(frame);
  if (!where) return frame;
  const url = Bun.pathToFileURL(where.file).href;
  return frame.includes(url) ? frame.replace(url, underCwd(where.file, cwd)) : frame.replace(where.file, underCwd(where.file, cwd));
}

/** The first frame of a stored error's stack as `at path:line:column`, the path relative to `cwd` when under it. */
export function firstUserFrame(error: unknown, cwd: string = process.cwd()): string | undefined {
  const first = storedStack(error)?.[0];
  const where = first === undefined ? undefined : frameLocation(first);
  return where ? `at ${underCwd(where.file, cwd)}:${where.line}:${where.column}` : undefined;
}
