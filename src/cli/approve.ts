/** `smithers approve|deny <run> [--node ID] [--iteration N] [--by NAME] [--note TEXT] [--yes]`. */
import { parseArgs } from "node:util";
import { approve, deny, findPendingApproval, type PendingApproval } from "../engine/index.ts";
import { EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

/** Asks on the terminal; resolves true for y/yes. */
async function confirm(question: string): Promise<boolean> {
  process.stdout.write(`${question} [y/N] `);
  for await (const line of console) return /^y(es)?$/i.test(line.trim());
  return false;
}

function show(p: PendingApproval, io: Io): void {
  io.out(`run        ${p.runId} (${p.workflowName})`);
  io.out(`node       ${p.nodeId}${p.iteration > 0 ? ` iteration ${p.iteration}` : ""}`);
  io.out(`title      ${p.request.title ?? ""}`);
  if (p.request.summary) io.out(`summary    ${p.request.summary}`);
  if (p.request.metadata) io.out(`metadata   ${JSON.stringify(p.request.metadata)}`);
}

export async function decideCommand(verb: "approve" | "deny", args: string[], io: Io, isTty = Boolean(process.stdin.isTTY)): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      node: { type: "string" },
      iteration: { type: "string" },
      by: { type: "string" },
      note: { type: "string" },
      yes: { type: "boolean" },
      db: { type: "string" },
    },
  });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError(`${verb} takes exactly one run id`);
  const iteration = values.iteration === undefined ? undefined : Number(values.iteration);
  if (iteration !== undefined && !(Number.isInteger(iteration) && iteration >= 0)) throw usageError("--iteration must be a loop iteration (0, 1, 2 …)");
  const db = openExistingDb(values.db);
  try {
    const target = { runId, nodeId: values.node, iteration };
    const gate = await findPendingApproval(db, target);
    show(gate, io);
    if (!values.yes) {
      if (!isTty) throw usageError(`${verb} asks for confirmation on a terminal; pass --yes to ${verb} without asking`);
      if (!(await confirm(`${verb === "approve" ? "Approve" : "Deny"} this?`))) {
        io.out("nothing decided");
        return EXIT.usage;
      }
    }
    const decision = await (verb === "approve" ? approve : deny)(db, {
      ...target,
      nodeId: gate.nodeId,
      iteration: gate.iteration,
      by: values.by,
      note: values.note,
    });
    io.out(
      `${decision.approved ? "approved" : "denied"} ${runId} ${decision.nodeId}; a running "smithers supervise --watch" resumes the run, or: smithers up <workflow> --run-id ${runId} --resume`,
    );
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
