/** @jsxImportSource smithers-workflows */
/** `<Worktree>`: reuse, bad input with stable codes and nothing half-made, concurrency, resume. Real git, temp directories. */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { approve, createSmithers, Parallel, runWorkflow, Subflow, type SmithersWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";
import { git, gitLines, tempRepo } from "../worktree-helpers.ts";

const schemas = { place: z.object({ cwd: z.string() }) };

/** A workflow with one compute task (no retries unless asked) in `<Worktree path branch? baseBranch?>`, recording its cwd. */
function inWorktree(dbPath: string, props: { path: string; branch?: string; baseBranch?: string }, retries = 0) {
  const { Workflow, Task, Worktree, smithers, outputs } = createSmithers(schemas, { dbPath });
  return smithers(() => (
    <Workflow name="wt">
      <Worktree {...props}>
        <Task id="work" output={outputs.place} retries={retries}>
          {({ cwd }) => ({ cwd })}
        </Task>
      </Worktree>
    </Workflow>
  ));
}

const branches = (repo: string) => gitLines(repo, "branch", "--format=%(refname:short)").sort();

describe("<Worktree> bad input", () => {
  test("a path that exists but is not a worktree of the repository fails the task at once (no retry mends it) with WORKTREE_INVALID, leaving it and the repository as they were", async () => {
    const repo = tempRepo();
    const path = join(repo, "..", "not-a-worktree");
    mkdirSync(path);
    writeFileSync(join(path, "notes.txt"), "mine\n");
    const dbPath = tempDbPath();

    const result = await runWorkflow(inWorktree(dbPath, { path, branch: "feature" }, 3), { input: {}, rootDir: repo });

    expect([result.status, result.error?.code]).toEqual(["failed", "WORKTREE_INVALID"]);
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts")).toEqual([{ attempt: 1, state: "failed" }]);
    expect(result.error?.message).toContain("is not a worktree of");
    expect(readdirSync(path)).toEqual(["notes.txt"]);
    expect(gitLines(repo, "worktree", "list").length).toBe(1);
    expect(branches(repo)).toEqual(["main"]);
  });

  test("a worktree of another repository is not one of this repository's: WORKTREE_INVALID", async () => {
    const repo = tempRepo();
    const other = tempRepo();
    const path = join(other, "..", "others-wt");
    git(other, "worktree", "add", "-q", path);

    const result = await runWorkflow(inWorktree(tempDbPath(), { path }), { input: {}, rootDir: repo });

    expect(result.error?.code).toBe("WORKTREE_INVALID");
    expect(gitLines(repo, "worktree", "list").length).toBe(1);
  });

  test("a root directory outside any git repository fails with WORKTREE_NOT_IN_REPO and creates nothing", async () => {
    const root = join(tmpdir(), `smithers-no-repo-${crypto.randomUUID()}`);
    mkdirSync(root);

    const result = await runWorkflow(inWorktree(tempDbPath(), { path: "wt" }), { input: {}, rootDir: root });

    expect([result.status, result.error?.code]).toEqual(["failed", "WORKTREE_NOT_IN_REPO"]);
    expect(readdirSync(root)).toEqual([]);
  });

  test("an existing worktree on another branch fails with WORKTREE_INVALID, naming both branches", async () => {
    const repo = tempRepo();
    const path = join(repo, "..", "wt-b");
    git(repo, "worktree", "add", "-q", "-b", "other", path);

    const result = await runWorkflow(inWorktree(tempDbPath(), { path, branch: "wanted" }), { input: {}, rootDir: repo });

    expect(result.error?.code).toBe("WORKTREE_INVALID");
    expect(result.error?.details).toMatchObject({ branch: "wanted", actualBranch: "other" });
    expect(branches(repo)).toEqual(["main", "other"]);
  });

  test("a base branch that does not exist fails with WORKTREE_FAILED and leaves neither a directory nor the new branch", async () => {
    const repo = tempRepo();
    const path = join(repo, "..", "wt-c");

    const result = await runWorkflow(inWorktree(tempDbPath(), { path, branch: "feature", baseBranch: "no-such-branch" }), { input: {}, rootDir: repo });

    expect([result.status, result.error?.code]).toEqual(["failed", "WORKTREE_FAILED"]);
    expect(existsSync(path)).toBe(false);
    expect(branches(repo)).toEqual(["main"]);
    expect(gitLines(repo, "worktree", "list").length).toBe(1);
  });

  test("a branch name git would read as an option is rejected at render", async () => {
    const repo = tempRepo();
    const result = await runWorkflow(inWorktree(tempDbPath(), { path: "wt", branch: "--force" }), { input: {}, rootDir: repo });
    expect(result.error?.code).toBe("INVALID_WORKFLOW");
    expect(gitLines(repo, "worktree", "list").length).toBe(1);
  });
});

describe("<Worktree> reuse", () => {
  test("a worktree already there on the branch asked for is used as it is, its files kept", async () => {
    const repo = tempRepo();
    const path = join(repo, "..", "wt-d");
    git(repo, "worktree", "add", "-q", "-b", "feature", path);
    writeFileSync(join(path, "work-in-progress.txt"), "keep me\n");
    const dbPath = tempDbPath();

    expect((await runWorkflow(inWorktree(dbPath, { path, branch: "feature" }), { input: {}, rootDir: repo })).status).toBe("finished");
    expect((await runWorkflow(inWorktree(dbPath, { path, branch: "feature" }), { input: {}, rootDir: repo })).status).toBe("finished");

    expect(existsSync(join(path, "work-in-progress.txt"))).toBe(true);
    expect(gitLines(repo, "worktree", "list").length).toBe(2);
  });

  test("an existing branch is checked out in the new worktree, not created again from the base", async () => {
    const repo = tempRepo();
    git(repo, "checkout", "-q", "-b", "feature");
    writeFileSync(join(repo, "feature.txt"), "f\n");
    git(repo, "add", "feature.txt");
    git(repo, "commit", "-q", "-m", "feature work");
    git(repo, "checkout", "-q", "main");
    const path = join(repo, "..", "wt-e");

    expect((await runWorkflow(inWorktree(tempDbPath(), { path, branch: "feature" }), { input: {}, rootDir: repo })).status).toBe("finished");

    expect(existsSync(join(path, "feature.txt"))).toBe(true);
    expect(gitLines(path, "rev-parse", "HEAD")).toEqual(gitLines(repo, "rev-parse", "feature"));
  });

  test("parallel tasks in one new worktree create it once and all run in it", async () => {
    const repo = tempRepo();
    const dbPath = tempDbPath();
    const { Workflow, Task, Worktree, smithers, outputs } = createSmithers(schemas, { dbPath });
    const ids = ["a", "b", "c", "d"];
    const wf = smithers(() => (
      <Workflow name="fan-out">
        <Worktree path="shared" branch="shared">
          <Parallel>
            {ids.map((id) => (
              <Task key={id} id={id} output={outputs.place}>
                {({ cwd }) => ({ cwd })}
              </Task>
            ))}
          </Parallel>
        </Worktree>
      </Workflow>
    ));

    expect((await runWorkflow(wf, { input: {}, rootDir: repo })).status).toBe("finished");

    expect(await query(dbPath, "SELECT DISTINCT cwd FROM place")).toEqual([{ cwd: join(repo, "shared") }]);
    expect(gitLines(repo, "worktree", "list").length).toBe(2);
  });
});

describe("<Worktree> and runs", () => {
  test("a resumed run keeps the root directory it started with, whatever directory it is resumed from", async () => {
    const repo = tempRepo();
    const dbPath = tempDbPath();
    const { Workflow, Task, Worktree, Approval, smithers, outputs } = createSmithers(
      { ...schemas, ok: z.object({ approved: z.boolean(), note: z.string().nullable(), decidedBy: z.string().nullable(), decidedAt: z.string().nullable() }) },
      { dbPath },
    );
    const wf = smithers(() => (
      <Workflow name="gated">
        <Approval id="go" output={outputs.ok} request={{ title: "Start?" }} />
        <Worktree path="after-approval">
          <Task id="work" output={outputs.place}>
            {({ cwd }) => ({ cwd })}
          </Task>
        </Worktree>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "g", rootDir: repo })).status).toBe("waiting-approval");
    await approve(createSmithers(schemas, { dbPath }).smithersDb, { runId: "g", nodeId: "go" });

    expect((await runWorkflow(wf, { runId: "g", resume: true })).status).toBe("finished");

    expect(await query(dbPath, "SELECT cwd FROM place")).toEqual([{ cwd: join(repo, "after-approval") }]);
    expect(await query(dbPath, "SELECT root_dir FROM _smithers_runs")).toEqual([{ root_dir: repo }]);
  });

  test("a <Subflow> inside a <Worktree> runs its child's tasks in that worktree", async () => {
    const repo = tempRepo();
    const dbPath = tempDbPath();
    const child = createSmithers(schemas);
    const childWf: SmithersWorkflow = child.smithers(() => (
      <child.Workflow name="child">
        <child.Task id="inner" output={child.outputs.place}>
          {({ cwd }) => ({ cwd })}
        </child.Task>
      </child.Workflow>
    ));
    const { Workflow, Worktree, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="parent">
        <Worktree path="wt-sub">
          <Subflow id="sub" workflow={childWf} output={outputs.place} />
        </Worktree>
      </Workflow>
    ));

    expect(await runWorkflow(wf, { input: {}, rootDir: repo })).toMatchObject({ status: "finished", output: { cwd: join(repo, "wt-sub") } });
  });
});
