/** @jsxImportSource smithers-workflows */
/**
 * `<Worktree>` as smithers-orchestrator's documentation describes it (its "<Worktree>" page:
 * descendants get the worktree as their working directory, innermost wins, duplicate ids and empty
 * paths are rejected, relative paths resolve against the launch root), written here in our own
 * words. Each test makes a real git repository in a temp directory; nothing touches the network.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { createSmithers, runWorkflow, type Agent, type AgentGenerateArgs } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";
import { gitLines, tempRepo } from "../worktree-helpers.ts";

const schemas = { place: z.object({ cwd: z.string() }), said: z.object({ text: z.string() }) };

describe("<Worktree>", () => {
  test("its tasks run in the worktree: created on its branch when missing, a compute task's ctx.cwd and an agent's cwd are its absolute path", async () => {
    const repo = tempRepo();
    const path = join(repo, "..", "wt-feature");
    const dbPath = tempDbPath();
    const { Workflow, Task, Worktree, smithers, outputs } = createSmithers(schemas, { dbPath });
    const calls: AgentGenerateArgs[] = [];
    const agent: Agent = {
      generate: async (args) => {
        calls.push(args);
        return { text: '{"text":"done"}' };
      },
    };
    const wf = smithers(() => (
      <Workflow name="isolated-build">
        <Task id="outside" output={outputs.place}>
          {({ cwd }) => ({ cwd })}
        </Task>
        <Worktree path={path} branch="feature-a">
          <Task id="inside" output={outputs.place}>
            {({ cwd }) => ({ cwd })}
          </Task>
          <Task id="implement" output={outputs.said} agent={agent}>
            Implement the feature in this worktree.
          </Task>
        </Worktree>
      </Workflow>
    ));

    expect((await runWorkflow(wf, { input: {}, rootDir: repo })).status).toBe("finished");

    const resolved = join(repo, "..", "wt-feature");
    expect(sql(dbPath, "SELECT node_id, cwd FROM place ORDER BY node_id")).toEqual([
      { node_id: "inside", cwd: resolved },
      { node_id: "outside", cwd: repo },
    ]);
    expect(calls.map((c) => c.cwd)).toEqual([resolved]);
    expect(existsSync(join(resolved, "README.md"))).toBe(true); // a checkout of the repository
    expect(gitLines(repo, "worktree", "list", "--porcelain")).toContain(`worktree ${realpathSync(resolved)}`);
    expect(gitLines(resolved, "rev-parse", "--abbrev-ref", "HEAD")).toEqual(["feature-a"]);
  });

  test("a relative path resolves against the run's root directory, and the worktree is added to that directory's repository", async () => {
    const repo = tempRepo();
    const { Workflow, Task, Worktree, smithers, outputs } = createSmithers(schemas, { dbPath: tempDbPath() });
    let seen = "";
    const wf = smithers(() => (
      <Workflow name="relative">
        <Worktree path="worktrees/a">
          <Task id="inside" output={outputs.place}>
            {({ cwd }) => {
              seen = cwd;
              return { cwd };
            }}
          </Task>
        </Worktree>
      </Workflow>
    ));

    expect((await runWorkflow(wf, { input: {}, rootDir: repo })).status).toBe("finished");

    expect(seen).toBe(join(repo, "worktrees/a"));
    expect(gitLines(repo, "worktree", "list", "--porcelain")).toContain(`worktree ${realpathSync(seen)}`);
    // Without a branch the worktree has a detached HEAD at the base (main).
    expect(gitLines(seen, "rev-parse", "HEAD")).toEqual(gitLines(repo, "rev-parse", "main"));
  });

  test("the innermost <Worktree> wins for the tasks inside it", async () => {
    const repo = tempRepo();
    const { Workflow, Task, Worktree, smithers, outputs } = createSmithers(schemas, { dbPath: tempDbPath() });
    const seen: Record<string, string> = {};
    const where = (id: string) => (
      <Task id={id} output={outputs.place}>
        {({ cwd }) => {
          seen[id] = cwd;
          return { cwd };
        }}
      </Task>
    );
    const wf = smithers(() => (
      <Workflow name="nested">
        <Worktree path="outer" branch="outer">
          {where("in-outer")}
          <Worktree path="inner" branch="inner">
            {where("in-inner")}
          </Worktree>
        </Worktree>
      </Workflow>
    ));

    expect((await runWorkflow(wf, { input: {}, rootDir: repo })).status).toBe("finished");

    expect(seen).toEqual({ "in-outer": join(repo, "outer"), "in-inner": join(repo, "inner") });
  });

  test("an empty path and two worktrees with one id are rejected at render, before anything is created", async () => {
    const repo = tempRepo();
    const { Workflow, Task, Worktree, smithers, outputs } = createSmithers(schemas, { dbPath: tempDbPath() });
    const task = (id: string) => (
      <Task id={id} output={outputs.place}>
        {{ cwd: "" }}
      </Task>
    );
    const empty = smithers(() => (
      <Workflow name="empty">
        <Worktree path="  ">{task("a")}</Worktree>
      </Workflow>
    ));
    const duplicate = smithers(() => (
      <Workflow name="duplicate">
        <Worktree id="w" path="one">
          {task("a")}
        </Worktree>
        <Worktree id="w" path="two">
          {task("b")}
        </Worktree>
      </Workflow>
    ));

    const emptyResult = await runWorkflow(empty, { input: {}, rootDir: repo });
    const duplicateResult = await runWorkflow(duplicate, { input: {}, rootDir: repo });

    expect([emptyResult.status, emptyResult.error?.code]).toEqual(["failed", "INVALID_WORKFLOW"]);
    expect([duplicateResult.status, duplicateResult.error?.code]).toEqual(["failed", "DUPLICATE_ID"]);
    expect(gitLines(repo, "worktree", "list").length).toBe(1);
  });
});
