/** `smithers approve|deny <run> [--node ID] [--iteration N] [--select KEY | --rank K1,K2,…] [--by NAME] [--note TEXT] [--yes]`. */
import { parseArgs } from "./parse-args.ts";
import { approve, checkChoice, deny, findPendingApproval, type PendingApproval } from "../engine/waits/index.ts";
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
  if (p.request.mode === "gate") io.out("approving lets the task start; denying fails it");
  if (p.request.mode === "select" || p.request.mode === "rank") {
    io.out(`choose     ${p.request.mode === "select" ? "one option (--select KEY)" : "an order of every option, best first (--rank KEY,KEY,…)"}`);
    for (const o of p.request.options ?? []) io.out(`  ${o.key}  ${o.label}${o.summary ? ` (${o.summary})` : ""}`);
  }
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
      select: { type: "string" },
      rank: { type: "string" },
      yes: { type: "boolean" },
      db: { type: "string" },
    },
  });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError(`${verb} takes exactly one run id`);
  const iteration = values.iteration === undefined ? undefined : Number(values.iteration);
  if (iteration !== undefined && !(Number.isInteger(iteration) && iteration >= 0)) throw usageError("--iteration must be a loop iteration (0, 1, 2 …)");
  if (verb === "deny" && (values.select !== undefined || values.rank !== undefined)) throw usageError("--select and --rank go with approve, not deny");
  if (values.select !== undefined && values.rank !== undefined) throw usageError("pass --select or --rank, not both");
  const ranked = values.rank?.split(",").map((k) => k.trim());
  const db = openExistingDb(values.db);
  try {
    const target = { runId, nodeId: values.node, iteration };
    const gate = await findPendingApproval(db, target);
    show(gate, io);
    checkChoice(gate, { selected: values.select, ranked }, verb === "approve"); // a bad choice is refused before asking
    if (!values.yes) {
      if (!isTty) throw usageError(`${verb} asks for confirmation on a terminal; pass --yes to ${verb} without asking`);
      if (!(await confirm(`${verb === "approve" ? "Approve" : "Deny"} this?`))) {
        io.out("nothing decided");
        return EXIT.usage;
      }
    }
    const decision = await (verb === "approve" ? approve : deny)(db, {
      ...target,
      runId: gate.runId, // a child run's gate is decided in that run
      nodeId: gate.nodeId,
      iteration: gate.iteration,
      by: values.by,
      note: values.note,
      selected: values.select,
      ranked,
    });
    io.out(
      `${decision.approved ? "approved" : "denied"} ${runId} ${decision.nodeId}; a running "smithers supervise --watch" resumes the run, or: smithers up <workflow> --run-id ${runId} --resume`,
    );
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
