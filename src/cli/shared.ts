/** What every `smithers` command shares: exit codes, output sinks, argument checks. */
import { existsSync } from "node:fs";
import { DEFAULT_DB_PATH, type Limits, mergeLimits, parseLimitFlag } from "../engine/core/index.ts";
import { SmithersError } from "../errors/index.ts";
import { DURABILITY_MODES, isPostgresUrl, openSmithersDb, type Durability, type SmithersDb } from "../db/index.ts";
import { parseDuration } from "../jsx/duration.ts";

export { EXIT } from "./constants.ts";

/** Where a command writes; `tty`, only when stdout is a terminal, writes raw text (a redrawn status line). */
export type Io = { out: (line: string) => void; err: (line: string) => void; tty?: (text: string) => void };

/** What stops a run from outside: `cancel` (first Ctrl-C), and `abandon` (second: stop waiting for task bodies). */
export type StopSignals = { cancel: AbortSignal; abandon?: AbortSignal };

export const usageError = (message: string) => new SmithersError("USAGE", message);

/** A flag that must be a whole number of milliseconds, 0 or more, when given. */
export function nonNegativeMs(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!(text.trim() !== "" && Number.isInteger(n) && n >= 0)) throw usageError(`${flag} must be a whole number of milliseconds, 0 or more`);
  return n;
}

/** A frame number (0, 1, 2 …) given as `flag` (an option or a positional's name); USAGE when missing or not one. */
export function frameNumber(text: string | undefined, flag: string): number {
  if (text === undefined) throw usageError(`${flag} is required`);
  const n = Number(text);
  if (!(text.trim() !== "" && Number.isInteger(n) && n >= 0)) throw usageError(`${flag} must be a frame number (0, 1, 2 …), got "${text}"`);
  return n;
}

/** A duration flag in the peer's form: a number with a unit ("500ms", "30s", "1m", "2h"), or a bare number of ms. */
export function durationFlag(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const ms = /^\d+$/.test(text.trim()) ? Number(text) : parseDuration(text);
  if (ms === undefined) throw usageError(`${flag} must be a duration like 30s, 1m or 500ms, got "${text}"`);
  return ms;
}

/** A flag that must be a number >= 0 (a whole one when `whole`) when given. */
export function nonNegativeNumber(text: string | undefined, flag: string, whole = false): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!(text.trim() !== "" && Number.isFinite(n) && n >= 0 && (!whole || Number.isInteger(n)))) {
    throw usageError(`${flag} must be ${whole ? "a whole number" : "a number"}, 0 or more`);
  }
  return n;
}

/** Every `--limit KEY=N` / `KEY.OPTION=N` given, merged (INVALID_LIMIT for a malformed one); undefined when none. */
export function limitFlags(texts: readonly string[] | undefined): Limits | undefined {
  if (texts === undefined || texts.length === 0) return undefined;
  return texts.reduce<Limits>((all, text) => mergeLimits(all, parseLimitFlag(text)), {});
}

/** A flag that must be a positive integer when given. */
export function positiveInt(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!(Number.isInteger(n) && n > 0)) throw usageError(`${flag} must be a positive integer`);
  return n;
}

/**
 * The database a command was pointed at: --db (a SQLite path or a postgres:// URL), else
 * SMITHERS_DATABASE_URL, else SMITHERS_DB_PATH, else undefined (the command's default).
 */
export function dbPathOption(flag: string | undefined): string | undefined {
  return flag ?? (process.env.SMITHERS_DATABASE_URL || process.env.SMITHERS_DB_PATH || undefined);
}

/**
 * `work`'s value, or undefined when `stop` aborts first (Ctrl-C while a database does not answer):
 * the work is left to the process's exit, its later failure unreported.
 */
export async function unlessStopped<T>(work: Promise<T>, stop: AbortSignal): Promise<T | undefined> {
  work.catch(() => undefined);
  if (stop.aborted) return undefined;
  let onAbort = () => {};
  const stopped = new Promise<undefined>((resolve) => {
    onAbort = () => resolve(undefined);
    stop.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([work, stopped]);
  } finally {
    stop.removeEventListener("abort", onAbort);
  }
}

/** Opens an existing database for an operator command; a missing file is an error, not a new database. */
export function openExistingDb(path: string | undefined): SmithersDb {
  const file = dbPathOption(path) ?? DEFAULT_DB_PATH;
  if (file !== ":memory:" && !isPostgresUrl(file) && !existsSync(file)) {
    throw new SmithersError("RUN_NOT_FOUND", `No database at ${file} (pass --db PATH)`, { path: file });
  }
  return openSmithersDb(file);
}

/** `--durability process|power` when given; any other value is a usage error. */
export function durabilityFlag(text: string | undefined): Durability | undefined {
  if (text === undefined) return undefined;
  if (!(DURABILITY_MODES as readonly string[]).includes(text)) throw usageError(`--durability must be ${DURABILITY_MODES.join(" or ")}, got "${text}"`);
  return text as Durability;
}

/** A JSON-valued flag (`--input`, `--data`); INVALID_INPUT (exit 2) when it does not parse. */
export function parseJsonFlag(text: string | undefined, flag: string): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new SmithersError("INVALID_INPUT", `${flag} is not valid JSON: ${(cause as Error).message}`, { cause });
  }
}

/** `--input`'s JSON; INVALID_INPUT (exit 2) when it does not parse. */
export const parseInput = (text: string | undefined): unknown => parseJsonFlag(text, "--input");

/** Rows as aligned columns, two spaces apart (the last column left ragged). */
export function alignRows(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd(),
  );
}
