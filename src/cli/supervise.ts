/** `smithers supervise`: resume runs whose owner died (stale heartbeat), one pass or --watch. */
import { parseArgs } from "node:util";
import { supervise, superviseForever, type SuperviseOutcome } from "../engine/index.ts";
import { formatEvent } from "./progress.ts";
import { durabilityFlag, EXIT, nonNegativeMs, openExistingDb, positiveInt, type Io } from "./shared.ts";

function describe(o: SuperviseOutcome): string {
  if (o.action === "resumed") return `resumed ${o.runId} ${o.result.status}${o.result.error ? ` ${o.result.error.code}` : ""}`;
  return `${o.action} ${o.runId}: ${o.reason}`;
}

export async function superviseCommand(args: string[], io: Io, signal: AbortSignal): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      db: { type: "string" },
      "stale-after-ms": { type: "string" },
      watch: { type: "boolean" },
      "interval-ms": { type: "string" },
      durability: { type: "string" },
    },
  });
  const durability = durabilityFlag(values.durability);
  const db = openExistingDb(values.db);
  if (durability) await db.setDurability(durability);
  const staleAfterMs = nonNegativeMs(values["stale-after-ms"], "--stale-after-ms");
  const onEvent = (event: Parameters<typeof formatEvent>[0]) => {
    const line = formatEvent(event);
    if (line) io.out(`${event.runId.slice(0, 8)} ${line}`);
  };
  if (values.watch) {
    const intervalMs = positiveInt(values["interval-ms"], "--interval-ms") ?? 5_000;
    await superviseForever({ db, staleAfterMs, intervalMs, signal, onEvent, durability, onOutcome: (o) => io.out(describe(o)) });
    return EXIT.ok;
  }
  const outcomes = await supervise({ db, staleAfterMs, onEvent, durability });
  for (const o of outcomes) io.out(describe(o));
  if (outcomes.length === 0) io.out("no stale runs");
  return outcomes.some((o) => o.action === "resumed" && o.result.status === "failed") ? EXIT.failed : EXIT.ok;
}
