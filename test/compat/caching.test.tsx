/** @jsxImportSource smithers-workflows */
/**
 * Caching as smithers-orchestrator documents it ("Caching", the <Task> and <Workflow>
 * references, "Caching for iterative authoring", the gotcha on re-validated cached output),
 * checked on this engine: what runs, what is stored, what a second run reuses.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, scriptedAgent } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

const analysisSchema = z.object({ summary: z.string(), severity: z.enum(["low", "medium", "high"]) });

/** An analyst that answers every prompt, counting its calls. */
const countingAnalyst = () => scriptedAgent((_args, i) => ({ summary: `analysis ${i + 1}`, severity: "low" }), { id: "analyst" });

/** A workflow with one cached agent task, keyed by the input's repo, at a given cache version. */
function analyzeWorkflow(dbPath: string, analyst: ReturnType<typeof countingAnalyst>, version: string) {
  const kit = createSmithers({ input: z.object({ repo: z.string() }), analysis: analysisSchema }, { dbPath });
  const wf = kit.smithers((ctx) => (
    <kit.Workflow name="review">
      <kit.Task id="analyze" output={kit.outputs.analysis} agent={analyst} cache={{ by: (c) => ({ repo: c.input.repo }), version }}>
        {`Analyze ${ctx.input.repo}`}
      </kit.Task>
    </kit.Workflow>
  ));
  return { kit, wf };
}

describe("caching (smithers-orchestrator compatibility)", () => {
  test("a second run with the same cache.by value reuses the stored output: the agent is not called again and the row is written for the new run", async () => {
    const dbPath = tempDbPath();
    const analyst = countingAnalyst();
    const { wf } = analyzeWorkflow(dbPath, analyst, "v1");
    const first = await runWorkflow(wf, { input: { repo: "acme/app" } });
    const second = await runWorkflow(wf, { input: { repo: "acme/app" } });
    expect([first.status, second.status]).toEqual(["finished", "finished"]);
    expect(analyst.calls.length).toBe(1);
    expect(second.output).toEqual({ summary: "analysis 1", severity: "low" });
    expect(sql(dbPath, "SELECT run_id, summary FROM analysis ORDER BY run_id = ?", first.runId)).toEqual([
      { run_id: second.runId, summary: "analysis 1" },
      { run_id: first.runId, summary: "analysis 1" },
    ]);
    expect(sql(dbPath, "SELECT workflow_name, node_id, output_table, payload_json FROM _smithers_cache")).toEqual([
      { workflow_name: "review", node_id: "analyze", output_table: "analysis", payload_json: '{"summary":"analysis 1","severity":"low"}' },
    ]);
  });

  test("a different cache.by value is a different entry: the task runs for each value once", async () => {
    const dbPath = tempDbPath();
    const analyst = countingAnalyst();
    const { wf } = analyzeWorkflow(dbPath, analyst, "v1");
    for (const repo of ["acme/app", "acme/api", "acme/app", "acme/api"]) {
      expect((await runWorkflow(wf, { input: { repo } })).status).toBe("finished");
    }
    expect(analyst.calls.map((c) => c.prompt.split("\n")[0])).toEqual(["Analyze acme/app", "Analyze acme/api"]);
    expect(sql(dbPath, "SELECT count(*) AS entries FROM _smithers_cache")).toEqual([{ entries: 2 }]);
  });

  test("bumping cache.version invalidates what was cached under the old version", async () => {
    const dbPath = tempDbPath();
    const analyst = countingAnalyst();
    await runWorkflow(analyzeWorkflow(dbPath, analyst, "v1").wf, { input: { repo: "acme/app" } });
    const bumped = await runWorkflow(analyzeWorkflow(dbPath, analyst, "v2").wf, { input: { repo: "acme/app" } });
    expect(analyst.calls.length).toBe(2);
    expect(bumped.output).toEqual({ summary: "analysis 2", severity: "low" });
    const again = await runWorkflow(analyzeWorkflow(dbPath, analyst, "v2").wf, { input: { repo: "acme/app" } });
    expect([analyst.calls.length, again.output]).toEqual([2, { summary: "analysis 2", severity: "low" }]);
  });

  test("a schema change invalidates the cache by itself: a field added to the output schema makes the next run a miss", async () => {
    const dbPath = tempDbPath();
    const analyst = countingAnalyst();
    const before = analyzeWorkflow(dbPath, analyst, "v1");
    await runWorkflow(before.wf, { input: { repo: "acme/app" } });
    await before.kit.smithersDb.close();

    const widened = createSmithers({ input: z.object({ repo: z.string() }), analysis: analysisSchema.extend({ score: z.number().optional() }) }, { dbPath });
    const scorer = scriptedAgent([{ summary: "rescored", severity: "high", score: 3 }], { id: "analyst" });
    const wf = widened.smithers((ctx) => (
      <widened.Workflow name="review">
        <widened.Task id="analyze" output={widened.outputs.analysis} agent={scorer} cache={{ by: (c) => ({ repo: c.input.repo }), version: "v1" }}>
          {`Analyze ${ctx.input.repo}`}
        </widened.Task>
      </widened.Workflow>
    ));
    const after = await runWorkflow(wf, { input: { repo: "acme/app" } });
    expect([analyst.calls.length, scorer.calls.length]).toEqual([1, 1]);
    expect(after.output).toEqual({ summary: "rescored", severity: "high", score: 3 });
    expect(sql(dbPath, "SELECT count(DISTINCT schema_sig) AS signatures FROM _smithers_cache")).toEqual([{ signatures: 2 }]);
  });

  test("a cached output is validated again on a hit: an entry the schema now rejects is a miss, and the task runs instead of failing", async () => {
    const dbPath = tempDbPath();
    const analyst = countingAnalyst();
    const { wf } = analyzeWorkflow(dbPath, analyst, "v1");
    await runWorkflow(wf, { input: { repo: "acme/app" } });
    const tamper = new (await import("bun:sqlite")).Database(dbPath);
    tamper.run(`UPDATE _smithers_cache SET payload_json = '{"summary":"stale","severity":"catastrophic"}'`);
    tamper.close();
    const second = await runWorkflow(wf, { input: { repo: "acme/app" } });
    expect(second.status).toBe("finished");
    expect(analyst.calls.length).toBe(2);
    expect(second.output).toEqual({ summary: "analysis 2", severity: "low" });
    expect(sql(dbPath, "SELECT payload_json FROM _smithers_cache")).toEqual([{ payload_json: '{"summary":"analysis 2","severity":"low"}' }]);
  });

  test("<Workflow cache> reuses an unchanged upstream agent task while the downstream task is edited between runs", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ input: z.object({ repo: z.string() }), analysis: analysisSchema, report: z.object({ text: z.string() }) }, { dbPath });
    const analyst = countingAnalyst();
    const reports: string[] = [];
    const reportWorkflow = (heading: string) =>
      kit.smithers((ctx) => (
        <kit.Workflow name="report" cache>
          <kit.Task id="analyze" output={kit.outputs.analysis} agent={analyst}>
            {`Analyze ${ctx.input.repo}`}
          </kit.Task>
          <kit.Task id="report" output={kit.outputs.report}>
            {() => {
              const text = `${heading}: ${ctx.output(kit.outputs.analysis, { nodeId: "analyze" }).summary}`;
              reports.push(text);
              return { text };
            }}
          </kit.Task>
        </kit.Workflow>
      ));
    const first = await runWorkflow(reportWorkflow("Draft"), { input: { repo: "acme/app" } });
    const second = await runWorkflow(reportWorkflow("Final"), { input: { repo: "acme/app" } });
    expect([first.output, second.output]).toEqual([{ text: "Draft: analysis 1" }, { text: "Final: analysis 1" }]);
    expect(analyst.calls.length).toBe(1);
    expect(reports).toEqual(["Draft: analysis 1", "Final: analysis 1"]);
  });
});
