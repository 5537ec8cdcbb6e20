/**
 * The run page's waterfall in Chromium: its bars in the order and at the lengths of the stored
 * attempts, failed attempts with their error and stack, details on focus, the run's input and its
 * cost. Screenshots: run-waterfall.png (SMITHERS_UPDATE_SCREENSHOTS=1 for docs/screenshots).
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { chromiumPath, dashboardHarness, SHOTS, TIMEOUT_MS } from "./harness.ts";

type StoredAttempt = { node_id: string; attempt: number; state: string; started_at_ms: number; finished_at_ms: number };
type StoredRun = { created_at_ms: number; started_at_ms: number; finished_at_ms: number };

function stored(dbPath: string, runId: string): { run: StoredRun; attempts: StoredAttempt[] } {
  const sqlite = new Database(dbPath, { readonly: true });
  try {
    const run = sqlite.query<StoredRun, [string]>("SELECT created_at_ms, started_at_ms, finished_at_ms FROM _smithers_runs WHERE run_id = ?").get(runId)!;
    const attempts = sqlite
      .query<StoredAttempt, [string]>(
        "SELECT node_id, attempt, state, started_at_ms, finished_at_ms FROM _smithers_attempts WHERE run_id = ? ORDER BY started_at_ms",
      )
      .all(runId);
    return { run, attempts };
  } finally {
    sqlite.close();
  }
}

describe.skipIf(!chromiumPath)("the run page's waterfall", () => {
  const h = dashboardHarness();

  test(
    "draws one bar per stored attempt in start order, each as long and as far along as its time in the database",
    async () => {
      const runId = await h.start("retries", { url: "https://example.com/prices" });
      await h.waitForStatus(runId, ["finished"]);
      const { run, attempts } = stored(h.dbPath, runId);
      const page = await h.open(`/runs/${runId}`);
      const running = page.locator('.bars .bar[data-kind="running"]');
      await running.nth(attempts.length - 1).waitFor();
      const shownOrder = await running.evaluateAll((els) => els.map((e) => [e.getAttribute("data-node"), Number(e.getAttribute("data-attempt"))]));
      expect(shownOrder).toEqual(attempts.map((a) => [a.node_id, a.attempt]));

      // The axis runs from the run's creation to its end: every bar's offset and width is its share of it.
      const fromMs = Math.min(run.created_at_ms, ...attempts.map((a) => a.started_at_ms));
      const spanMs = Math.max(run.finished_at_ms, ...attempts.map((a) => a.finished_at_ms)) - fromMs;
      const track = (await page.locator(".bars .track").first().boundingBox())!;
      for (const [i, a] of attempts.entries()) {
        const box = (await running.nth(i).boundingBox())!;
        const expectedWidth = Math.max(3, ((a.finished_at_ms - a.started_at_ms) / spanMs) * track.width);
        expect(Math.abs(box.width - expectedWidth)).toBeLessThan(2);
        expect(Math.abs(box.x - track.x - ((a.started_at_ms - fromMs) / spanMs) * track.width)).toBeLessThan(2);
      }
      // Each failed attempt is followed by a retry wait that fills the gap to the next attempt.
      const waits = page.locator('.bars .bar[data-kind="retry-wait"]');
      expect(await waits.count()).toBe(2);
      for (const [i, next] of [attempts[1]!, attempts[2]!].entries()) {
        const box = (await waits.nth(i).boundingBox())!;
        const before = attempts[i]!;
        const expectedWidth = Math.max(3, ((next.started_at_ms - before.finished_at_ms) / spanMs) * track.width);
        expect(Math.abs(box.width - expectedWidth)).toBeLessThan(2);
      }
      expect(await page.locator(".bars .bar-failed").count()).toBe(attempts.filter((a) => a.state === "failed").length);
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "focusing a bar with the keyboard shows its details, a failed attempt's error and stack among them",
    async () => {
      const runId = await h.start("retries");
      await h.waitForStatus(runId, ["finished"]);
      const page = await h.open(`/runs/${runId}`);
      const first = page.locator('.bars .bar[data-kind="running"][data-node="fetch"][data-attempt="1"]');
      await first.waitFor();
      await first.focus();
      const details = page.getByRole("region", { name: "Bar details" });
      await details.getByText("fetch · attempt 1: Running").waitFor();
      expect(await first.getAttribute("aria-describedby")).toBe(await details.getAttribute("id"));
      await details.getByText("upstream answered 503 (try 1)", { exact: false }).waitFor();
      await details.getByText("Stack of attempt 1").click();
      expect(await details.locator(".stack pre").textContent()).toContain("retries.tsx");

      // Tab moves to the next bar (the retry wait after it) and the details follow.
      await first.focus();
      await page.keyboard.press("Tab");
      const focused = await page.evaluate('document.activeElement.getAttribute("data-kind")');
      expect(focused).toBe("retry-wait");
      await details.getByText("fetch · before attempt 2: Retry wait").waitFor();
      expect(await details.getByTestId("bar-duration").textContent()).toMatch(/^\d+ ms$/);
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "the run page shows the run's input and its total tokens and cost",
    async () => {
      const runId = await h.start("retries", { url: "https://example.com/quotes" });
      await h.waitForStatus(runId, ["finished"]);
      const page = await h.open(`/runs/${runId}`, { height: 900 });
      await page.getByTestId("run-input").getByText("https://example.com/quotes", { exact: false }).waitFor();
      expect(await page.getByTestId("run-usage").textContent()).toBe("1,200 in / 80 out · $0.0042");
      const summary = page.locator('.bars .bar[data-node="summary"]');
      await summary.hover();
      await page.getByRole("region", { name: "Bar details" }).getByText("1,200 in / 80 out · $0.0042").waitFor();
      await page.screenshot({ path: join(SHOTS, "run-waterfall.png"), fullPage: true });
      await page.close();
    },
    TIMEOUT_MS,
  );
});
