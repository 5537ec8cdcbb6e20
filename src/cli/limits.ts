/** `smithers limits [--json] [--db PATH]`: every concurrency and rate key of a database, its declared limits and its use now. */
import { parseArgs } from "./parse-args.ts";
import type { LimitUse } from "../contract/index.ts";
import { limitUse } from "../engine/queries/index.ts";
import { EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

const of = (used: number, limit: number | null) => (limit === null ? (used > 0 ? String(used) : "-") : `${used}/${limit}`);

/** The keys as an aligned table, a header first. */
export function formatLimitTable(list: readonly LimitUse[], nowMs: number): string[] {
  const rows = [
    ["KEY", "SLOTS", "WAITING", "STARTS/MIN", "TOKENS/MIN", "HELD BY 429"],
    ...list.map((u) => [
      u.key,
      of(u.held, u.concurrency),
      String(u.waiting),
      of(u.requestsLastMinute, u.perMinute),
      of(u.tokensLastMinute, u.tokensPerMinute),
      u.blockedUntilMs === null ? "-" : `${Math.ceil((u.blockedUntilMs - nowMs) / 1000)}s`,
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
}

export async function limitsCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" }, db: { type: "string" } } });
  if (positionals.length > 0) throw usageError("limits takes no arguments");
  const db = openExistingDb(values.db);
  try {
    const nowMs = Date.now();
    const list = await limitUse(db, nowMs);
    if (values.json) io.out(JSON.stringify(list, null, 2));
    else if (list.length === 0) io.out("no limits declared or in use");
    else for (const line of formatLimitTable(list, nowMs)) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
