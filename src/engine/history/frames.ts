/**
 * Frames: the plan, with every task's state, committed after each engine step that changed it.
 * The recorder keeps a LiveFrame (the last committed tree with an incremental hash) so a step
 * that only moved task states costs one `set` op per task, whatever the size of the tree; a new
 * render is diffed against it by element id. readFrame rebuilds any frame from its chain.
 */
import {
  applyDelta,
  decodeDelta,
  decodeFrameXml,
  encodeDelta,
  encodeDeltaText,
  encodeFrameXml,
  LiveFrame,
  planToXml,
  type FrameDelta,
  type XmlElement,
} from "../../codec/index.ts";
import { frames, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { Plan, PlanTask } from "../../jsx/index.ts";
import { BoundedCache, estimateBytes, type CacheLimits, type CacheStats } from "../core/index.ts";
import { FRAME_DELTA_MIN_WEIGHT, FRAME_KEYFRAME_INTERVAL, FRAME_LRU_BYTES, FRAME_LRU_SIZE } from "../core/index.ts";

export type KeyframePolicy = {
  /** Keyframes only ever fall on multiples of this (default 50). */
  interval: number;
  /**
   * `adaptive` (default): at a multiple of `interval`, write a keyframe only once the deltas
   * since the last one weigh at least that keyframe's size (see deltaWeight), so frame bytes stay
   * linear in the number of frames however large the tree, and a cold read replays no more
   * than about a keyframe's decoding worth of deltas. `fixed`: every multiple of `interval`.
   */
  mode: "adaptive" | "fixed";
};

export const DEFAULT_KEYFRAME_POLICY: KeyframePolicy = { interval: FRAME_KEYFRAME_INTERVAL, mode: "adaptive" };

/** A stored delta's weight against keyframe bytes: its own bytes, at least FRAME_DELTA_MIN_WEIGHT. */
export function deltaWeight(bodyLength: number): number {
  return Math.max(bodyLength, FRAME_DELTA_MIN_WEIGHT);
}

/** Whether frame `frameNo` (> 0) is stored as a keyframe; `deltaBytesSinceKeyframe` sums deltaWeight. */
export function isKeyframe(frameNo: number, deltaBytesSinceKeyframe: number, lastKeyframeBytes: number, policy: KeyframePolicy): boolean {
  if (frameNo % policy.interval !== 0) return false;
  return policy.mode === "fixed" || deltaBytesSinceKeyframe >= lastKeyframeBytes;
}

/**
 * The numbering and delta chain of one run's frames: turns each new tree (or delta against the
 * last one) into the row to store, choosing full / keyframe / delta by the policy.
 */
export class FrameChain {
  private constructor(
    readonly runId: string,
    private readonly policy: KeyframePolicy,
    private nextNo: number,
    private live: LiveFrame | undefined,
    private keyframeBytes: number,
    private sinceKeyframe: number,
  ) {}

  /** The chain of a run that has no frames yet. */
  static start(runId: string, policy = DEFAULT_KEYFRAME_POLICY): FrameChain {
    return new FrameChain(runId, policy, 0, undefined, 0, 0);
  }

  /** A chain that continues after the run's last stored frame (a fresh keyframe if that chain is damaged). */
  static async open(db: SmithersDb, runId: string, policy = DEFAULT_KEYFRAME_POLICY): Promise<FrameChain> {
    const last = await frames.lastFrameNo(db, runId);
    if (last < 0) return FrameChain.start(runId, policy);
    const rows = await frames.frameChain(db, runId, last);
    try {
      const live = rebuild(rows, runId, last);
      const sinceKeyframe = rows.slice(1).reduce((n, r) => n + deltaWeight(r.xmlJson.length), 0);
      return new FrameChain(runId, policy, last + 1, live, rows[0]!.xmlJson.length, sinceKeyframe);
    } catch (error) {
      // A damaged chain must not stop the run: the next frame starts a new chain as a keyframe.
      if (SmithersError.is(error, "FRAME_CORRUPT") || SmithersError.is(error, "FRAME_NOT_FOUND"))
        return new FrameChain(runId, policy, last + 1, undefined, 0, 0);
      throw error;
    }
  }

  /** The last tree appended (or rebuilt on open). */
  get current(): LiveFrame | undefined {
    return this.live;
  }

  /**
   * The row for the next frame: `next` is the new tree, or a delta against the current one.
   * Undefined when nothing changed (an empty delta), except for the first frame of a chain.
   * `owned`: `next` was built for this call and nothing else holds it, so a chain's first tree
   * is taken over as it is (frozen in place) rather than copied.
   */
  append(next: XmlElement | FrameDelta, nowMs: number, owned = false): frames.NewFrame | undefined {
    const fresh = !this.live;
    let delta: FrameDelta = [];
    if (!this.live) {
      this.live = Array.isArray(next) ? new LiveFrame(applyDelta(EMPTY, next)) : new LiveFrame(next, { adopt: owned });
    } else {
      // Diffed against the working copy itself: no snapshot of the whole tree per step.
      delta = Array.isArray(next) ? next : encodeDelta(this.live.view(), next);
      if (delta.length === 0) return undefined;
      this.live.apply(delta, { shapeChecked: true });
    }
    const frameNo = this.nextNo++;
    const base = { runId: this.runId, frameNo, createdAtMs: nowMs, hash: this.live.hash };
    if (fresh || isKeyframe(frameNo, this.sinceKeyframe, this.keyframeBytes, this.policy)) {
      const body = this.live.toXml(); // cannot fail: the tree and every op were checked on the way in
      this.keyframeBytes = body.length;
      this.sinceKeyframe = 0;
      return { ...base, encoding: frameNo === 0 ? "full" : "keyframe", body };
    }
    const body = encodeDeltaText(delta, true); // every op passed live.apply's checks above
    this.sinceKeyframe += deltaWeight(body.length);
    return { ...base, encoding: "delta", body };
  }
}

const EMPTY: XmlElement = { tag: "workflow", props: {}, children: [] };

/**
 * Frames of a running workflow: the plan rendered as a tree with each task's state. A step
 * that only moved task states becomes one `set` op per changed task, never a diff of the tree.
 */
export class FrameRecorder {
  private plan: Plan | undefined;
  private taskPaths = new Map<string, number[]>();
  private readonly dirty = new Set<string>();

  constructor(
    private readonly chain: FrameChain,
    private readonly tableOf: (task: PlanTask) => string,
  ) {}

  /** A task's state changed since the last frame. */
  markDirty(key: string): void {
    this.dirty.add(key);
  }

  /** The frame to commit for this plan and these states, or undefined when nothing changed. */
  next(plan: Plan, stateOf: (key: string) => string | undefined, nowMs: number): frames.NewFrame | undefined {
    const live = this.chain.current;
    let next: XmlElement | FrameDelta;
    let taskPaths = this.taskPaths;
    if (!live || plan !== this.plan) {
      const built = planToXml(plan, { tableOf: this.tableOf, stateOf: (task) => stateOf(task.key) });
      taskPaths = built.taskPaths;
      next = built.root;
    } else {
      const delta: FrameDelta = [];
      for (const key of this.dirty) {
        const path = taskPaths.get(key);
        if (!path) continue;
        const value = stateOf(key) ?? "pending";
        if (live.propAt(path, "state") !== value) delta.push({ op: "set", path, name: "state", value });
      }
      next = delta;
    }
    const row = this.chain.append(next, nowMs, true);
    // Only once the chain took the frame: a failed append leaves the recorder where it was.
    this.taskPaths = taskPaths;
    this.plan = plan;
    this.dirty.clear();
    return row;
  }
}

/** Replays a chain (chain start first) into a LiveFrame, checking every link and every hash. */
function rebuild(rows: readonly frames.FrameChainRow[], runId: string, frameNo: number): LiveFrame {
  const first = rows[0];
  if (!first) throw new SmithersError("FRAME_NOT_FOUND", `Run "${runId}" has no frame ${frameNo}`, { runId, frameNo });
  if (first.encoding === "delta") throw corrupt(runId, first.frameNo, "the chain does not start with a full frame or keyframe");
  if (rows[rows.length - 1]!.frameNo !== frameNo) throw new SmithersError("FRAME_NOT_FOUND", `Run "${runId}" has no frame ${frameNo}`, { runId, frameNo });
  let live: LiveFrame;
  try {
    live = new LiveFrame(decodeFrameXml(first.xmlJson, { hashChecked: true }), { adopt: true });
  } catch (cause) {
    throw SmithersError.is(cause, "INVALID_FRAME") ? corrupt(runId, first.frameNo, `its XML does not parse (${cause.message})`) : cause;
  }
  if (live.hash !== first.xmlHash) throw corrupt(runId, first.frameNo, "its XML does not match its hash");
  for (let i = 1; i < rows.length; i++) {
    const row = rows[i]!;
    if (row.frameNo !== rows[i - 1]!.frameNo + 1) throw corrupt(runId, rows[i - 1]!.frameNo + 1, "the frame is missing from the chain");
    // frameChain starts at the last full frame or keyframe at or before frameNo: only deltas follow.
    if (row.encoding !== "delta") throw corrupt(runId, row.frameNo, `a ${row.encoding} frame sits inside the chain`);
    live.apply(decodeDelta(row.xmlJson), { shapeChecked: true });
    if (live.hash !== row.xmlHash) throw corrupt(runId, row.frameNo, "rebuilding it does not give its hash");
  }
  return live;
}

const corrupt = (runId: string, frameNo: number, why: string) =>
  new SmithersError("FRAME_CORRUPT", `Frame ${frameNo} of run "${runId}" cannot be rebuilt: ${why}`, { runId, frameNo });

/** One id per open database: two `:memory:` databases share a path but not their frames. */
const connectionIds = new WeakMap<SmithersDb, number>();
let lastConnectionId = 0;
function connectionId(db: SmithersDb): number {
  let id = connectionIds.get(db);
  if (id === undefined) connectionIds.set(db, (id = ++lastConnectionId));
  return id;
}

/**
 * Reconstructed frames, shared by every reader in the process, capped in entries and in bytes.
 * A tree's bytes are estimated by estimateBytes: one walk over its elements and props when it
 * enters the cache, which costs far less than the rebuild that produced it. Subtrees that
 * successive frames share are counted in each, so the cap errs on the side of holding less.
 */
const recent = new BoundedCache<XmlElement>({ maxEntries: FRAME_LRU_SIZE, maxBytes: FRAME_LRU_BYTES }, estimateBytes);

/**
 * Frame `frameNo` of the run as an element tree: the nearest keyframe at or before it with the
 * deltas after it applied. A missing frame is FRAME_NOT_FOUND; a broken chain or a hash that
 * does not match is FRAME_CORRUPT, never a wrong tree.
 * @example
 * const tree = await readFrame(db, runId, 12);
 */
export async function readFrame(db: SmithersDb, runId: string, frameNo: number): Promise<XmlElement> {
  if (!Number.isInteger(frameNo) || frameNo < 0)
    throw new SmithersError("FRAME_NOT_FOUND", `Frame numbers are integers from 0, got ${frameNo}`, { runId, frameNo });
  const key = `${connectionId(db)}\u0000${runId}\u0000${frameNo}`;
  const hit = recent.get(key);
  if (hit) return hit;
  const tree = rebuild(await frames.frameChain(db, runId, frameNo), runId, frameNo).toTree();
  recent.set(key, tree);
  return tree;
}

/**
 * Frames `fromNo`..`toNo` of the run as trees, in order, each with its time: the chain up to
 * `fromNo` is rebuilt once, then every later frame is one step (a delta applied, or a keyframe
 * read), checked against its stored hash like readFrame.
 */
export async function* frameHistory(
  db: SmithersDb,
  runId: string,
  fromNo = 0,
  toNo = Number.MAX_SAFE_INTEGER,
): AsyncGenerator<{ frameNo: number; createdAtMs: number; tree: XmlElement }> {
  const chain = await frames.frameChain(db, runId, fromNo);
  if (chain.length === 0) return;
  let live = rebuild(chain, runId, fromNo);
  yield { frameNo: fromNo, createdAtMs: chain[chain.length - 1]!.createdAtMs, tree: live.toTree() };
  let at = fromNo;
  for (const row of await frames.frameRows(db, runId, fromNo + 1, toNo)) {
    if (row.frameNo !== at + 1) throw corrupt(runId, at + 1, "the frame is missing from the chain");
    at = row.frameNo;
    if (row.encoding !== "delta") live = rebuild([row], runId, row.frameNo);
    else {
      live.apply(decodeDelta(row.xmlJson), { shapeChecked: true });
      if (live.hash !== row.xmlHash) throw corrupt(runId, row.frameNo, "rebuilding it does not give its hash");
    }
    yield { frameNo: row.frameNo, createdAtMs: row.createdAtMs, tree: live.toTree() };
  }
}

/** The frame's XML text. */
export async function readFrameXml(db: SmithersDb, runId: string, frameNo: number): Promise<string> {
  return encodeFrameXml(await readFrame(db, runId, frameNo));
}

/** Empties the reconstructed-frame cache (tests, or after pruning frames). */
export function clearFrameCache(): void {
  recent.clear();
}

/** The reconstructed-frame cache's caps, what it holds now (entries, estimated bytes) and its hits and misses so far. */
export function frameCacheStats(): CacheStats {
  return recent.stats();
}

/** Sets the reconstructed-frame cache's caps (evicting down to them now); returns the previous caps. */
export function setFrameCacheLimits(limits: CacheLimits): CacheLimits {
  return recent.setLimits(limits);
}
