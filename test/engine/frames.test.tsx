/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decodeDeltaText, decodeFrameXml, frameHash, type FrameDelta, type XmlElement } from "../../src/codec/index.ts";
import { openSmithersDb, frames } from "../../src/db/index.ts";
import {
  clearFrameCache,
  createSmithers,
  FrameChain,
  frameCacheStats,
  isKeyframe,
  readFrame,
  readFrameXml,
  runWorkflow,
  setFrameCacheLimits,
} from "../../src/engine/index.ts";
import { FRAME_DELTA_MIN_WEIGHT, FRAME_LRU_BYTES, FRAME_LRU_SIZE } from "../../src/engine/core/constants.ts";
import { execute, query, rejection, tempDbPath } from "../helpers.ts";

const out = { out: z.object({ n: z.number() }) };

/** Task states in document order, e.g. ["a=finished", "b=running"]. */
function states(tree: XmlElement): string[] {
  const found: string[] = [];
  const walk = (el: XmlElement) => {
    if (el.tag === "task") found.push(`${el.props.id}=${el.props.state}`);
    el.children.forEach(walk);
  };
  walk(tree);
  return found;
}

async function sequenceRun(n: number, keyframes?: { interval?: number; mode?: "adaptive" | "fixed" }) {
  const dbPath = tempDbPath();
  const { Workflow, Task, smithers, outputs } = createSmithers(out, { dbPath });
  const ids = Array.from({ length: n }, (_, i) => `t${i}`);
  const wf = smithers(() => (
    <Workflow name="seq">
      {ids.map((id, i) => (
        <Task key={id} id={id} output={outputs.out}>
          {{ n: i }}
        </Task>
      ))}
    </Workflow>
  ));
  const result = await runWorkflow(wf, { runId: "r", keyframes });
  expect(result.status).toBe("finished");
  return dbPath;
}

describe("frames of a run", () => {
  test("frame 0 is full XML, later frames are deltas, and every row carries the hash of its frame's XML", async () => {
    const dbPath = await sequenceRun(3);
    const rows = await query<{ frame_no: number; encoding: string; xml_json: string; xml_hash: string }>(
      dbPath,
      "SELECT frame_no, encoding, xml_json, xml_hash FROM _smithers_frames ORDER BY frame_no",
    );
    expect(rows.map((r) => r.frame_no)).toEqual(rows.map((_, i) => i));
    expect(rows.map((r) => r.encoding)).toEqual(["full", ...rows.slice(1).map(() => "delta")]);
    expect(frameHash(decodeFrameXml(rows[0]!.xml_json))).toBe(rows[0]!.xml_hash);
    const db = openSmithersDb(dbPath);
    for (const row of rows) expect(frameHash(await readFrame(db, "r", row.frame_no))).toBe(row.xml_hash);
    await db.close();
  });

  test("task states move through the frames: each task goes running then finished, in order", async () => {
    const dbPath = await sequenceRun(3);
    const db = openSmithersDb(dbPath);
    const last = (await frames.listFrames(db, "r")).length - 1;
    const seen: string[][] = [];
    for (let n = 0; n <= last; n++) seen.push(states(await readFrame(db, "r", n)));
    expect(seen).toEqual([
      ["t0=running", "t1=pending", "t2=pending"],
      ["t0=finished", "t1=running", "t2=pending"],
      ["t0=finished", "t1=finished", "t2=running"],
      ["t0=finished", "t1=finished", "t2=finished"],
    ]);
    await db.close();
  });

  test("a delta for one task's state change is a single set op, whatever the size of the tree", async () => {
    const dbPath = await sequenceRun(200);
    const deltas = await query<{ xml_json: string }>(dbPath, "SELECT xml_json FROM _smithers_frames WHERE encoding = 'delta' ORDER BY frame_no");
    const ops = decodeDeltaText(deltas[100]!.xml_json);
    expect(ops.map((o) => [o.op, o.path])).toEqual([
      ["set", [100]],
      ["set", [101]],
    ]); // frame 101: t100 finished, t101 running
    // Frames 20 and 180 differ only by the digits of the task positions.
    expect(deltas[180]!.xml_json.length - deltas[20]!.xml_json.length).toBeLessThanOrEqual(2);
  });

  test("with the fixed policy every 50th frame is a keyframe", async () => {
    const dbPath = await sequenceRun(120, { mode: "fixed" });
    const keyframes = await query<{ frame_no: number }>(dbPath, "SELECT frame_no FROM _smithers_frames WHERE encoding = 'keyframe' ORDER BY frame_no");
    expect(keyframes.map((r) => r.frame_no)).toEqual([50, 100]);
  });

  test("with the adaptive policy a large tree gets a keyframe only once its deltas outweigh the last one", async () => {
    const dbPath = await sequenceRun(120);
    const rows = await query<{ frame_no: number; encoding: string; bytes: number }>(
      dbPath,
      "SELECT frame_no, encoding, length(xml_json) AS bytes FROM _smithers_frames ORDER BY frame_no",
    );
    // At each multiple of 50: a keyframe exactly when the deltas since the last chain start weigh as much
    // as it, each delta weighing its bytes but at least FRAME_DELTA_MIN_WEIGHT.
    let start = rows[0]!;
    let since = 0;
    for (const row of rows.slice(1)) {
      if (row.frame_no % 50 === 0) expect(row.encoding).toBe(since >= start.bytes ? "keyframe" : "delta");
      else expect(row.encoding).toBe("delta");
      if (row.encoding === "keyframe") [start, since] = [row, 0];
      else since += Math.max(row.bytes, FRAME_DELTA_MIN_WEIGHT);
    }
    expect(rows.filter((r) => r.encoding === "keyframe").length).toBeLessThan(2); // the fixed policy would write 2
    const db = openSmithersDb(dbPath);
    expect(states(await readFrame(db, "r", rows.length - 1)).every((s) => s.endsWith("=finished"))).toBe(true);
    await db.close();
  });

  test("readFrame rebuilds every frame across keyframes exactly as the frames were committed", async () => {
    const dbPath = await sequenceRun(60, { interval: 7, mode: "fixed" });
    const db = openSmithersDb(dbPath);
    const list = await frames.listFrames(db, "r");
    expect(list.filter((f) => f.encoding === "keyframe").map((f) => f.frameNo)).toEqual([7, 14, 21, 28, 35, 42, 49, 56]);
    for (const f of list) {
      const tree = await readFrame(db, "r", f.frameNo);
      expect(frameHash(tree)).toBe(f.hash);
      expect(states(tree).filter((s) => s.endsWith("=finished")).length).toBe(f.frameNo);
    }
    await db.close();
  });
});

describe("frames of unusual plans", () => {
  test("a prop set to Infinity (no limit) is left out of the frame and the run finishes", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Parallel, smithers, outputs } = createSmithers(out, { dbPath });
    const wf = smithers(() => (
      <Workflow name="inf">
        <Parallel maxConcurrency={Infinity}>
          <Task id="a" output={outputs.out} timeoutMs={Infinity}>
            {{ n: 1 }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r" });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
    const db = openSmithersDb(dbPath);
    expect(await readFrameXml(db, "r", 0)).toBe(
      '<workflow name="inf"><parallel><task id="a" iteration="=0" state="running" output="out" mode="static"/></parallel></workflow>',
    );
    await db.close();
  });

  test("short deltas still bring a keyframe: each weighs at least FRAME_DELTA_MIN_WEIGHT against the keyframe's bytes", () => {
    const tasks = Array.from({ length: 60 }, (_, i) => ({ tag: "task", props: { id: `t${i}`, state: "pending" }, children: [] }));
    const chain = FrameChain.start("r");
    const first = chain.append({ tag: "workflow", props: { name: "w" }, children: tasks }, 0)!;
    // A keyframe's bytes lie between what the deltas up to frame 50 hold and what they weigh.
    expect(first.body.length).toBeGreaterThan(49 * 20);
    expect(first.body.length).toBeLessThanOrEqual(49 * FRAME_DELTA_MIN_WEIGHT);
    const rows = [first];
    for (let n = 1; n <= 100; n++) rows.push(chain.append([{ op: "set", path: [n % 60], name: "state", value: `s${n % 2}` }], n)!);
    expect(rows.filter((r) => r.encoding === "delta").every((r) => r.body.length < 20)).toBe(true);
    expect(rows.filter((r) => r.encoding === "keyframe").map((r) => r.frameNo)).toEqual([50, 100]);
  });

  test("FrameChain.append refuses a delta no frame can hold, and the chain goes on unharmed", () => {
    const chain = FrameChain.start("r");
    const first = chain.append({ tag: "workflow", props: { name: "w" }, children: [{ tag: "task", props: { id: "a" }, children: [] }] }, 1);
    expect(first?.frameNo).toBe(0);
    const bad: unknown[] = [
      [{ op: "set", path: [0], name: "bad name", value: "x" }],
      [{ op: "set", path: [0], name: "state", value: undefined }],
      [{ op: "insert", path: [0], index: 0, node: { tag: "1bad", props: {}, children: [] } }],
    ];
    for (const delta of bad) expect(() => chain.append(delta as FrameDelta, 2)).toThrow(expect.objectContaining({ code: "FRAME_CORRUPT" }));
    const next = chain.append([{ op: "set", path: [0], name: "state", value: "running" }], 3);
    expect(next).toMatchObject({ frameNo: 1, encoding: "delta", body: "0\tstate=running" });
    expect(chain.current?.toXml()).toBe('<workflow name="w"><task id="a" state="running"/></workflow>');
  });
});

describe("readFrame", () => {
  test("a frame that does not exist is FRAME_NOT_FOUND", async () => {
    const dbPath = await sequenceRun(2);
    const db = openSmithersDb(dbPath);
    expect((await rejection(readFrame(db, "r", 99))).code).toBe("FRAME_NOT_FOUND");
    expect((await rejection(readFrame(db, "nope", 0))).code).toBe("FRAME_NOT_FOUND");
    expect((await rejection(readFrame(db, "r", -1))).code).toBe("FRAME_NOT_FOUND");
    await db.close();
  });

  test("a missing link in the delta chain is FRAME_CORRUPT, not a wrong tree", async () => {
    const dbPath = await sequenceRun(4);
    await execute(dbPath, "DELETE FROM _smithers_frames WHERE frame_no = 2");
    clearFrameCache();
    const db = openSmithersDb(dbPath);
    expect((await rejection(readFrame(db, "r", 3))).code).toBe("FRAME_CORRUPT");
    expect(states(await readFrame(db, "r", 1))).toEqual(["t0=finished", "t1=running", "t2=pending", "t3=pending"]);
    await db.close();
  });

  test("a delta that was altered is caught by the hash and reported as FRAME_CORRUPT", async () => {
    const dbPath = await sequenceRun(4);
    await execute(dbPath, `UPDATE _smithers_frames SET xml_json = replace(xml_json, '=finished', '=failed') WHERE frame_no = 2`);
    clearFrameCache();
    const db = openSmithersDb(dbPath);
    expect((await rejection(readFrame(db, "r", 2))).code).toBe("FRAME_CORRUPT");
    expect((await rejection(readFrame(db, "r", 4))).code).toBe("FRAME_CORRUPT");
    await db.close();
  });

  test("a delta that does not parse, in either form, or has a path that does not exist is FRAME_CORRUPT", async () => {
    const dbPath = await sequenceRun(5);
    await execute(dbPath, `UPDATE _smithers_frames SET xml_json = '[{"op":"set","path":[9,9],"name":"state","value":"x"}]' WHERE frame_no = 1`);
    await execute(dbPath, `UPDATE _smithers_frames SET xml_json = '[{not json' WHERE frame_no = 2`);
    await execute(dbPath, `UPDATE _smithers_frames SET xml_json = ? WHERE frame_no = 3`, "9.9\tstate=x");
    await execute(dbPath, `UPDATE _smithers_frames SET xml_json = ? WHERE frame_no = 4`, "01\tstate");
    clearFrameCache();
    const db = openSmithersDb(dbPath);
    for (const n of [1, 2, 3, 4]) expect((await rejection(readFrame(db, "r", n))).code).toBe("FRAME_CORRUPT");
    await db.close();
  });

  test("a full frame whose XML was damaged is FRAME_CORRUPT", async () => {
    const dbPath = await sequenceRun(2);
    await execute(dbPath, `UPDATE _smithers_frames SET xml_json = substr(xml_json, 1, 40) WHERE frame_no = 0`);
    clearFrameCache();
    const db = openSmithersDb(dbPath);
    expect((await rejection(readFrame(db, "r", 0))).code).toBe("FRAME_CORRUPT");
    expect((await rejection(readFrame(db, "r", 2))).code).toBe("FRAME_CORRUPT");
    await db.close();
  });

  test("a repeated read is served from the cache without touching the database", async () => {
    const dbPath = await sequenceRun(3);
    clearFrameCache();
    const db = openSmithersDb(dbPath);
    const first = await readFrame(db, "r", 2);
    await execute(dbPath, "DELETE FROM _smithers_frames");
    expect(await readFrame(db, "r", 2)).toBe(first);
    expect((await rejection(readFrame(db, "r", 1))).code).toBe("FRAME_NOT_FOUND");
    await db.close();
  });

  test("readFrameXml gives XML that parses back to the same tree", async () => {
    const dbPath = await sequenceRun(2);
    const db = openSmithersDb(dbPath);
    const xml = await readFrameXml(db, "r", 1);
    expect(xml).toStartWith('<workflow name="seq">');
    expect(decodeFrameXml(xml)).toEqual(await readFrame(db, "r", 1));
    await db.close();
  });
});

describe("isKeyframe", () => {
  const fixed = { interval: 50, mode: "fixed" as const };
  const adaptive = { interval: 50, mode: "adaptive" as const };
  test("only multiples of the interval can be keyframes", () => {
    expect([49, 50, 51, 100].map((n) => isKeyframe(n, 1e9, 0, fixed))).toEqual([false, true, false, true]);
  });
  test("the adaptive policy waits until the deltas since the last keyframe weigh as much as it", () => {
    expect(isKeyframe(50, 999, 1000, adaptive)).toBe(false);
    expect(isKeyframe(50, 1000, 1000, adaptive)).toBe(true);
    expect(isKeyframe(50, 10, 1000, fixed)).toBe(true);
  });
});

describe("readFrame cache", () => {
  test("two databases with the same run id and frame number do not share cached frames", async () => {
    const { FrameChain } = await import("../../src/engine/index.ts");
    clearFrameCache();
    const a = openSmithersDb(tempDbPath());
    const b = openSmithersDb(tempDbPath());
    for (const [db, id] of [
      [a, "A"],
      [b, "B"],
    ] as const) {
      const chain = await FrameChain.open(db, "r");
      const row = chain.append({ tag: "workflow", props: { id }, children: [] }, 0)!;
      await db.withTransaction("t", (d) => frames.insertFrame(d, row));
    }
    expect((await readFrame(a, "r", 0)).props.id).toBe("A");
    expect((await readFrame(b, "r", 0)).props.id).toBe("B");
  });
});

describe("readFrame's cache", () => {
  test("large frames never hold more estimated bytes than the byte cap, and an evicted frame is rebuilt the same", async () => {
    const dbPath = await sequenceRun(300);
    const db = openSmithersDb(dbPath);
    clearFrameCache();
    const before = setFrameCacheLimits({ maxEntries: 512, maxBytes: 200_000 });
    try {
      const first = await readFrame(db, "r", 0);
      const oneFrame = frameCacheStats().bytes;
      expect(oneFrame).toBeGreaterThanOrEqual((await readFrameXml(db, "r", 0)).length); // the estimate is not below the XML's size
      for (let n = 1; n <= 40; n++) {
        await readFrame(db, "r", n * 5);
        const { bytes, entries } = frameCacheStats();
        expect(bytes).toBeLessThanOrEqual(200_000);
        expect(entries).toBeLessThanOrEqual(Math.floor(200_000 / (oneFrame * 0.9)));
      }
      const misses = frameCacheStats().misses;
      const again = await readFrame(db, "r", 0); // evicted long ago: rebuilt from the chain
      expect(frameCacheStats().misses).toBe(misses + 1);
      expect(again).not.toBe(first);
      expect(frameHash(again)).toBe(frameHash(first));
      const hits = frameCacheStats().hits;
      await readFrame(db, "r", 0);
      expect(frameCacheStats().hits).toBe(hits + 1);
    } finally {
      setFrameCacheLimits(before);
      await db.close();
    }
  });

  test("a frame larger than the byte cap is returned but not kept", async () => {
    const dbPath = await sequenceRun(50);
    const db = openSmithersDb(dbPath);
    clearFrameCache();
    const before = setFrameCacheLimits({ maxEntries: 512, maxBytes: 1_000 });
    try {
      const tree = await readFrame(db, "r", 3);
      expect(states(tree)).toHaveLength(50);
      expect(frameHash(tree)).toBe((await query<{ xml_hash: string }>(dbPath, "SELECT xml_hash FROM _smithers_frames WHERE frame_no = 3"))[0]!.xml_hash);
      expect(frameCacheStats()).toMatchObject({ entries: 0, bytes: 0 });
    } finally {
      setFrameCacheLimits(before);
      await db.close();
    }
  });

  test("is capped at FRAME_LRU_SIZE entries and FRAME_LRU_BYTES estimated bytes by default", () => {
    expect(frameCacheStats()).toMatchObject({ maxEntries: FRAME_LRU_SIZE, maxBytes: FRAME_LRU_BYTES });
  });
});
