/** GET /runs/:id/scores and GET /runs/:a/compare/:b: what the run page's scores and the compare view read. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { RunComparison, RunScores } from "../../src/contract/index.ts";
import { scorers } from "../../src/db/index.ts";
import type { SmithersServer } from "../../src/server/index.ts";
import { post, startServer, waitForStatus } from "./helpers.ts";

let server: SmithersServer;
let url: string;
beforeAll(async () => {
  ({ server, url } = await startServer());
  for (const runId of ["s-a", "s-b"]) {
    await post(`${url}/runs`, { workflow: "steps", runId });
    await waitForStatus(url, runId, ["finished"]);
  }
  const row = { iteration: 0, attempt: 1, scorerId: "q", scorerName: "Quality" };
  await scorers.insertScore(server.db, { ...row, id: "1", runId: "s-a", nodeId: "step-0", score: 0.4, reason: "thin", scoredAtMs: 1 });
  await scorers.insertScore(server.db, { ...row, id: "2", runId: "s-b", nodeId: "step-0", score: 0.9, reason: "full", scoredAtMs: 2 });
  await scorers.insertScore(server.db, {
    ...row,
    id: "3",
    runId: "s-b",
    nodeId: "step-1",
    status: "error",
    score: null,
    error: "SCORER_FAILED: judge down",
    scoredAtMs: 3,
  });
});
afterAll(async () => {
  await server?.stop({ drain: false });
});

describe("GET /runs/:id/scores", () => {
  test("answers every score row of the run in the order recorded, a failed one with its error", async () => {
    const res = await fetch(`${url}/runs/s-b/scores`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as RunScores;
    expect(body.scores.map((s) => [s.nodeId, s.scorerName, s.status, s.score, s.reason, s.error])).toEqual([
      ["step-0", "Quality", "scored", 0.9, "full", null],
      ["step-1", "Quality", "error", null, null, "SCORER_FAILED: judge down"],
    ]);
  });

  test("a run with no scores answers an empty list; an unknown run 404 RUN_NOT_FOUND", async () => {
    await post(`${url}/runs`, { workflow: "steps", runId: "s-none" });
    await waitForStatus(url, "s-none", ["finished"]);
    expect(((await (await fetch(`${url}/runs/s-none/scores`)).json()) as RunScores).scores).toEqual([]);
    const missing = await fetch(`${url}/runs/nope/scores`);
    expect([missing.status, ((await missing.json()) as { code: string }).code]).toEqual([404, "RUN_NOT_FOUND"]);
  });
});

describe("GET /runs/:a/compare/:b", () => {
  test("answers the two runs task by task with the scores' change, as eval compare --json prints", async () => {
    const res = await fetch(`${url}/runs/s-a/compare/s-b`);
    expect(res.status).toBe(200);
    const c = (await res.json()) as RunComparison;
    expect(c.tasks.map((t) => t.nodeId)).toEqual(["step-0", "step-1", "step-2", "step-3", "step-4", "step-5"]);
    expect(c.tasks[0]!.scores.map((s) => [s.a?.score, s.b?.score, s.delta])).toEqual([[0.4, 0.9, 0.5]]);
    expect(c.tasks[0]!.a!.output).toEqual({ n: 0 });
    expect(c.scoreMeans).toEqual([{ scorerId: "q", scorerName: "Quality", a: 0.4, b: 0.9, delta: 0.5 }]);
  });

  test("an unknown run on either side is 404 RUN_NOT_FOUND", async () => {
    for (const path of ["nope/compare/s-a", "s-a/compare/nope"]) {
      const res = await fetch(`${url}/runs/${path}`);
      expect([path, res.status, ((await res.json()) as { code: string }).code]).toEqual([path, 404, "RUN_NOT_FOUND"]);
    }
  });
});
