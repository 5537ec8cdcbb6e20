/** `smithers human list|inbox [--json]`, `human answer <request-id> --data JSON [--by NAME]`, `human cancel <request-id>`. */
import { parseArgs } from "./parse-args.ts";
import { answerHuman, cancelHuman, humanInbox, type InboxItem } from "../engine/waits/index.ts";
import { EXIT, openExistingDb, parseJsonFlag, usageError, type Io } from "./shared.ts";

/** "3m", "2h", "4d": how long ago, roughly. */
export function formatAge(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

function showInbox(items: InboxItem[], io: Io): void {
  if (items.length === 0) {
    io.out("no human requests waiting");
    return;
  }
  for (const item of items) {
    const where = `${item.workflowName ?? "?"} run ${item.runId} (${item.runStatus ?? "?"}) node ${item.nodeId}${item.iteration > 0 ? ` iteration ${item.iteration}` : ""}`;
    io.out(`${item.requestId}  ${formatAge(item.ageMs)} old${item.expired ? "  EXPIRED (can no longer be answered)" : ""}`);
    io.out(`  ${where}`);
    for (const line of item.prompt.split("\n")) io.out(`  > ${line}`);
  }
}

export async function humanCommand(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { json: { type: "boolean" }, data: { type: "string" }, value: { type: "string" }, by: { type: "string" }, db: { type: "string" } },
  });
  if (sub === "list" || sub === "inbox") {
    if (positionals.length > 0) throw usageError(`human ${sub} takes no arguments`);
    const db = openExistingDb(values.db);
    try {
      const items = await humanInbox(db);
      if (values.json) io.out(JSON.stringify(items, null, 2));
      else showInbox(items, io);
      return EXIT.ok;
    } finally {
      await db.close();
    }
  }
  if (sub === "answer" || sub === "cancel") {
    const requestId = positionals[0];
    if (!requestId || positionals.length > 1) throw usageError(`human ${sub} takes exactly one request id`);
    if (values.data !== undefined && values.value !== undefined) throw usageError("pass the answer once: --data (or its alias --value)");
    const text = values.data ?? values.value;
    if (sub === "answer" && text === undefined) throw usageError("human answer needs --data JSON");
    const db = openExistingDb(values.db);
    try {
      const done =
        sub === "answer" ? await answerHuman(db, { requestId, data: parseJsonFlag(text, "--data"), by: values.by }) : await cancelHuman(db, { requestId });
      io.out(
        `${sub === "answer" ? "answered" : "cancelled"} ${requestId}; a running "smithers supervise --watch" resumes run ${done.runId}, or: smithers up <workflow> --run-id ${done.runId} --resume`,
      );
      return EXIT.ok;
    } finally {
      await db.close();
    }
  }
  throw usageError(sub === undefined ? "human needs a subcommand: list, answer or cancel" : `unknown human subcommand "${sub}"`);
}
