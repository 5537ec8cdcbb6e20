/**
 * `smithers timeline <run> [--json]`: the run's frames in order, each with its time, what
 * changed in the plan (nodes mounted, unmounted, state and prop changes) and the forks made from it.
 * `smithers diff <run> <frameA> <frameB> [--json]`: the plan change between two frames.
 */
import { parseArgs } from "./parse-args.ts";
import { frames, runs, type SmithersDb } from "../db/index.ts";
import { forksByFrame, frameHistory, planChanges, readFrame, type NodeChange, type PlanChanges, type FrameNode } from "../engine/history/index.ts";
import type { PropValue } from "../codec/index.ts";
import { SmithersError } from "../errors/index.ts";
import { EXIT, frameNumber, openExistingDb, usageError, type Io } from "./shared.ts";

const nodeName = (n: { tag: string; id: string; iteration: number }) => `${n.tag} ${n.id}${n.iteration > 0 ? ` (iteration ${n.iteration})` : ""}`;
const shown = (v: PropValue | undefined) => (v === undefined ? "(none)" : typeof v === "string" ? v : JSON.stringify(v));

function describeChange(c: NodeChange): string {
  return `${nodeName(c)}: ${Object.entries(c.props)
    .map(([name, { from, to }]) => (name === "state" ? `${shown(from)} → ${shown(to)}` : `${name} ${shown(from)} → ${shown(to)}`))
    .join(", ")}`;
}

/** One line per change, marked + (mounted), - (unmounted), ~ (changed). */
function changeLines(c: PlanChanges): string[] {
  const state = (n: FrameNode) => (typeof n.props.state === "string" ? ` ${n.props.state}` : "");
  return [
    ...c.mounted.map((n) => `+ ${nodeName(n)}${state(n)}`),
    ...c.unmounted.map((n) => `- ${nodeName(n)}${state(n)}`),
    ...c.changed.map((x) => `~ ${describeChange(x)}`),
  ];
}

async function knownRun(db: SmithersDb, runId: string): Promise<void> {
  if (!(await runs.getRun(db, runId))) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
}

export async function timelineCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" }, db: { type: "string" } } });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError("timeline takes exactly one run id");
  const db = openExistingDb(values.db);
  try {
    await knownRun(db, runId);
    // Forks made from a frame are shown with it.
    const forksAt = await forksByFrame(db, runId);
    let before: Parameters<typeof planChanges>[0];
    let count = 0;
    for await (const frame of frameHistory(db, runId)) {
      const changes = planChanges(before, frame.tree);
      before = frame.tree;
      count++;
      const forks = forksAt.get(frame.frameNo) ?? [];
      if (values.json) {
        io.out(JSON.stringify({ frameNo: frame.frameNo, createdAtMs: frame.createdAtMs, ...changes, forks }));
        continue;
      }
      const lines = changeLines(changes);
      io.out(`frame ${frame.frameNo}  ${new Date(frame.createdAtMs).toISOString()}${lines.length === 0 ? "  (no plan change)" : ""}`);
      for (const line of lines) io.out(`  ${line}`);
      for (const f of forks) io.out(`  ⑂ forked as run ${f.runId} (${f.status})`);
    }
    if (count === 0 && !values.json) io.out("no frames");
    return EXIT.ok;
  } finally {
    await db.close();
  }
}

export async function diffCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" }, db: { type: "string" } } });
  if (positionals.length !== 3) throw usageError("diff takes a run id and two frame numbers");
  const [runId, a, b] = positionals as [string, string, string];
  const from = frameNumber(a, "frameA");
  const to = frameNumber(b, "frameB");
  const db = openExistingDb(values.db);
  try {
    await knownRun(db, runId);
    const last = await frames.lastFrameNo(db, runId);
    for (const n of [from, to]) {
      if (n > last) throw new SmithersError("FRAME_NOT_FOUND", `Run "${runId}" has frames 0 to ${last}; there is no frame ${n}`, { runId, frameNo: n });
    }
    const changes = planChanges(await readFrame(db, runId, from), await readFrame(db, runId, to));
    if (values.json) io.out(JSON.stringify({ runId, from, to, ...changes }, null, 2));
    else {
      const lines = changeLines(changes);
      io.out(`run ${runId}: frame ${from} → frame ${to}`);
      for (const line of lines.length > 0 ? lines : ["no plan change"]) io.out(`  ${line}`);
    }
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
