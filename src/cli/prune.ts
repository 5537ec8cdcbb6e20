/** `smithers prune`: removes old frames and events of ended runs (see pruneRuns). */
import { parseArgs } from "./parse-args.ts";
import { pruneRuns, type PruneReport } from "../engine/history/index.ts";
import { durationFlag, EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

export async function pruneCommand(args: string[], io: Io, nowMs = Date.now()): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      "older-than": { type: "string" },
      "dry-run": { type: "boolean" },
      vacuum: { type: "boolean" },
      json: { type: "boolean" },
      db: { type: "string" },
    },
  });
  if (positionals.length > 0) throw usageError(`prune takes no arguments, got "${positionals.join(" ")}"`);
  const olderThanMs = durationFlag(values["older-than"], "--older-than");
  const db = openExistingDb(values.db);
  try {
    const report = await pruneRuns(db, { olderThanMs, dryRun: values["dry-run"] ?? false, vacuum: values.vacuum ?? false, nowMs });
    if (values.json) io.out(JSON.stringify(report));
    else for (const line of describe(report)) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}

function describe(r: PruneReport): string[] {
  const verb = r.dryRun ? "would remove" : "removed";
  const lines = r.runs.map((run) => `${run.runId}  ${run.status}  ${verb} ${run.framesRemoved} frames, ${run.eventsRemoved} events (${run.rowBytes} bytes)`);
  for (const s of r.skipped) lines.push(`${s.runId}  skipped: ${s.reason}`);
  lines.push(
    `${r.dryRun ? "Would prune" : "Pruned"} ${r.runs.length} runs ended before ${new Date(r.cutoffMs).toISOString()}: ` +
      `${r.framesRemoved} frames and ${r.eventsRemoved} events, ${r.rowBytes} bytes of rows`,
  );
  if (r.dryRun) lines.push("Dry run: nothing was changed.");
  else if (r.vacuumed) lines.push(`Vacuumed: the database went from ${r.fileBytesBefore} to ${r.fileBytesAfter} bytes (${r.bytesFreed} freed).`);
  else lines.push(`${r.bytesFreed} bytes of pages freed inside the ${r.fileBytesAfter}-byte file (reused by later writes; --vacuum shrinks the file).`);
  return lines;
}
