/**
 * The dashboard in a real headless Chromium (playwright-core): a run started in the page waits for
 * approval in the runs list, is approved on its own page and finishes. The bundle is built fresh
 * into a temp folder (so a stale dist/ never hides a change) and served by an in-process server
 * with a bearer token over a temp SQLite database.
 *
 * Screenshots go to test-output/screenshots (git-ignored); with SMITHERS_UPDATE_SCREENSHOTS=1 to
 * docs/screenshots, the ones the README shows.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { buildDashboard } from "../../scripts/build-dashboard.ts";
import { approvals, runs } from "../../src/db/index.ts";
import type { SmithersServer } from "../../src/server/index.ts";
import { tempDir } from "../helpers.ts";
import { post, startServer } from "../server/helpers.ts";
import { findChromium } from "../support/chromium.ts";

const chromiumPath = findChromium();
const TOKEN = "dashboard-test-token";
const AUTH = { Authorization: `Bearer ${TOKEN}` };
/** A browser test takes a few seconds; each gets this long (bunfig.toml's default is for the rest). */
const TIMEOUT_MS = 30_000;
const SHOTS = join(import.meta.dir, "..", "..", process.env.SMITHERS_UPDATE_SCREENSHOTS === "1" ? "docs/screenshots" : "test-output/screenshots");

describe.skipIf(!chromiumPath)("the dashboard in Chromium", () => {
  let server: SmithersServer;
  let url: string;
  let browser: Browser;

  beforeAll(async () => {
    const dashboardDir = join(tempDir(), "dashboard");
    await buildDashboard(dashboardDir);
    ({ server, url } = await startServer({ token: TOKEN, dashboardDir }));
    browser = await chromium.launch({ executablePath: chromiumPath! });
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop({ drain: false });
  });

  /** A fresh tab at `path`, signed in through the `#token=` fragment. */
  async function open(path: string): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1200, height: 720 }, colorScheme: "light" });
    await page.goto(`${url}${path}#token=${TOKEN}`);
    return page;
  }

  test(
    "a gate run started in the page waits for approval in the list, is approved on its page, and finishes",
    async () => {
      // A finished run beside it, so the list shows progress of both kinds.
      const steps = (await (await post(`${url}/runs`, { workflow: "steps" }, AUTH)).json()) as { runId: string };
      await waitForStatusAuthed(steps.runId, ["finished"]);

      const page = await open("/");
      expect(page.url()).toBe(`${url}/`); // the token left the address bar
      await page.getByText("Start a run").click();
      await page.getByLabel("Workflow name").fill("gate");
      await page.getByRole("button", { name: "Start run" }).click();
      await page.waitForURL(/\/runs\/[^/]+$/);
      const runId = decodeURIComponent(new URL(page.url()).pathname.split("/").pop()!);

      await page.getByRole("link", { name: "All runs" }).click();
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
      const after = page.locator('tr[data-task="after"]');
      expect(await after.locator(".status").textContent()).toBe("finished");
      expect(await after.locator(".output").textContent()).toBe('{"ok":true}');
      expect(await page.getByRole("button", { name: "Cancel run" }).isDisabled()).toBe(true);
      await page.screenshot({ path: join(SHOTS, "run-page.png"), fullPage: true });
      await page.close();

      // What the page did is in the database: approved with its note, and the run finished.
      const decision = await approvals.getApproval(server.db, { runId, nodeId: "ship" });
      expect([decision?.status, decision?.note]).toEqual(["approved", "looks good"]);
      expect((await runs.getRun(server.db, runId))?.status).toBe("finished");
    },
    TIMEOUT_MS,
  );

  test(
    "the status filter narrows the list and stays in the URL",
    async () => {
      const gate = (await (await post(`${url}/runs`, { workflow: "gate" }, AUTH)).json()) as { runId: string };
      await waitForStatusAuthed(gate.runId, ["waiting-approval"]);
      const page = await open("/");
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
      const gate = (await (await post(`${url}/runs`, { workflow: "gate" }, AUTH)).json()) as { runId: string };
      await waitForStatusAuthed(gate.runId, ["waiting-approval"]);
      const page = await browser.newPage({ colorScheme: "dark" });
      await page.goto(`${url}/runs/${gate.runId}#token=${TOKEN}`);
      await page.getByRole("heading", { name: "Waiting for approval: Ship it?" }).waitFor();
      // The dark theme's background, not the light one's white.
      expect(await page.evaluate("getComputedStyle(document.body).backgroundColor")).toBe("rgb(20, 23, 27)");
      await page.getByRole("button", { name: "Cancel run" }).click();
      await page.getByTestId("run-status").getByText("cancelled").waitFor({ timeout: 10_000 });
      expect((await runs.getRun(server.db, gate.runId))?.status).toBe("cancelled");
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "without a token the page asks for one, and signs in with it",
    async () => {
      const page = await browser.newPage();
      await page.goto(`${url}/`);
      await page.getByText("This server needs a token.").waitFor();
      await page.getByLabel("Bearer token").fill(TOKEN);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator("table.runs tbody tr").first().waitFor();
      await page.close();
    },
    TIMEOUT_MS,
  );

  async function waitForStatusAuthed(runId: string, statuses: string[]): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const res = await fetch(`${url}/runs/${runId}`, { headers: AUTH });
      if (res.ok && statuses.includes(((await res.json()) as { status: string }).status)) return;
      await Bun.sleep(25);
    }
    throw new Error(`run ${runId} did not reach ${statuses.join("/")}`);
  }
});
