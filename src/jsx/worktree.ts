/** `<Worktree>`: the tasks inside run with a git worktree as their working directory. */
import { SmithersError } from "../errors/index.ts";
import { makeElement, type SmithersNode } from "./element.ts";
import type { WorktreeSpec } from "./plan.ts";
import { ACCEPTED_PROPS, checkProps } from "./props.ts";

export const WORKTREE_HOST = "smithers:worktree";

export type WorktreeProps = {
  /** Where the worktree is (created when missing); a relative path resolves against the run's root directory (`rootDir`, default the working directory). */
  path: string;
  /** Names the worktree (unique in a workflow). */
  id?: string;
  /** The branch checked out in it: used when it exists, else created from `baseBranch`. Without it the worktree has a detached HEAD. */
  branch?: string;
  /** What a new branch (or the detached HEAD) starts from; default `main` when the repository has it, else its HEAD. */
  baseBranch?: string;
  skipIf?: boolean;
  children?: SmithersNode;
};

/**
 * Its children run in sequence, each task with the worktree at `path` as its working directory
 * (`ctx.cwd` of a compute task, `cwd` of an agent's generate call). The worktree is added to the
 * repository of the run's root directory (`git worktree add`) before the first task in it starts;
 * an existing worktree of that repository is reused. Worktrees are kept when the run ends.
 * @example
 * <Worktree path="/tmp/wt/feature-a" branch="feature-a"><Task id="build" output={outputs.build}>{buildIn}</Task></Worktree>
 */
export function Worktree(props: WorktreeProps): SmithersNode {
  checkProps("Worktree", props, ACCEPTED_PROPS.Worktree);
  return props.skipIf ? null : makeElement(WORKTREE_HOST, props);
}

const invalid = (message: string, details: Record<string, unknown> = {}) => new SmithersError("INVALID_WORKFLOW", message, details);

function optionalName(where: string, prop: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "" || /\s/.test(value) || value.startsWith("-")) {
    throw invalid(`${where} ${prop} must be a branch name (non-empty, no spaces, not starting with "-")`, { prop });
  }
  return value;
}

/** A `<Worktree>`'s props as a spec, checked: a non-empty path, branch names that git can take as names. */
export function worktreeSpec(props: Record<string, unknown>): WorktreeSpec {
  checkProps("Worktree", props, ACCEPTED_PROPS.Worktree);
  const id = props.id;
  if (id !== undefined && (typeof id !== "string" || id === "")) throw invalid("<Worktree> id must be a non-empty string");
  const where = `<Worktree${typeof id === "string" ? ` id="${id}"` : ""}>`;
  const path = props.path;
  if (typeof path !== "string" || path.trim() === "") throw invalid(`${where} needs a non-empty path`, { prop: "path" });
  return {
    id: id as string | undefined,
    path,
    branch: optionalName(where, "branch", props.branch),
    baseBranch: optionalName(where, "baseBranch", props.baseBranch),
  };
}
