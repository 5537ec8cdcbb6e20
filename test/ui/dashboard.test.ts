/**
 * The dashboard in a real headless Chromium (playwright-core): a run started in the page waits for
 * approval in the runs list, is approved on its own page and finishes. The bundle is built fresh
 * into a temp folder (so a stale dist/ never hides a change) and served by an in-process server
 * with a bearer token over a temp SQLite database.
 *
 * Screenshots go to test-output/screenshots (git-ignored); with SMITHERS_UPDATE_SCREENSHOTS=1 to
 * docs/screenshots, the ones the README shows.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { approvals, runs } from "../../src/db/index.ts";
import { chromiumPath, dashboardHarness, SHOTS, TIMEOUT_MS, TOKEN } from "./harness.ts";

describe.skipIf(!chromiumPath)("the dashboard in Chromium", () => {
  const h = dashboardHarness();

  test(
    "a gate run started in the page waits for approval in the list, is approved on its page, and finishes",
    async () => {
      // A finished run beside it, so the list shows progress of both kinds.
      const steps = { runId: await h.start("steps") };
      await h.waitForStatus(steps.runId, ["finished"]);

      const page = await h.open("/");
      expect(page.url()).toBe(`${h.url}/`); // the token left the address bar
      await page.getByText("Start a run").click();
      await page.getByLabel("Workflow name").fill("gate");
      await page.getByRole("button", { name: "Start run" }).click();
      await page.waitForURL(/\/runs\/[^/]+$/);
      const runId = decodeURIComponent(new URL(page.url()).pathname.split("/").pop()!);

      await page.getByRole("link", { name: "All runs" }).click();
      await page
        .getByTestId("live-mode")
        .getByText(/^Live:/)
        .waitFor(); // the list follows the server's stream, not polling
      const row = page.locator(`tr[data-run="${runId}"]`);
      await row.locator(".status", { hasText: "waiting-approval" }).waitFor({ timeout: 10_000 });
      expect(await row.locator("td").nth(1).textContent()).toBe("server-gate");
      // Progress counts the tasks the run has recorded: the approval so far (the task after it is not rendered yet).
      expect(await row.locator("td").nth(4).textContent()).toContain("0/1");
      expect(await page.locator(`tr[data-run="${steps.runId}"] td`).nth(4).textContent()).toContain("6/6");
      await page.screenshot({ path: join(SHOTS, "runs-list.png"), fullPage: true });

      await row.getByRole("link").click();
      await page.getByRole("heading", { name: "Waiting for approval: Ship it?" }).waitFor();
      await page.screenshot({ path: join(SHOTS, "run-approval.png"), fullPage: true });
      // By keyboard: type the note, Tab to Approve, Enter.
      await page.getByLabel("Note (optional)").fill("looks good");
      await page.getByLabel("Note (optional)").press("Tab");
      await page.keyboard.press("Enter");
      await page.getByTestId("run-status").getByText("finished").waitFor({ timeout: 10_000 });
      // The tree: the sequence holds both, `after` finished with its output row.
      const after = page.locator('.tree [data-kind="sequence"] .task[data-task="after"]');
      expect(await after.locator(".status").textContent()).toBe("finished");
      expect(await after.locator(".output").textContent()).toBe('{"ok":true}');
      expect(await after.locator(".task-facts").textContent()).toContain("1 attempt");
      expect(await page.getByRole("button", { name: "Cancel run" }).isDisabled()).toBe(true);
      await page.screenshot({ path: join(SHOTS, "run-page.png"), fullPage: true });
      await page.close();

      // What the page did is in the database: approved with its note, and the run finished.
      const decision = await approvals.getApproval(h.server.db, { runId, nodeId: "ship" });
      expect([decision?.status, decision?.note]).toEqual(["approved", "looks good"]);
      expect((await runs.getRun(h.server.db, runId))?.status).toBe("finished");
    },
    TIMEOUT_MS,
  );

  test(
    "when the runs stream is refused the list falls back to polling GET /runs, and still shows a new run",
    async () => {
      const page = await h.browser.newPage({ colorScheme: "light" });
      await page.route(
        (u) => u.pathname === "/runs/stream",
        (route) => route.abort(),
      );
      await page.goto(`${h.url}/#token=${TOKEN}`);
      await page.getByTestId("live-mode").getByText("Polling every second").waitFor();
      const runId = await h.start("gate");
      await page.locator(`tr[data-run="${runId}"] .status`, { hasText: "waiting-approval" }).waitFor({ timeout: 10_000 });
      expect(await page.getByTestId("live-mode").textContent()).toContain("Polling");
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "the status filter narrows the list and stays in the URL",
    async () => {
      const gate = { runId: await h.start("gate") };
      await h.waitForStatus(gate.runId, ["waiting-approval"]);
      const page = await h.open("/");
      await page.locator(`tr[data-run="${gate.runId}"]`).waitFor();
      await page.getByLabel("Status").selectOption("finished");
      await page.locator(`tr[data-run="${gate.runId}"]`).waitFor({ state: "detached" });
      const statuses = await page.locator("tbody .status").allTextContents();
      expect(statuses.length).toBeGreaterThan(0);
      expect(new Set(statuses)).toEqual(new Set(["finished"]));
      expect(new URL(page.url()).search).toBe("?status=finished");
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "a run page opened by its URL in a dark-themed tab cancels a waiting run",
    async () => {
      const gate = { runId: await h.start("gate") };
      await h.waitForStatus(gate.runId, ["waiting-approval"]);
      const page = await h.browser.newPage({ colorScheme: "dark" });
      await page.goto(`${h.url}/runs/${gate.runId}#token=${TOKEN}`);
      await page.getByRole("heading", { name: "Waiting for approval: Ship it?" }).waitFor();
      // The dark theme's background, not the light one's white.
      expect(await page.evaluate("getComputedStyle(document.body).backgroundColor")).toBe("rgb(20, 23, 27)");
      await page.getByRole("button", { name: "Cancel run" }).click();
      await page.getByTestId("run-status").getByText("cancelled").waitFor({ timeout: 10_000 });
      expect((await runs.getRun(h.server.db, gate.runId))?.status).toBe("cancelled");
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "the theme toggle turns a light tab dark, keeps the choice across a reload, and goes back to the system's",
    async () => {
      const page = await h.open("/");
      const background = () => page.evaluate("getComputedStyle(document.body).backgroundColor");
      expect(await background()).toBe("rgb(255, 255, 255)");
      await page.getByRole("button", { name: "Theme: system. Switch to light" }).click();
      await page.getByRole("button", { name: "Theme: light. Switch to dark" }).press("Enter");
      await page.getByRole("button", { name: "Theme: dark. Switch to system" }).waitFor();
      expect(await background()).toBe("rgb(20, 23, 27)");
      await page.reload();
      await page.getByRole("button", { name: "Theme: dark. Switch to system" }).waitFor();
      expect(await background()).toBe("rgb(20, 23, 27)"); // applied again at start, not only remembered by the button
      await page.getByRole("button", { name: "Theme: dark. Switch to system" }).click();
      expect(await background()).toBe("rgb(255, 255, 255)");
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "without a token the page asks for one, and signs in with it",
    async () => {
      const page = await h.browser.newPage();
      await page.goto(`${h.url}/`);
      await page.getByText("This server needs a token.").waitFor();
      await page.getByLabel("Bearer token").fill(TOKEN);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator("table.runs tbody tr").first().waitFor();
      await page.close();
    },
    TIMEOUT_MS,
  );
});
