/**
 * Queued starts through the real front doors: a `smithers serve` process answering concurrent
 * POST /runs with one Idempotency-Key, debounce and bad values over HTTP; `up --detach` with
 * --priority, --tenant, --idempotency-key and --debounce, and `ps` showing a queued run's place.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { QueuePlace } from "../../src/contract/index.ts";
import { query, tempDbPath, waitFor } from "../helpers.ts";
import { cli, root, smithers } from "./cli-helpers.ts";

const WORKFLOWS = join(root, "test/fixtures/server");
const stops: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** A `smithers serve` process on `db`; resolves with its URL once it listens. */
async function serve(db: string, extra: string[] = []): Promise<string> {
  const proc = Bun.spawn([process.execPath, cli, "serve", "--port", "0", "--db", db, "--workflows", WORKFLOWS, ...extra], {
    cwd: root,
    env: { ...process.env, SMITHERS_TOKEN: "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  stops.push(async () => {
    proc.kill("SIGTERM");
    await proc.exited;
  });
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk);
    const url = /listening on (\S+)/.exec(seen)?.[1];
    if (url) return url;
  }
  throw new Error(`serve ended: ${seen}${await new Response(proc.stderr).text()}`);
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/runs`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

describe("POST /runs", () => {
  test("Idempotency-Key repeated 10 times concurrently: one run; a repeat after it finished names it; another body with the key is 409 IDEMPOTENCY_CONFLICT", async () => {
    const db = tempDbPath();
    const url = await serve(db);
    const body = { workflow: "steps", input: { delayMs: 0 }, tenant: "acme" };
    const responses = await Promise.all(Array.from({ length: 10 }, () => post(url, body, { "Idempotency-Key": "invoice-7" })));
    const answers = await Promise.all(
      responses.map(async (r) => ({
        http: r.status,
        replayed: r.headers.get("Idempotent-Replayed"),
        ...((await r.json()) as { runId: string; reused?: string }),
      })),
    );
    const runIds = new Set(answers.map((a) => a.runId as string));
    expect(runIds.size).toBe(1);
    const runId = [...runIds][0]!;
    expect(answers.filter((a) => a.http === 202 && a.reused === undefined)).toHaveLength(1);
    expect(answers.filter((a) => a.http === 200 && a.reused === "idempotency-key" && a.replayed === "true")).toHaveLength(9);
    await waitFor(
      async () => (await query<{ status: string }>(db, "SELECT status FROM _smithers_runs WHERE run_id = ?", runId))[0]?.status === "finished",
      15_000,
    );
    expect(await query(db, "SELECT run_id FROM _smithers_runs")).toEqual([{ run_id: runId }]);
    const later = await post(url, body, { "Idempotency-Key": "invoice-7" });
    expect([later.status, await later.json()]).toEqual([200, { runId, status: "finished", reused: "idempotency-key" }]);
    const other = await post(url, { ...body, input: { delayMs: 1 } }, { "Idempotency-Key": "invoice-7" });
    expect([other.status, ((await other.json()) as { code: string }).code]).toEqual([409, "IDEMPOTENCY_CONFLICT"]);
    expect(await query(db, "SELECT run_id FROM _smithers_runs")).toEqual([{ run_id: runId }]);
  });

  test("debounce collapses a burst into one run that starts after the quiet period with the latest input; the queued run shows its place in GET /runs", async () => {
    const db = tempDbPath();
    const url = await serve(db, ["--max-concurrent", "0"]);
    const answers = [];
    for (const delayMs of [1, 2, 3]) {
      const r = await post(url, { workflow: "steps", input: { delayMs }, priority: 2, debounce: { key: "sync", ms: 400 } });
      answers.push({ http: r.status, ...((await r.json()) as { runId: string; reused?: string }) });
    }
    const runId = answers[0]!.runId;
    expect(answers.map((a) => [a.http, a.runId, a.reused])).toEqual([
      [202, runId, undefined],
      [202, runId, "debounce"],
      [202, runId, "debounce"],
    ]);
    const list = (await (await fetch(`${url}/runs?status=queued`)).json()) as { runs: { runId: string; queue: Record<string, unknown> }[] };
    expect(list.runs.map((r) => [r.runId, r.queue.priority, r.queue.tenant, r.queue.debounceKey, typeof r.queue.notBeforeMs])).toEqual([
      [runId, 2, null, "sync", "number"],
    ]);
    expect(await query(db, "SELECT input_json FROM _smithers_queue")).toEqual([{ input_json: '{"delayMs":3}' }]);
    // A worker on the same database runs it, with the latest input.
    const worker = Bun.spawn([process.execPath, cli, "worker", "--db", db, "--workflows", WORKFLOWS, "--poll-interval", "100ms", "--quiet"], {
      cwd: root,
      stdout: "ignore",
      stderr: "ignore",
    });
    stops.push(async () => {
      worker.kill("SIGTERM");
      await worker.exited;
    });
    await waitFor(
      async () => (await query<{ status: string }>(db, "SELECT status FROM _smithers_runs WHERE run_id = ?", runId))[0]?.status === "finished",
      15_000,
    );
    expect(await query(db, "SELECT run_id FROM _smithers_runs")).toEqual([{ run_id: runId }]);
    expect(await query(db, "SELECT delay_ms FROM input WHERE run_id = ?", runId)).toEqual([{ delay_ms: 3 }]);
  });

  test("bad priority, tenant, debounce and Idempotency-Key are 400 INVALID_INPUT and write nothing", async () => {
    const db = tempDbPath();
    const url = await serve(db, ["--max-concurrent", "0"]);
    const bad: [unknown, Record<string, string>][] = [
      [{ workflow: "steps", priority: 1.5 }, {}],
      [{ workflow: "steps", priority: "high" }, {}],
      [{ workflow: "steps", tenant: "" }, {}],
      [{ workflow: "steps", debounce: { key: "k", ms: 0 } }, {}],
      [{ workflow: "steps", debounce: { key: "", ms: 10 } }, {}],
      [{ workflow: "steps", debounce: { key: "k", ms: 10 }, runId: "named" }, {}],
      [{ workflow: "steps" }, { "Idempotency-Key": "k".repeat(256) }],
      [{ workflow: "steps" }, { "Idempotency-Key": " " }],
    ];
    for (const [body, headers] of bad) {
      const r = await post(url, body, headers);
      expect([r.status, ((await r.json()) as { code: string }).code]).toEqual([400, "INVALID_INPUT"]);
    }
    expect(await query(db, "SELECT run_id FROM _smithers_queue")).toEqual([]);
    expect(await query(db, "SELECT key FROM _smithers_idempotency")).toEqual([]);
  });
});

describe("smithers up --detach", () => {
  test("--priority, --tenant, --idempotency-key and --debounce queue as asked, and ps shows the queued run's place", () => {
    const db = tempDbPath();
    const up = (...args: string[]) => smithers(["up", "test/fixtures/steps.tsx", "--detach", "--input", '{"label":"x"}', "--db", db, ...args]);
    const first = up("--priority", "7", "--tenant", "acme", "--idempotency-key", "k1", "--run-id", "p1");
    expect([first.code, first.stdout]).toEqual([0, expect.stringContaining("run p1 queued")]);
    const again = up("--priority", "7", "--tenant", "acme", "--idempotency-key", "k1", "--run-id", "p1");
    expect([again.code, again.stdout]).toEqual([0, expect.stringContaining("run p1 queued (started earlier with this idempotency key)")]);
    const conflict = up("--priority", "8", "--tenant", "acme", "--idempotency-key", "k1", "--run-id", "p1");
    expect([conflict.code, conflict.stderr]).toEqual([2, expect.stringContaining("IDEMPOTENCY_CONFLICT")]);
    expect(up("--debounce", "sync=1m").code).toBe(0);
    expect(up("--debounce", "sync=1m").stdout).toContain("(debounced into the waiting run)");
    const ps = smithers(["ps", "--db", db]);
    expect(ps.stdout).toContain("QUEUE");
    expect(ps.stdout).toContain("priority 7 tenant acme");
    expect(ps.stdout).toContain("debounce sync");
    const json = JSON.parse(smithers(["ps", "--json", "--db", db]).stdout) as { runId: string; queue?: QueuePlace }[];
    expect(json.find((r) => r.runId === "p1")?.queue).toEqual({ priority: 7, tenant: "acme", notBeforeMs: null, debounceKey: null });
    expect(json).toHaveLength(2);
  });

  test("bad queue flags exit 2 with USAGE and queue nothing; they need --detach", () => {
    const db = tempDbPath();
    for (const args of [
      ["--detach", "--priority", "1.5"],
      ["--detach", "--priority", "high"],
      ["--detach", "--tenant", ""],
      ["--detach", "--idempotency-key", "k".repeat(256)],
      ["--detach", "--debounce", "sync"],
      ["--detach", "--debounce", "sync=0s"],
      ["--detach", "--debounce", "=5s"],
      ["--detach", "--debounce", "sync=soon"],
      ["--priority", "3"],
    ]) {
      const r = smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--db", db, ...args]);
      expect([args.join(" "), r.code, r.stderr.includes("USAGE")]).toEqual([args.join(" "), 2, true]);
    }
    // Nothing was written: not even the database file was created.
    expect(existsSync(db)).toBe(false);
  });
});
