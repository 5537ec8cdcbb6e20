/**
 * One browser and one server for a browser test file: the bundle is built fresh into a temp folder
 * (so a stale dist/ never hides a change) and served by an in-process server with a bearer token
 * over a temp SQLite database, with test/fixtures/server and test/fixtures/dashboard registered.
 *
 * Screenshots go to test-output/screenshots (git-ignored); with SMITHERS_UPDATE_SCREENSHOTS=1 to
 * docs/screenshots, the ones the README shows.
 */
import { afterAll, beforeAll } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { buildDashboard } from "../../scripts/build-dashboard.ts";
import { loadWorkflowsDir, type RegisteredWorkflow, type SmithersServer } from "../../src/server/index.ts";
import { tempDir } from "../helpers.ts";
import { post, startServer } from "../server/helpers.ts";
import { findChromium } from "../support/chromium.ts";

export const chromiumPath = findChromium();
export const TOKEN = "dashboard-test-token";
export const AUTH = { Authorization: `Bearer ${TOKEN}` };
/** A browser test takes a few seconds; each gets this long (bunfig.toml's default is for the rest). */
export const TIMEOUT_MS = 30_000;
export const SHOTS = join(import.meta.dir, "..", "..", process.env.SMITHERS_UPDATE_SCREENSHOTS === "1" ? "docs/screenshots" : "test-output/screenshots");
const DASHBOARD_FIXTURES = join(import.meta.dir, "..", "fixtures", "dashboard");

export type Harness = {
  readonly server: SmithersServer;
  readonly url: string;
  /** The server's SQLite file, for tests that compare the page with the stored rows. */
  readonly dbPath: string;
  readonly browser: Browser;
  /** A fresh light-themed tab at `path`, signed in through the `#token=` fragment. */
  open(path: string, o?: { width?: number; height?: number }): Promise<Page>;
  /** Starts a run through the API; resolves with its id. */
  start(workflow: string, input?: unknown): Promise<string>;
  /** Polls GET /runs/:id until its status is one of `statuses`. */
  waitForStatus(runId: string, statuses: string[], ms?: number): Promise<void>;
};

/**
 * Call at the top of a describe block: starts the server and browser before its tests, stops them
 * after. `workflows` are registered beside the fixtures (a test's own, built in its file).
 */
export function dashboardHarness(o: { workflows?: RegisteredWorkflow[] } = {}): Harness {
  let server: SmithersServer;
  let url: string;
  let dbPath: string;
  let browser: Browser;
  beforeAll(async () => {
    const dashboardDir = join(tempDir(), "dashboard");
    await buildDashboard(dashboardDir);
    ({ server, url, dbPath } = await startServer({
      token: TOKEN,
      dashboardDir,
      workflows: [...(await loadWorkflowsDir(DASHBOARD_FIXTURES)), ...(o.workflows ?? [])],
    }));
    browser = await chromium.launch({ executablePath: chromiumPath! });
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop({ drain: false });
  });
  return {
    get server() {
      return server;
    },
    get url() {
      return url;
    },
    get dbPath() {
      return dbPath;
    },
    get browser() {
      return browser;
    },
    async open(path, o = {}) {
      // Bun's test runner now and then takes the browser for a process a test left behind and
      // kills it between tests (seen twice in a dozen CI runs): a later test gets a new one.
      if (!browser.isConnected()) browser = await chromium.launch({ executablePath: chromiumPath! });
      const page = await browser.newPage({ viewport: { width: o.width ?? 1200, height: o.height ?? 720 }, colorScheme: "light" });
      await page.goto(`${url}${path}#token=${TOKEN}`);
      return page;
    },
    async start(workflow, input) {
      const res = await post(`${url}/runs`, { workflow, ...(input === undefined ? {} : { input }) }, AUTH);
      return ((await res.json()) as { runId: string }).runId;
    },
    async waitForStatus(runId, statuses, ms = 10_000) {
      const deadline = Date.now() + ms;
      let status = "";
      while (Date.now() < deadline) {
        const res = await fetch(`${url}/runs/${runId}`, { headers: AUTH });
        if (res.ok) status = ((await res.json()) as { status: string }).status;
        if (statuses.includes(status)) return;
        await Bun.sleep(25);
      }
      throw new Error(`run ${runId} still ${status || "unknown"}, not ${statuses.join("/")}`);
    },
  };
}
