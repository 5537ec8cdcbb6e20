/** `smithers cron add|list|rm`: schedules the daemon (`smithers supervise`) starts on time. */
import { parseArgs } from "./parse-args.ts";
import { openSmithersDb } from "../db/index.ts";
import { DEFAULT_DB_PATH } from "../engine/core/index.ts";
import { addCron, listCrons, parseCron, removeCron, type CronSchedule } from "../engine/daemon/index.ts";
import { loadWorkflowFile } from "../engine/workflow/index.ts";
import { dbPathOption, EXIT, openExistingDb, usageError, type Io, parseInput } from "./shared.ts";

const iso = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());

async function add(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { schedule: { type: "string" }, input: { type: "string" }, tz: { type: "string" }, id: { type: "string" }, db: { type: "string" } },
  });
  const file = positionals[0];
  if (!file || positionals.length > 1) throw usageError("cron add takes exactly one workflow file");
  if (values.schedule === undefined) throw usageError('cron add needs --schedule "<cron expression>"');
  // Everything is checked before the database is opened, so bad input creates no file.
  parseCron(values.schedule, values.tz);
  const input = parseInput(values.input);
  await loadWorkflowFile(file);
  const db = openSmithersDb(dbPathOption(values.db) ?? DEFAULT_DB_PATH);
  try {
    const cron = await addCron(db, { workflowPath: file, schedule: values.schedule, input, timezone: values.tz, cronId: values.id });
    io.out(`cron ${cron.cronId} added; next fire ${iso(cron.nextRunAtMs)} (${cron.schedule} in ${cron.timezone})`);
  } finally {
    await db.close();
  }
  return EXIT.ok;
}

function row(c: CronSchedule): string[] {
  const error = c.lastError ? `${c.lastError.code}: ${c.lastError.message}` : "-";
  return [c.cronId, c.schedule, c.timezone, c.workflowPath, iso(c.nextRunAtMs), iso(c.lastRunAtMs), String(c.skippedSlots), error];
}

async function list(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" }, db: { type: "string" } } });
  if (positionals.length > 0) throw usageError("cron list takes no arguments");
  const db = openExistingDb(values.db);
  try {
    const crons = await listCrons(db);
    if (values.json) io.out(JSON.stringify(crons, null, 2));
    else if (crons.length === 0) io.out("no cron schedules");
    else {
      const table = [["ID", "SCHEDULE", "TZ", "WORKFLOW", "NEXT", "LAST", "SKIPPED", "LAST ERROR"], ...crons.map(row)];
      const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
      for (const r of table) io.out(r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
    }
  } finally {
    await db.close();
  }
  return EXIT.ok;
}

async function rm(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { db: { type: "string" } } });
  const id = positionals[0];
  if (!id || positionals.length > 1) throw usageError("cron rm takes exactly one cron id");
  const db = openExistingDb(values.db);
  try {
    await removeCron(db, id);
    io.out(`cron ${id} removed`);
  } finally {
    await db.close();
  }
  return EXIT.ok;
}

export async function cronCommand(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "add") return add(rest, io);
  if (sub === "list") return list(rest, io);
  if (sub === "rm") return rm(rest, io);
  throw usageError(sub === undefined ? "cron needs add, list or rm" : `unknown cron command "${sub}"`);
}
