/**
 * The dashboard's views of time in Chromium. The run page's waterfall: its bars in the order and
 * at the lengths of the stored attempts, failed attempts with their error and stack, details on
 * focus, the run's input and its cost. The runs list's runs over time: its counts per minute and
 * spend per day against the stored runs. Screenshots: run-waterfall.png and runs-over-time.png
 * (SMITHERS_UPDATE_SCREENSHOTS=1 for docs/screenshots).
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

describe.skipIf(!chromiumPath)("the dashboard's views of time in Chromium", () => {
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

  test(
    "the runs list charts runs started, finished and failed per minute and spend per day, as the database counts them",
    async () => {
      const ok = await h.start("retries");
      const failed = await h.start("throws");
      await h.waitForStatus(ok, ["finished"]);
      await h.waitForStatus(failed, ["failed"]);
      const page = await h.open("/", { height: 1000 });
      const chart = page.getByTestId("runs-per-minute");
      await chart.locator('rect[data-series="failed"]').first().waitFor();
      const first = Number(await chart.getAttribute("data-first-minute"));
      const shown = await chart
        .locator("rect")
        .evaluateAll((rs) => rs.map((r) => `${r.getAttribute("data-minute")} ${r.getAttribute("data-series")} ${r.getAttribute("data-count")}`));

      const sqlite = new Database(h.dbPath, { readonly: true });
      type Row = { status: string; started_at_ms: number | null; finished_at_ms: number | null };
      const runs = sqlite.query<Row, [number]>("SELECT status, started_at_ms, finished_at_ms FROM _smithers_runs WHERE created_at_ms >= ?").all(first);
      const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
      const cost = sqlite
        .query<{ cost: number }, [number, number]>(
          "SELECT sum(a.cost_usd) AS cost FROM _smithers_attempts a JOIN _smithers_runs r ON r.run_id = a.run_id WHERE r.created_at_ms >= ? AND a.started_at_ms >= ?",
        )
        .get(today - 13 * 86_400_000, today)!.cost;
      sqlite.close();
      const counts = new Map<string, number>();
      const add = (ms: number | null, series: string) => {
        if (ms === null || ms < first) return;
        const k = `${Math.floor(ms / 60_000) * 60_000} ${series}`;
        counts.set(k, (counts.get(k) ?? 0) + 1);
      };
      for (const r of runs) {
        add(r.started_at_ms, "started");
        if (r.status === "finished" || r.status === "failed") add(r.finished_at_ms, r.status);
      }
      expect(shown.toSorted()).toEqual([...counts].map(([k, n]) => `${k} ${n}`).toSorted());
      expect(shown.some((s) => / failed [1-9]\d*$/.test(s))).toBe(true); // the throws run is among them

      const spend = page.getByTestId("spend-per-day").locator(`rect[data-day="${today}"]`);
      expect(Number(await spend.getAttribute("data-cost"))).toBeCloseTo(cost, 10);
      await page.getByRole("heading", { name: "Runs over time" }).scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SHOTS, "runs-over-time.png"), fullPage: true });
      await page.close();
    },
    TIMEOUT_MS,
  );
});
