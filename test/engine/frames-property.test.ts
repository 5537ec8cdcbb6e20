/**
 * The frame chain's laws over random tree histories, through the database: every step's tree goes
 * through FrameChain.append and insertFrame, and readFrame gives back exactly that tree (in any
 * order, cold or cached), each row's hash is frameHash of its tree, every stored body decodes,
 * and keyframes fall exactly where isKeyframe says. A step that changes nothing stores no row.
 * Reproduce a failure with FRAMES_SEED=<seed> (the seed is in the failure message).
 */
import { describe, expect, test } from "bun:test";
import { XMLValidator } from "fast-xml-parser";
import { applyDelta, decodeDeltaText, decodeFrameXml, encodeDelta, frameHash, type XmlElement } from "../../src/codec/index.ts";
import { frames, openSmithersDb, type SmithersDb } from "../../src/db/index.ts";
import { clearFrameCache, deltaWeight, FrameChain, isKeyframe, readFrame, type KeyframePolicy } from "../../src/engine/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { cloneFrame, createRng, randomFrame, randomStep, type Rng } from "../codec/random-frames.ts";
import { onPostgres, tempDbPath } from "../helpers.ts";

/** Fewer on PostgreSQL, where each history costs a few dozen round trips; a hundred still reach every encoding. */
const SEQUENCES = onPostgres ? 100 : 1000;
const MIN_STEPS = 5;
const MAX_STEPS = 9;
const FIRST_SEED = 20_250_501;
const only = process.env.FRAMES_SEED ? Number(process.env.FRAMES_SEED) : undefined;
if (only !== undefined && !Number.isSafeInteger(only)) throw new Error(`FRAMES_SEED must be an integer, got ${JSON.stringify(process.env.FRAMES_SEED)}`);

type StoredRow = { frame_no: number; encoding: string; xml_json: string; xml_hash: string };

// Prop order counts (it shows in the XML and the hash), which toEqual ignores, so compare JSON
// text; expect() only on a mismatch, as thousands of passing matcher calls would dominate the run.
function same(actual: unknown, expected: string, what: string): void {
  const a = JSON.stringify(actual);
  if (a !== expected) expect(`${what}: ${a}`).toBe(`${what}: ${expected}`);
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

function shuffled(rng: Rng, n: number): number[] {
  const items = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

function policyFor(seed: number, rng: Rng): KeyframePolicy {
  // Alternate the mode by sequence; small intervals so keyframes fall inside short histories.
  return { interval: 2 + rng.int(4), mode: seed % 2 === 0 ? "adaptive" : "fixed" };
}

/** What one sequence did, for the failure message. */
type Trace = { policy: KeyframePolicy; steps: string[] };

async function runSequence(db: SmithersDb, seed: number, trace: Trace): Promise<number> {
  const rng = createRng(seed);
  const runId = `run-${seed}`;
  const policy = policyFor(seed, rng);
  trace.policy = policy;
  const stepCount = MIN_STEPS + rng.int(MAX_STEPS - MIN_STEPS + 1);
  const reopenAt = rng.chance(0.2) ? 1 + rng.int(stepCount - 1) : -1;

  // The tree each stored frame must rebuild to, as JSON text taken before the chain saw it.
  const expected: string[] = [];
  const expectedTrees: XmlElement[] = [];
  let chain = await FrameChain.open(db, runId, policy);
  let prev: XmlElement | undefined;
  let prevJson = "";

  for (let step = 0; step < stepCount; step++) {
    if (step === reopenAt) {
      // A chain reopened on the stored rows continues the numbering and the keyframe budget.
      chain = await FrameChain.open(db, runId, policy);
      trace.steps.push(`step ${step}: FrameChain.open again`);
    }
    // Some steps repeat the last tree (as a fresh copy) to exercise "nothing changed".
    const tree = prev === undefined ? randomFrame(rng) : rng.chance(0.15) ? cloneFrame(prev) : randomStep(rng, prev);
    const json = JSON.stringify(tree);
    const unchanged = prev !== undefined && json === prevJson;
    // Most steps hand over the tree; some the delta against the last one (the recorder's fast path).
    const asDelta = prev !== undefined && rng.chance(0.2);
    const input = asDelta ? encodeDelta(prev!, tree) : tree;
    trace.steps.push(`step ${step}: ${asDelta ? "as delta" : "as tree"}${unchanged ? " (unchanged)" : ""}: ${json}`);

    const row = chain.append(input, 1_000 + step);
    if (unchanged) {
      check(row === undefined, `step ${step} repeats the previous tree but append returned frame ${row?.frameNo} (${row?.encoding})`);
      continue;
    }
    check(row !== undefined, `step ${step} changed the tree but append returned no row`);
    const n = expected.length;
    check(row!.frameNo === n, `step ${step} got frame number ${row!.frameNo}, expected ${n}`);
    check(row!.runId === runId, `frame ${n} has run id ${row!.runId}`);
    check(row!.createdAtMs === 1_000 + step, `frame ${n} has created_at_ms ${row!.createdAtMs}`);
    await db.withTransaction("frames-property", (q) => frames.insertFrame(q, row!));
    expected.push(json);
    expectedTrees.push(tree);
    prev = tree;
    prevJson = json;
  }
  // The chain never changed a tree it was given.
  expectedTrees.forEach((tree, n) => same(tree, expected[n]!, `input tree of frame ${n} after appending`));

  // What was stored, read straight from the table.
  const rows = await db.read("frames-property", (q) =>
    q.all<StoredRow>("SELECT frame_no, encoding, xml_json, xml_hash FROM _smithers_frames WHERE run_id = ? ORDER BY frame_no", runId),
  );
  check(rows.length === expected.length, `stored ${rows.length} rows for ${expected.length} distinct trees`);
  const listed = await frames.listFrames(db, runId);
  check(listed.length === rows.length, `listFrames gives ${listed.length} rows, the table ${rows.length}`);

  let sinceKeyframe = 0;
  let keyframeBytes = 0;
  rows.forEach((row, n) => {
    const tree = expectedTrees[n]!;
    check(row.frame_no === n, `row ${n} has frame_no ${row.frame_no}`);
    check(listed[n]!.encoding === row.encoding && listed[n]!.hash === row.xml_hash, `listFrames disagrees with the table at frame ${n}`);
    check(row.xml_hash === frameHash(tree), `frame ${n}: xml_hash ${row.xml_hash} is not frameHash of its tree (${frameHash(tree)})`);

    // Keyframes exactly where isKeyframe says, given the delta weight stored since the last one.
    const want = n === 0 ? "full" : isKeyframe(n, sinceKeyframe, keyframeBytes, policy) ? "keyframe" : "delta";
    check(
      row.encoding === want,
      `frame ${n} is stored as ${row.encoding}, isKeyframe says ${want} (${sinceKeyframe} delta bytes since a ${keyframeBytes}-byte keyframe, ${JSON.stringify(policy)})`,
    );
    if (row.encoding === "keyframe") check(n % policy.interval === 0, `keyframe ${n} is not on a multiple of ${policy.interval}`);
    if (n > 0 && policy.mode === "fixed" && n % policy.interval === 0) check(row.encoding === "keyframe", `fixed policy: frame ${n} should be a keyframe`);

    if (row.encoding === "delta") {
      // Written in the compact text form, which decodeDelta tells from the older JSON by its first character.
      check(!row.xml_json.startsWith("["), `frame ${n}: a delta stored as JSON`);
      same(applyDelta(expectedTrees[n - 1]!, decodeDeltaText(row.xml_json)), expected[n]!, `frame ${n} delta applied to frame ${n - 1}`);
      sinceKeyframe += deltaWeight(row.xml_json.length);
    } else {
      const verdict = XMLValidator.validate(row.xml_json);
      if (verdict !== true) expect(`frame ${n}: ${verdict.err.msg} in ${row.xml_json}`).toBe(`frame ${n}: valid XML`);
      same(decodeFrameXml(row.xml_json), expected[n]!, `frame ${n} stored XML`);
      keyframeBytes = row.xml_json.length;
      sinceKeyframe = 0;
    }
  });

  // Read every frame in a random order, then again in another (from the cache, unless evicted);
  // half the sequences start cold, the rest may find the cache full of other runs' frames.
  if (rng.chance(0.5)) clearFrameCache();
  for (let pass = 0; pass < 2; pass++) {
    for (const n of shuffled(rng, rows.length)) {
      const got = await readFrame(db, runId, n);
      same(got, expected[n]!, `readFrame(${n}) pass ${pass + 1}`);
      check(frameHash(got) === rows[n]!.xml_hash, `readFrame(${n}) pass ${pass + 1}: hash ${frameHash(got)} is not the row's ${rows[n]!.xml_hash}`);
    }
  }
  // Past the last frame there is nothing.
  const missing = await readFrame(db, runId, rows.length).then(
    () => undefined,
    (error: unknown) => error,
  );
  check(SmithersError.is(missing, "FRAME_NOT_FOUND"), `readFrame(${rows.length}) past the last frame did not reject with FRAME_NOT_FOUND`);
  return rows.length;
}

describe("frame chains through the database", () => {
  test(`readFrame gives back every step's tree, with its hash and the policy's keyframes, over ${SEQUENCES} random histories`, async () => {
    const db = openSmithersDb(tempDbPath());
    clearFrameCache();
    const seeds = only === undefined ? Array.from({ length: SEQUENCES }, (_, i) => FIRST_SEED + i) : [only];
    let stored = 0;
    const encodings = new Map<string, number>();
    try {
      for (const seed of seeds) {
        const trace: Trace = { policy: { interval: 0, mode: "fixed" }, steps: [] };
        try {
          stored += await runSequence(db, seed, trace);
        } catch (error) {
          const steps = trace.steps.map((s) => `  ${s.length > 400 ? `${s.slice(0, 400)}…` : s}`).join("\n");
          throw new Error(`FRAMES_SEED=${seed} (${JSON.stringify(trace.policy)}): ${(error as Error).message}\nsteps:\n${steps}`, { cause: error });
        }
      }
      for (const { encoding, count } of await db.read("frames-property", (q) =>
        q.all<{ encoding: string; count: number }>("SELECT encoding, count(*) AS count FROM _smithers_frames GROUP BY encoding"),
      ))
        encodings.set(encoding, count);
    } finally {
      await db.close();
      clearFrameCache();
    }
    // The histories really did exercise every encoding.
    expect(encodings.get("full")).toBe(seeds.length);
    expect(encodings.get("delta") ?? 0).toBe(stored - seeds.length - (encodings.get("keyframe") ?? 0));
    if (only === undefined) {
      expect(encodings.get("keyframe") ?? 0).toBeGreaterThan(SEQUENCES / 2);
      expect(encodings.get("delta") ?? 0).toBeGreaterThan(SEQUENCES * 2);
    }
  }, 30_000);
});
