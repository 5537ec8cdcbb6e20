/**
 * What the dashboard reads beyond the run API: a live stream of the runs list, a run's frames
 * (the tree at any frame, with what changed from the one before, and the runs forked from it) and the inbox of decisions
 * waiting for a person across runs, and a run's waterfall (its attempts and waits in time). Read-only adapters over db and engine functions.
 */
import type { Hono } from "hono";
import type { FrameAt, FrameList, Inbox, RunActivity, SandboxList, Waterfall } from "../contract/index.ts";
import { frames, type SmithersDb } from "../db/index.ts";
import {
  forksByFrame,
  frameHistory,
  humanInbox,
  pendingApprovalsAcrossRuns,
  planChanges,
  runActivity,
  runWaterfall,
  sandboxSessions,
} from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { knownRun, runsQuery } from "./routes.ts";
import { createRunsFeeds } from "./runs-feed.ts";
import type { FollowOptions } from "./sse.ts";

/** `:n` of /runs/:id/frames/:n: a frame number, or `latest`; INVALID_INPUT otherwise. */
function frameParam(text: string, runId: string, last: number): number {
  if (text === "latest") {
    if (last < 0) throw new SmithersError("FRAME_NOT_FOUND", `Run "${runId}" has no frames yet`, { runId });
    return last;
  }
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) {
    throw new SmithersError("INVALID_INPUT", `A frame is a number (0, 1, 2 …) or "latest", got ${JSON.stringify(text)}`, { runId });
  }
  if (n > last) {
    const has = last < 0 ? "no frames" : `frames 0 to ${last}`;
    throw new SmithersError("FRAME_NOT_FOUND", `Run "${runId}" has ${has}; there is no frame ${n}`, { runId, frameNo: n });
  }
  return n;
}

/** `?minutes=` / `?days=`: a whole number from 1 to `max` (`fallback` when absent); INVALID_INPUT otherwise. */
function countParam(text: string | undefined, name: string, fallback: number, max: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > max)
    throw new SmithersError("INVALID_INPUT", `${name} is a whole number from 1 to ${max}, got ${JSON.stringify(text)}`);
  return n;
}

export function registerDashboardApi(app: Hono, o: { db: SmithersDb; follow: FollowOptions; onReadError: (what: string, error: unknown) => void }): void {
  const { db, follow } = o;

  // The runs list as server-sent `runs` events: the whole (filtered) list whenever it changed.
  const feeds = createRunsFeeds({ db, follow, onReadError: o.onReadError });
  app.get("/runs/stream", (c) => feeds.stream(c, runsQuery(c.req.query())));

  // The runs list's runs-over-time chart.
  app.get("/runs/activity", async (c) => {
    const minutes = countParam(c.req.query("minutes"), "minutes", 60, 1440);
    const days = countParam(c.req.query("days"), "days", 14, 366);
    return c.json((await runActivity(db, { minutes, days })) satisfies RunActivity);
  });

  // The sandbox sessions of a run's tasks (the run page's Sandboxes section).
  app.get("/runs/:id/sandboxes", async (c) => {
    const runId = c.req.param("id");
    await knownRun(db, runId);
    return c.json({ runId, sessions: await sandboxSessions(db, runId) } satisfies SandboxList);
  });

  app.get("/runs/:id/frames", async (c) => {
    const runId = c.req.param("id");
    await knownRun(db, runId);
    const [list, forks] = await Promise.all([frames.listFrames(db, runId), forksByFrame(db, runId)]);
    return c.json({
      runId,
      count: list.length,
      frames: list.map((f) => ({ frameNo: f.frameNo, createdAtMs: f.createdAtMs, encoding: f.encoding, bytes: f.bytes, forks: forks.get(f.frameNo) ?? [] })),
    } satisfies FrameList);
  });

  // The tree at frame N (rebuilt from its keyframe and deltas) and what changed from frame N-1.
  app.get("/runs/:id/frames/:n", async (c) => {
    const runId = c.req.param("id");
    await knownRun(db, runId);
    const last = await frames.lastFrameNo(db, runId);
    const frameNo = frameParam(c.req.param("n"), runId, last);
    // Frames N-1 and N in one pass: the chain to N-1 rebuilt once, then N's delta applied (with its time).
    const read = await Array.fromAsync(frameHistory(db, runId, Math.max(0, frameNo - 1), frameNo));
    const at = read[read.length - 1]!;
    const before = read.length > 1 ? read[0]!.tree : undefined;
    const forks = (await forksByFrame(db, runId)).get(frameNo) ?? [];
    return c.json({
      runId,
      frameNo,
      lastFrameNo: last,
      createdAtMs: at.createdAtMs,
      tree: at.tree,
      changes: planChanges(before, at.tree),
      forks,
    } satisfies FrameAt);
  });

  // The run page's waterfall: attempts, retry backoffs and waits on a time axis. A request no worker took yet is one queued bar.
  app.get("/runs/:id/waterfall", async (c) => {
    const runId = c.req.param("id");
    const found = await knownRun(db, runId);
    if (found.run) return c.json((await runWaterfall(db, found.run)) satisfies Waterfall);
    const createdAtMs = found.queued!.enqueuedAtMs;
    const bar = {
      kind: "queued",
      nodeId: null,
      iteration: 0,
      attempt: null,
      state: null,
      startMs: createdAtMs,
      endMs: null,
      error: null,
      usage: null,
    } as const;
    return c.json({ runId, fromMs: createdAtMs, toMs: Date.now(), bars: [bar] } satisfies Waterfall);
  });

  // What waits for a person: approvals (gate, select, rank) and human tasks with their JSON Schema.
  app.get("/inbox", async (c) => {
    const [pending, human] = await Promise.all([pendingApprovalsAcrossRuns(db), humanInbox(db)]);
    return c.json({ approvals: pending, human } satisfies Inbox);
  });
}
