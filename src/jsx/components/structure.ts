/** The containers: `<Workflow>`, `<Sequence>`, `<Parallel>`, `<Branch>`, `<Loop>` (and its alias `Ralph`). */
import { makeElement, type SmithersElement, type SmithersNode } from "../element.ts";
import { ACCEPTED_PROPS, checkProps } from "../props.ts";
import { HOST } from "./host.ts";

export type WorkflowProps = {
  name: string;
  /**
   * Caches every agent task that has no `cache` of its own, keyed by its prompt and iteration
   * (scope "workflow", no expiry); compute and static tasks are cached only by their own `cache`.
   */
  cache?: boolean;
  children?: SmithersNode;
};
export type SequenceProps = {
  /** A display name for the group, shown on its `<sequence>` in frames and the dashboard's tree. */
  label?: string;
  skipIf?: boolean;
  children?: SmithersNode;
};
export type ParallelProps = {
  /**
   * The group's stable id (unique among the Parallels of a render): its `<parallel id>` in frames,
   * so frame deltas and the dashboard follow the group by id rather than by position.
   */
  id?: string;
  /** A display name for the group, shown in frames and the dashboard's tree. */
  label?: string;
  /** At most this many tasks of this Parallel run at once. */
  maxConcurrency?: number;
  /** At most this many direct children (whole subtrees) in flight at once, admitted in document order. */
  subtreeConcurrency?: number;
  skipIf?: boolean;
  children?: SmithersNode;
};
export type BranchProps = { if: unknown; then: SmithersNode; else?: SmithersNode; skipIf?: boolean };
export type LoopProps = {
  id?: string;
  until: unknown;
  maxIterations?: number;
  onMaxReached?: "fail" | "return-last";
  /** Every this many iterations the run continues as a new run (see `<ContinueAsNew>`), carrying the loop's iteration and the latest outputs. */
  continueAsNewEvery?: number;
  skipIf?: boolean;
  children?: SmithersNode;
};

/** Root of a workflow: its direct children run in sequence. */
export function Workflow(props: WorkflowProps): SmithersElement {
  return makeElement(HOST.workflow, props);
}

/** Children in order: each starts once the one before finished or was skipped. */
export function Sequence(props: SequenceProps): SmithersNode {
  return props.skipIf ? null : makeElement(HOST.sequence, props);
}

/** Children run concurrently, at most `maxConcurrency` tasks at a time. */
export function Parallel(props: ParallelProps): SmithersNode {
  return props.skipIf ? null : makeElement(HOST.parallel, props);
}

/** Mounts `then` when `if` is truthy, else `else`; nothing with `skipIf`. */
export function Branch(props: BranchProps): SmithersNode {
  checkProps("Branch", props, ACCEPTED_PROPS.Branch);
  if (props.skipIf) return null;
  return props.if ? props.then : (props.else ?? null);
}

/** Re-runs its children with iteration 0, 1, 2… until `until` is truthy or `maxIterations` is reached. */
export function Loop(props: LoopProps): SmithersNode {
  return props.skipIf ? null : makeElement(HOST.loop, props);
}

/** Alias of Loop, the name the Ralph-loop pattern is known by. */
export const Ralph = Loop;
