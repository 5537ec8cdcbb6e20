/** `smithers signal <run> <name> [--data JSON] [--correlation-id ID] [--dedupe-key KEY] [--by NAME]`. */
import { parseArgs } from "./parse-args.ts";
import { sendSignal } from "../engine/waits/index.ts";
import { EXIT, openExistingDb, parseJsonFlag, usageError, type Io } from "./shared.ts";

export async function signalCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      data: { type: "string" },
      "correlation-id": { type: "string" },
      "dedupe-key": { type: "string" },
      by: { type: "string" },
      db: { type: "string" },
    },
  });
  const [runId, name] = positionals;
  if (!runId || !name || positionals.length > 2) throw usageError("signal takes a run id and a signal name");
  const data = parseJsonFlag(values.data, "--data");
  const db = openExistingDb(values.db);
  try {
    const sent = await sendSignal(db, { runId, name, data, correlationId: values["correlation-id"], dedupeKey: values["dedupe-key"], by: values.by });
    // A signal a child run took (see sendSignal) is stored there; the run to resume is still the one addressed.
    const where = sent.viaRunId ? `child run ${sent.runId} of ${sent.viaRunId}` : `run ${sent.runId}`;
    if (sent.duplicate) {
      io.out(`signal ${name} was already stored for ${where} (seq ${sent.seq}); nothing changed`);
      return EXIT.ok;
    }
    const taker = sent.waitingNodes.map((n) => `${n.nodeId}${n.iteration > 0 ? ` (iteration ${n.iteration})` : ""}`).join(", ");
    io.out(
      sent.waitingNodes.length > 0
        ? `signal ${name} stored for ${where} (seq ${sent.seq}); ${taker} waits for it: a running "smithers supervise --watch" resumes the run, or: smithers up <workflow> --run-id ${runId} --resume`
        : `signal ${name} stored for ${where} (seq ${sent.seq}); no node waits for it yet: the first one that does takes it`,
    );
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
