import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import type { RunActivity, Waterfall } from "../../src/contract/index.ts";
import { forkRun } from "../../src/engine/index.ts";
import { loadWorkflowsDir, type SmithersServer } from "../../src/server/index.ts";
import { FIXTURES, post, readSse, startServer, waitForStatus } from "./helpers.ts";

const DASHBOARD_FIXTURES = join(import.meta.dir, "..", "fixtures", "dashboard");

// One server for the file: every test starts its own runs under its own ids.
let server: SmithersServer;
let url: string;
let dbPath: string;
beforeAll(async () => {
  ({ server, url, dbPath } = await startServer({ workflows: await loadWorkflowsDir(DASHBOARD_FIXTURES) }));
  await post(`${url}/runs`, { workflow: "steps", runId: "steps-1" });
  await waitForStatus(url, "steps-1", ["finished"]);
});
afterAll(async () => {
  await server?.stop({ drain: false });
});

type Tree = { tag: string; props: Record<string, unknown>; children: Tree[] };
type FrameAt = {
  frameNo: number;
  lastFrameNo: number;
  createdAtMs: number;
  tree: Tree;
  changes: { mounted: { id: string }[]; unmounted: { id: string }[]; changed: { id: string; props: Record<string, { from: unknown; to: unknown }> }[] };
};

const tasksOf = (t: Tree): Tree[] => (t.tag === "task" ? [t] : t.children.flatMap(tasksOf));
const getJson = async <T>(path: string): Promise<[number, T]> => {
  const res = await fetch(`${url}${path}`);
  return [res.status, (await res.json()) as T];
};

describe("GET /runs/:id/frames", () => {
  test("lists every frame of the run in order with its time, encoding and size", async () => {
    const [status, body] = await getJson<{ count: number; frames: { frameNo: number; createdAtMs: number; encoding: string; bytes: number }[] }>(
      "/runs/steps-1/frames",
    );
    expect(status).toBe(200);
    expect(body.count).toBe(body.frames.length);
    expect(body.frames.map((f) => f.frameNo)).toEqual([...Array(body.count).keys()]);
    expect(body.frames[0]?.encoding).toBe("full");
    expect(body.frames.every((f) => f.bytes > 0 && f.createdAtMs > 0)).toBe(true);
  });

  test("an unknown run is 404 RUN_NOT_FOUND", async () => {
    const res = await fetch(`${url}/runs/nope/frames`);
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, "RUN_NOT_FOUND"]);
  });
});

describe("GET /runs/:id/frames/:n", () => {
  test("frame 0 is the first tree: the first task running, the rest pending, all mounted", async () => {
    const [status, f] = await getJson<FrameAt>("/runs/steps-1/frames/0");
    expect(status).toBe(200);
    expect(f.tree.tag).toBe("workflow");
    expect(f.tree.children[0]?.tag).toBe("sequence");
    const tasks = tasksOf(f.tree);
    expect(tasks.map((t) => t.props.id)).toEqual(["step-0", "step-1", "step-2", "step-3", "step-4", "step-5"]);
    expect(tasks.map((t) => t.props.state)).toEqual(["running", "pending", "pending", "pending", "pending", "pending"]);
    expect(f.changes.mounted.map((n) => n.id)).toEqual(["step-0", "step-1", "step-2", "step-3", "step-4", "step-5"]);
    expect(f.changes.changed).toEqual([]);
  });

  test("latest is the last frame: every task finished, and its changes are those from the frame before", async () => {
    const [, f] = await getJson<FrameAt>("/runs/steps-1/frames/latest");
    expect(f.frameNo).toBe(f.lastFrameNo);
    expect(new Set(tasksOf(f.tree).map((t) => t.props.state))).toEqual(new Set(["finished"]));
    const [, before] = await getJson<FrameAt>(`/runs/steps-1/frames/${f.frameNo - 1}`);
    const was = new Map(tasksOf(before.tree).map((t) => [t.props.id, t.props.state]));
    const moved = tasksOf(f.tree).filter((t) => was.get(t.props.id) !== t.props.state);
    expect(f.changes.changed.map((c) => c.id)).toEqual(moved.map((t) => String(t.props.id)));
    expect(f.changes.changed[0]?.props.state?.to).toBe("finished");
    expect(f.changes.mounted).toEqual([]);
  });

  test("a run forked from frame 2 is listed with that frame, in the list and in the frame", async () => {
    const steps = (await loadWorkflowsDir(FIXTURES)).find((w) => w.name === "steps")!;
    await post(`${url}/runs`, { workflow: "steps", runId: "steps-forked" });
    await waitForStatus(url, "steps-forked", ["finished"]);
    const fork = await forkRun(steps.workflow, { runId: "steps-forked", frame: 2, newRunId: "steps-fork-1", dbPath });
    expect(fork.runId).toBe("steps-fork-1");
    const [, list] = await getJson<{ frames: { frameNo: number; forks: { runId: string; status: string }[] }[] }>("/runs/steps-forked/frames");
    expect(list.frames.filter((f) => f.forks.length > 0).map((f) => [f.frameNo, f.forks.map((x) => x.runId)])).toEqual([[2, ["steps-fork-1"]]]);
    const [, two] = await getJson<FrameAt & { forks: { runId: string; status: string }[] }>("/runs/steps-forked/frames/2");
    expect(two.forks.map((f) => [f.runId, f.status])).toEqual([["steps-fork-1", "paused"]]);
    const [, three] = await getJson<FrameAt & { forks: unknown[] }>("/runs/steps-forked/frames/3");
    expect(three.forks).toEqual([]);
  });

  test("a frame past the last is 404 FRAME_NOT_FOUND, and a frame that is not a number is 400 INVALID_INPUT", async () => {
    const [, last] = await getJson<FrameAt>("/runs/steps-1/frames/latest");
    const past = await fetch(`${url}/runs/steps-1/frames/${last.lastFrameNo + 1}`);
    expect([past.status, ((await past.json()) as { code: string }).code]).toEqual([404, "FRAME_NOT_FOUND"]);
    for (const bad of ["-1", "1.5", "abc"]) {
      const res = await fetch(`${url}/runs/steps-1/frames/${bad}`);
      expect([bad, res.status, ((await res.json()) as { code: string }).code]).toEqual([bad, 400, "INVALID_INPUT"]);
    }
  });
});

describe("GET /inbox", () => {
  test("lists a waiting run's select approval with its title, summary, metadata and options, and a human task with its JSON Schema", async () => {
    await post(`${url}/runs`, { workflow: "choose", runId: "inbox-choose" });
    await post(`${url}/runs`, { workflow: "human-form", runId: "inbox-human" });
    await waitForStatus(url, "inbox-choose", ["waiting-approval"]);
    await waitForStatus(url, "inbox-human", ["waiting-approval"]);
    type Inbox = {
      approvals: { runId: string; nodeId: string; workflowName: string; runStatus: string; request: Record<string, unknown> }[];
      human: { requestId: string; runId: string; nodeId: string; prompt: string; schema: { properties: Record<string, { type?: string }> } }[];
    };
    const [status, inbox] = await getJson<Inbox>("/inbox");
    expect(status).toBe(200);
    const plan = inbox.approvals.find((a) => a.runId === "inbox-choose");
    expect(plan).toMatchObject({ nodeId: "plan", workflowName: "dash-choose", runStatus: "waiting-approval" });
    expect(plan?.request).toMatchObject({
      title: "How should 1.4 roll out?",
      summary: "Pick one plan.",
      metadata: { version: "1.4", owner: "release-team" },
      mode: "select",
    });
    expect(((plan?.request.options ?? []) as { key: string }[]).map((o) => o.key)).toEqual(["canary", "full"]);
    const review = inbox.human.find((h) => h.runId === "inbox-human");
    expect(review?.nodeId).toBe("review");
    expect(review?.prompt).toBe("Review release 1.4: fill in every field.");
    expect(review?.schema.properties.reviewers?.type).toBe("integer");
    expect(review?.schema.properties.contact?.type).toBe("object");
  });

  test("a decided approval leaves the inbox", async () => {
    await post(`${url}/runs`, { workflow: "gate", runId: "inbox-gate" });
    await waitForStatus(url, "inbox-gate", ["waiting-approval"]);
    const listed = async () => (await getJson<{ approvals: { runId: string }[] }>("/inbox"))[1].approvals.some((a) => a.runId === "inbox-gate");
    expect(await listed()).toBe(true);
    expect((await post(`${url}/runs/inbox-gate/approve`, {})).status).toBe(200);
    expect(await listed()).toBe(false);
  });
});

describe("POST /human/:requestId/answer for the dashboard's form", () => {
  test("an answer that fails the schema is 400 HUMAN_ANSWER_INVALID with each problem at its field's path; a valid one lets the run finish", async () => {
    await post(`${url}/runs`, { workflow: "human-form", runId: "answer-1" });
    await waitForStatus(url, "answer-1", ["waiting-approval"]);
    const [, inbox] = await getJson<{ human: { requestId: string; runId: string }[] }>("/inbox");
    const requestId = inbox.human.find((h) => h.runId === "answer-1")!.requestId;
    const answer = { title: "v1", score: 11, reviewers: 2, approved: true, severity: "low", tags: ["a"], contact: { name: "", email: "a@b" } };
    const bad = await post(`${url}/human/${encodeURIComponent(requestId)}/answer`, { data: answer });
    const body = (await bad.json()) as { code: string; fields: { path: (string | number)[]; message: string }[] };
    expect([bad.status, body.code]).toEqual([400, "HUMAN_ANSWER_INVALID"]);
    expect(body.fields.map((f) => f.path.join("."))).toEqual(["title", "score", "contact.name"]);
    const good = await post(`${url}/human/${encodeURIComponent(requestId)}/answer`, {
      data: { ...answer, title: "Release 1.4", score: 9, contact: { name: "Ada", email: "a@b" } },
    });
    expect(good.status).toBe(200);
    await waitForStatus(url, "answer-1", ["finished"]);
  });
});

describe("GET /runs/stream", () => {
  test("sends the runs list at once, then again when a run changes, filtered like GET /runs", async () => {
    const events = readSse(`${url}/runs/stream?workflow=server-gate`, {
      stop: (e) =>
        e.some((x) =>
          (JSON.parse(x.data) as { runs: { runId: string; status: string }[] }).runs.some((r) => r.runId === "stream-gate" && r.status === "waiting-approval"),
        ),
    });
    await Bun.sleep(100);
    await post(`${url}/runs`, { workflow: "gate", runId: "stream-gate" });
    const got = await events;
    expect(got.every((e) => e.event === "runs")).toBe(true);
    const lists = got.map((e) => (JSON.parse(e.data) as { runs: { runId: string; workflow: string }[] }).runs);
    expect(lists[0]?.some((r) => r.runId === "stream-gate")).toBe(false); // the first list came before the run
    expect(new Set(lists.flat().map((r) => r.workflow))).toEqual(new Set(["server-gate"]));
    expect(got.length).toBeGreaterThan(1);
  });

  test("a bad filter is 400 INVALID_INPUT", async () => {
    const res = await fetch(`${url}/runs/stream?limit=0`);
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([400, "INVALID_INPUT"]);
  });
});

describe("GET /runs/:id/waterfall", () => {
  type Stored = { node_id: string; attempt: number; state: string; started_at_ms: number; finished_at_ms: number };
  const stored = (runId: string) => {
    const sqlite = new Database(dbPath, { readonly: true });
    try {
      return sqlite
        .query<Stored, [string]>(
          "SELECT node_id, attempt, state, started_at_ms, finished_at_ms FROM _smithers_attempts WHERE run_id = ? ORDER BY started_at_ms",
        )
        .all(runId);
    } finally {
      sqlite.close();
    }
  };

  test("has one running bar per stored attempt with its times and outcome, and a retry wait from each failure to the next attempt", async () => {
    await post(`${url}/runs`, { workflow: "retries", runId: "retries-1" });
    await waitForStatus(url, "retries-1", ["finished"]);
    const [status, w] = await getJson<Waterfall>("/runs/retries-1/waterfall");
    expect(status).toBe(200);
    const rows = stored("retries-1");
    expect(rows.map((r) => [r.node_id, r.attempt, r.state])).toEqual([
      ["fetch", 1, "failed"],
      ["fetch", 2, "failed"],
      ["fetch", 3, "finished"],
      ["summary", 1, "finished"],
    ]);
    const running = w.bars.filter((b) => b.kind === "running");
    expect(running.map((b) => [b.nodeId, b.attempt, b.state, b.startMs, b.endMs])).toEqual(
      rows.map((r) => [r.node_id, r.attempt, r.state, r.started_at_ms, r.finished_at_ms]),
    );
    expect(running[0]?.error?.message).toContain("upstream answered 503 (try 1)");
    expect(running[3]?.usage).toEqual({ inputTokens: 1200, cachedInputTokens: 200, outputTokens: 80, costUsd: 0.0042 });
    const waits = w.bars.filter((b) => b.kind === "retry-wait");
    expect(waits.map((b) => [b.attempt, b.startMs, b.endMs])).toEqual([
      [2, rows[0]!.finished_at_ms, rows[1]!.started_at_ms],
      [3, rows[1]!.finished_at_ms, rows[2]!.started_at_ms],
    ]);
    // The fixed 150 ms backoff is the least a retry waited.
    expect(waits.every((b) => b.endMs! - b.startMs >= 150)).toBe(true);
    expect(w.bars.map((b) => b.startMs)).toEqual(w.bars.map((b) => b.startMs).toSorted((a, b) => a - b));
    expect(w.fromMs).toBeLessThanOrEqual(rows[0]!.started_at_ms);
    expect(w.toMs).toBeGreaterThanOrEqual(rows[3]!.finished_at_ms);
  });

  test("an approval wait is a bar from its request to its decision", async () => {
    await post(`${url}/runs`, { workflow: "gate", runId: "gate-w" });
    await waitForStatus(url, "gate-w", ["waiting-approval"]);
    const [, waiting] = await getJson<Waterfall>("/runs/gate-w/waterfall");
    const open = waiting.bars.find((b) => b.kind === "approval");
    expect([open?.nodeId, open?.endMs]).toEqual(["ship", null]);
    await post(`${url}/runs/gate-w/approve`, { node: "ship" });
    await waitForStatus(url, "gate-w", ["finished"]);
    const [, done] = await getJson<Waterfall>("/runs/gate-w/waterfall");
    const closed = done.bars.find((b) => b.kind === "approval");
    expect(closed?.startMs).toBe(open!.startMs);
    expect(closed!.endMs!).toBeGreaterThanOrEqual(closed!.startMs);
  });

  test("an unknown run is 404 RUN_NOT_FOUND", async () => {
    const res = await fetch(`${url}/runs/nope/waterfall`);
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, "RUN_NOT_FOUND"]);
  });
});

describe("GET /runs/:id/sandboxes", () => {
  test("a run without sandboxed tasks has no sessions", async () => {
    expect(await getJson("/runs/steps-1/sandboxes")).toEqual([200, { runId: "steps-1", sessions: [] }]);
  });

  test("an unknown run is 404 RUN_NOT_FOUND", async () => {
    const res = await fetch(`${url}/runs/nope/sandboxes`);
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, "RUN_NOT_FOUND"]);
  });
});

describe("GET /runs/activity", () => {
  test("counts the runs started, finished and failed in each minute as stored, and the day's spend", async () => {
    await post(`${url}/runs`, { workflow: "retries", runId: "activity-1" });
    await waitForStatus(url, "activity-1", ["finished"]);
    const [status, a] = await getJson<RunActivity>("/runs/activity?minutes=30&days=2");
    expect(status).toBe(200);
    expect(a.perMinute).toHaveLength(30);
    const first = a.perMinute[0]!.minuteMs;
    const sqlite = new Database(dbPath, { readonly: true });
    try {
      const runs = sqlite
        .query<{ status: string; started_at_ms: number | null; finished_at_ms: number | null }, [number]>(
          "SELECT status, started_at_ms, finished_at_ms FROM _smithers_runs WHERE created_at_ms >= ?",
        )
        .all(first);
      const inMinute = (ms: number | null, m: number) => ms !== null && ms >= m && ms < m + 60_000;
      for (const m of a.perMinute) {
        expect([m.started, m.finished, m.failed]).toEqual([
          runs.filter((r) => inMinute(r.started_at_ms, m.minuteMs)).length,
          runs.filter((r) => r.status === "finished" && inMinute(r.finished_at_ms, m.minuteMs)).length,
          runs.filter((r) => r.status === "failed" && inMinute(r.finished_at_ms, m.minuteMs)).length,
        ]);
      }
      expect(a.perMinute.reduce((n, m) => n + m.started, 0)).toBeGreaterThanOrEqual(1);
      const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
      const cost = sqlite
        .query<{ cost: number }, [number, number]>(
          "SELECT sum(a.cost_usd) AS cost FROM _smithers_attempts a JOIN _smithers_runs r ON r.run_id = a.run_id WHERE r.created_at_ms >= ? AND a.started_at_ms >= ?",
        )
        .get(today - 86_400_000, today)!.cost;
      expect(a.spendPerDay.at(-1)).toEqual({ dayMs: today, costUsd: cost });
      expect(cost).toBeGreaterThanOrEqual(0.0042);
    } finally {
      sqlite.close();
    }
  });

  test("a window that is not a whole number from 1 up is 400 INVALID_INPUT", async () => {
    const res = await fetch(`${url}/runs/activity?minutes=0`);
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([400, "INVALID_INPUT"]);
  });
});
