/**
 * The check a resume makes when the workflow's code hash differs from the one its run recorded:
 * the new code is rendered against the run's stored state (nothing is written) and compared with
 * what the run has: tasks whose definition differs from the one they started with, task ids the
 * latest frame has and the new render lacks, and the other way round. Without permission the
 * resume stops with WORKFLOW_CHANGED and that report; with it, the new hash is recorded and a
 * `WorkflowCodeChanged` event says what changed.
 */
import { loadInput, nodes as nodeRows, frames, ralph, runs, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { nodeKey } from "../../jsx/index.ts";
import { NO_USAGE } from "../core/index.ts";
import { definitionSignature } from "../workflow/index.ts";
import { withContinuation } from "./continue-as-new.ts";
import { EventBus } from "./event-bus.ts";
import { FrameChain, FrameRecorder } from "../history/index.ts";
import { runAtFrame } from "../history/index.ts";
import { Run } from "./run.ts";
import { loadRunOutputs, type RunSetup, type TrackedNode } from "./run-setup.ts";
import type { NodeState } from "../core/index.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";

export type CodeChange = {
  runId: string;
  oldHash: string;
  newHash: string;
  /** Tasks that started under the old code and whose definition is different now. */
  changed: { nodeId: string; iteration: number }[];
  /** Task ids the new code renders that the run's latest frame does not have. */
  added: string[];
  /** Task ids of the run's latest frame the new code does not render. */
  removed: string[];
};

/** Renders the new code against the run's stored state and compares (read only). */
async function compare(
  workflow: SmithersWorkflow,
  db: SmithersDb,
  runId: string,
  continuationJson: string | null,
  oldHash: string,
  newHash: string,
): Promise<CodeChange> {
  const [stored, nodes, loops, outputs] = await Promise.all([
    loadInput(db, workflow.registry, runId),
    nodeRows.listNodes(db, runId),
    ralph.listLoopStates(db, runId),
    loadRunOutputs(db, workflow.registry, runId),
  ]);
  const states = new Map<string, TrackedNode>();
  for (const n of nodes) states.set(nodeKey(n.nodeId, n.iteration), { state: n.state as NodeState, lastAttempt: n.lastAttempt ?? 0, failures: 0, abandons: 0 });
  const setup: RunSetup = {
    runId,
    ownerId: "(code check)",
    input: withContinuation(stored, continuationJson),
    storedInput: stored,
    rootDir: process.cwd(),
    resumed: true,
    alreadyFinished: false,
    states,
    loops: new Map(loops.map((r) => [r.ralphId, { iteration: r.iteration, done: r.done }])),
    ...outputs,
    finishedIds: new Set(nodes.filter((n) => n.state === "finished" || n.state === "skipped").map((n) => n.nodeId)),
    abandoned: [],
    budget: {},
    usage: NO_USAGE,
    unpricedModel: undefined,
    cancelRequested: false,
    storedName: workflow.name, // only rendered, never executed: nothing is named
    traceParent: undefined,
  };
  const tableOf = (task: {
    mode: string;
    output: Parameters<typeof workflow.registry.resolve>[0];
    outputSchema: Parameters<typeof workflow.registry.resolve>[1];
  }) => (task.mode === "timer" ? "" : workflow.registry.resolve(task.output, task.outputSchema).tableName);
  const probe = new Run(workflow, setup, db, new EventBus({ db, runId }), new FrameRecorder(FrameChain.start(runId), tableOf), {}, Date.now);
  const tasks = await probe.plannedTasks();
  const sigs = new Map(nodes.map((n) => [nodeKey(n.nodeId, n.iteration), n.defSig]));
  const changed = tasks
    .filter((t) => {
      const before = sigs.get(t.key);
      return before != null && before !== definitionSignature(t, tableOf(t));
    })
    .map((t) => ({ nodeId: t.nodeId, iteration: t.iteration }));
  const last = await frames.lastFrameNo(db, runId);
  const latest = last < 0 ? undefined : await runAtFrame(db, runId, last);
  const framed = new Set(latest ? [...latest.mounted].map((key) => latest.tasks.get(key)!.nodeId) : []);
  const rendered = new Set(tasks.map((t) => t.nodeId));
  return {
    runId,
    oldHash,
    newHash,
    changed,
    added: [...rendered].filter((id) => !framed.has(id)),
    removed: [...framed].filter((id) => !rendered.has(id)),
  };
}

/**
 * Before a resume: undefined when the run's recorded code hash is absent, unknown now, or the
 * same; otherwise what changed, or WORKFLOW_CHANGED (with that report) unless `allow`.
 */
export async function checkCode(
  workflow: SmithersWorkflow,
  db: SmithersDb,
  runId: string | undefined,
  newHash: string | undefined,
  allow: boolean,
): Promise<CodeChange | undefined> {
  if (runId === undefined || newHash === undefined) return undefined;
  const run = await runs.getRun(db, runId);
  if (!run?.workflowHash || run.workflowHash === newHash || run.status === "finished" || run.status === "continued") return undefined;
  const change = await compare(workflow, db, runId, run.continuationJson, run.workflowHash, newHash);
  if (allow) return change;
  const names = (list: string[]) => (list.length === 0 ? "none" : list.join(", "));
  throw new SmithersError(
    "WORKFLOW_CHANGED",
    `The code of run "${runId}"'s workflow changed since it ran (hash ${run.workflowHash.slice(0, 12)} → ${newHash.slice(0, 12)}). ` +
      `Tasks whose definition changed: ${names(change.changed.map((c) => (c.iteration > 0 ? `${c.nodeId}#${c.iteration}` : c.nodeId)))}; added: ${names(change.added)}; removed: ${names(change.removed)}. ` +
      `Finished tasks are kept either way; resume with --allow-code-change (allowCodeChange: true) to go on with the new code`,
    change,
  );
}
