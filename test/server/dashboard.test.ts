import { beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers.ts";
import { post, serverPerTest, waitForStatus } from "./helpers.ts";

const serve = serverPerTest();

/** A stand-in for the built dashboard: a shell and one asset (the real bundle is tested in test/ui). */
let dashboardDir: string;
beforeAll(() => {
  dashboardDir = join(tempDir(), "dashboard");
  mkdirSync(join(dashboardDir, "assets"), { recursive: true });
  writeFileSync(join(dashboardDir, "index.html"), '<!doctype html><script type="module" src="/assets/main-abc.js"></script>');
  writeFileSync(join(dashboardDir, "assets", "main-abc.js"), "console.log('dashboard')");
});

const HTML = { Accept: "text/html,application/xhtml+xml" };

describe("registerDashboard", () => {
  test("the shell is served at /, /runs, /runs/<id>, /runs/<id>/events and /inbox to a browser, and the token still guards the API", async () => {
    const { url } = await serve({ token: "s3cret-long-enough-token", dashboardDir });
    for (const path of ["/", "/runs", "/runs/some-run", "/runs/some-run/events", "/inbox"]) {
      const res = await fetch(`${url}${path}`, { headers: HTML });
      expect([path, res.status, res.headers.get("content-type")]).toEqual([path, 200, "text/html; charset=utf-8"]);
      expect(await res.text()).toContain("/assets/main-abc.js");
    }
    expect((await fetch(`${url}/runs`)).status).toBe(401);
    expect((await fetch(`${url}/runs/some-run`, { headers: { Accept: "application/json" } })).status).toBe(401);
    for (const path of ["/runs/some-run/events", "/inbox"]) expect([path, (await fetch(`${url}${path}`)).status]).toEqual([path, 401]);
  });

  test("assets are served with their type and a long cache; other names are 404", async () => {
    const { url } = await serve({ dashboardDir });
    const js = await fetch(`${url}/assets/main-abc.js`);
    expect([js.status, js.headers.get("content-type"), await js.text()]).toEqual([200, "text/javascript; charset=utf-8", "console.log('dashboard')"]);
    expect(js.headers.get("cache-control")).toContain("immutable");
    expect((await fetch(`${url}/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${url}/assets/..%2Findex.html`)).status).toBe(404);
  });

  test("an API call to /runs/<id> still gets the JSON report", async () => {
    const { url } = await serve({ dashboardDir });
    await post(`${url}/runs`, { workflow: "steps", runId: "r1" });
    await waitForStatus(url, "r1", ["finished"]);
    const res = await fetch(`${url}/runs/r1`);
    expect(((await res.json()) as { status: string }).status).toBe("finished");
  });

  test("without a built dashboard / answers 503 saying how to build it", async () => {
    const { url } = await serve({ dashboardDir: join(tempDir(), "absent") });
    const res = await fetch(`${url}/`, { headers: HTML });
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("scripts/build-dashboard.ts");
  });
});

describe("GET /runs for the dashboard", () => {
  test("each run has its duration, progress done/total and usage, and ?workflow= narrows the list", async () => {
    const { url } = await serve();
    await post(`${url}/runs`, { workflow: "steps", runId: "s1" });
    await post(`${url}/runs`, { workflow: "gate", runId: "g1" });
    await waitForStatus(url, "s1", ["finished"]);
    await waitForStatus(url, "g1", ["waiting-approval"]);
    type Item = { runId: string; workflow: string; progress: { done: number; failed: number; total: number }; durationMs: number; usage: unknown };
    const all = ((await (await fetch(`${url}/runs`)).json()) as { runs: Item[] }).runs;
    const byId = new Map(all.map((r) => [r.runId, r]));
    expect(byId.get("s1")?.progress).toEqual({ done: 6, failed: 0, total: 6 });
    expect(byId.get("g1")?.progress).toEqual({ done: 0, failed: 0, total: 1 });
    expect(byId.get("s1")?.usage).toEqual({ inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costUsd: null });
    expect(byId.get("s1")?.durationMs).toBeGreaterThanOrEqual(0);
    const gates = ((await (await fetch(`${url}/runs?workflow=server-gate`)).json()) as { runs: Item[] }).runs;
    expect(gates.map((r) => r.runId)).toEqual(["g1"]);
    const waiting = ((await (await fetch(`${url}/runs?status=waiting-approval`)).json()) as { runs: Item[] }).runs;
    expect(waiting.map((r) => r.runId)).toEqual(["g1"]);
    // A status no run can have is refused, as `smithers ps --status` refuses it, not answered with an empty list.
    const bogus = await fetch(`${url}/runs?status=bogus`);
    expect([bogus.status, ((await bogus.json()) as { code: string }).code]).toEqual([400, "INVALID_INPUT"]);
  });
});

describe("GET /runs/:id/outputs", () => {
  test("lists each finished task's output row as its schema reads it, keys left out", async () => {
    const { url } = await serve();
    await post(`${url}/runs`, { workflow: "gate", runId: "g2" });
    await waitForStatus(url, "g2", ["waiting-approval"]);
    await post(`${url}/runs/g2/approve`, { note: "ok" });
    await waitForStatus(url, "g2", ["finished"]);
    const { outputs } = (await (await fetch(`${url}/runs/g2/outputs`)).json()) as {
      outputs: { nodeId: string; iteration: number; table: string; row: Record<string, unknown> }[];
    };
    const after = outputs.find((o) => o.nodeId === "after");
    expect(after).toEqual({ nodeId: "after", iteration: 0, table: "done", row: { ok: true } });
    expect(outputs.map((o) => o.nodeId).sort()).toEqual(["after", "ship"]);
  });

  test("a run of a workflow the server does not serve still shows its stored columns", async () => {
    const first = await serve();
    await post(`${first.url}/runs`, { workflow: "steps", runId: "s2" });
    await waitForStatus(first.url, "s2", ["finished"]);
    await first.server.stop();
    const { url } = await serve({ dbPath: first.dbPath, workflowsDir: tempDir() });
    const { outputs } = (await (await fetch(`${url}/runs/s2/outputs`)).json()) as { outputs: { nodeId: string; row: unknown }[] };
    expect(outputs.find((o) => o.nodeId === "step-3")?.row).toEqual({ n: 3 });
    expect(outputs).toHaveLength(6);
  });
});
