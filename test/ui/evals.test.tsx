/**
 * Scores and the compare view in Chromium: the run page lists the run's scores as
 * `_smithers_scorers` holds them, its "Compare with" picker offers the workflow's other runs and
 * opens /runs/<a>/compare/<b>, which shows both runs task by task as the compare read model says.
 * Screenshot: run-compare.png.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Locator } from "playwright-core";
import { z } from "zod";
import { scorers } from "../../src/db/index.ts";
import { createSmithers } from "../../src/index.ts";
import { chromiumPath, dashboardHarness, SHOTS, TIMEOUT_MS } from "./harness.ts";

const { smithers, Workflow, Task, outputs } = createSmithers({
  input: z.object({ topic: z.string(), extra: z.boolean().default(false) }),
  note: z.object({ text: z.string() }),
});
const notes = smithers((ctx) => (
  <Workflow name="notes">
    <Task id="draft" output={outputs.note}>
      {{ text: `draft on ${ctx.input.topic}` }}
    </Task>
    {ctx.input.extra && (
      <Task id="appendix" output={outputs.note}>
        {{ text: "more" }}
      </Task>
    )}
  </Workflow>
));

/** Each row's cells as the page renders them (block elements on their own lines), whitespace collapsed. */
async function cellsOf(rows: Locator): Promise<string[][]> {
  const cells: string[][] = [];
  for (let i = 0; i < (await rows.count()); i++) cells.push((await rows.nth(i).locator("th, td").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim()));
  return cells;
}

describe.skipIf(!chromiumPath)("scores and the compare view", () => {
  const h = dashboardHarness({ workflows: [{ name: "notes", path: import.meta.path, workflow: notes }] });

  test(
    "the run page lists each stored score row: task, attempt, scorer, status, score, and the reason or the error",
    async () => {
      const runId = await h.start("notes", { topic: "tides" });
      await h.waitForStatus(runId, ["finished"]);
      const base = { runId, nodeId: "draft", iteration: 0, attempt: 1 };
      await scorers.insertScore(h.server.db, { ...base, id: "s1", scorerId: "len", scorerName: "Length", score: 0.25, reason: "too short", scoredAtMs: 1 });
      await scorers.insertScore(h.server.db, {
        ...base,
        id: "s2",
        scorerId: "judge",
        scorerName: "Judge",
        status: "error",
        score: null,
        error: "SCORER_TIMEOUT: 5 s",
        scoredAtMs: 2,
      });
      await scorers.insertScore(h.server.db, { ...base, id: "s3", scorerId: "tone", scorerName: "Tone", status: "pending", score: null, scoredAtMs: 3 });
      const page = await h.open(`/runs/${runId}`);
      const rows = page.getByTestId("run-scores").locator("tbody tr");
      await rows.nth(2).waitFor();
      const stored = await scorers.listScores(h.server.db, { runId });
      const expected = stored.map((s) => [
        s.nodeId,
        String(s.attempt),
        s.scorerName,
        s.status,
        s.status === "scored" ? s.score!.toFixed(3) : "–",
        (s.status === "error" ? s.error : s.reason) ?? "",
      ]);
      expect(await cellsOf(rows)).toEqual(expected);
      expect(expected).toEqual([
        ["draft", "1", "Length", "scored", "0.250", "too short"],
        ["draft", "1", "Judge", "error", "–", "SCORER_TIMEOUT: 5 s"],
        ["draft", "1", "Tone", "pending", "–", ""],
      ]);
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "Compare with another run of the workflow opens the compare view: outputs side by side, scores with their change, a task only one run has, totals",
    async () => {
      const a = await h.start("notes", { topic: "moons" });
      await h.waitForStatus(a, ["finished"]);
      const b = await h.start("notes", { topic: "comets", extra: true });
      await h.waitForStatus(b, ["finished"]);
      const row = { nodeId: "draft", iteration: 0, attempt: 1, scorerId: "len", scorerName: "Length" };
      await scorers.insertScore(h.server.db, { ...row, id: "a1", runId: a, score: 0.4, scoredAtMs: 1 });
      await scorers.insertScore(h.server.db, { ...row, id: "b1", runId: b, score: 0.9, scoredAtMs: 2 });

      const page = await h.open(`/runs/${a}`);
      await page.getByLabel("Compare with").selectOption(b);
      await page.getByRole("link", { name: "Compare", exact: true }).click();
      await page.waitForURL(`**/runs/${a}/compare/${b}`);
      const rows = page.getByTestId("compare-table").locator("tbody tr");
      await rows.nth(1).waitFor();
      const cells = await cellsOf(rows);
      expect(cells.map((c) => c.slice(0, 4))).toEqual([
        ["draft", 'finished {"text":"draft on moons"}', 'finished {"text":"draft on comets"}', "Length: 0.400 | 0.900 (+0.500)"],
        ["appendix only in B", "not in this run", 'finished {"text":"more"}', ""],
      ]);
      const totals = (await cellsOf(page.getByTestId("compare-totals")))[0]!;
      expect(totals.slice(0, 4)).toEqual(["Totals", "1 of 1 tasks finished", "2 of 2 tasks finished", "mean Length: 0.400 | 0.900 (+0.500)"]);
      expect(await page.getByTestId("compare-a").textContent()).toContain(a);
      await page.screenshot({ path: join(SHOTS, "run-compare.png"), fullPage: true });
      await page.close();
    },
    TIMEOUT_MS,
  );
});
