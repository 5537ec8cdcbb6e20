/**
 * Frames written before deltas were stored as compact text: test/fixtures/frames/json-deltas.json
 * holds the frame rows of one run (a loop that mounts and unmounts tasks, so sets, inserts and
 * removes) exactly as commit cafe78d's encoder stored them, JSON deltas, with each frame's XML as
 * that commit read it back. A database holding them must read the same frames today, and a run
 * continuing on it appends text deltas to the same chain.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeFrameXml, encodeFrameXml } from "../../src/codec/index.ts";
import { frames, openSmithersDb, type SmithersDb } from "../../src/db/index.ts";
import { clearFrameCache, FrameChain, frameHistory, readFrameXml, runAtFrame } from "../../src/engine/index.ts";
import { tempDbPath } from "../helpers.ts";

type FixtureFrame = frames.NewFrame & { xml: string };
const fixture = JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/frames/json-deltas.json"), "utf8")) as { runId: string; frames: FixtureFrame[] };
const RUN = fixture.runId;
const last = fixture.frames.length - 1;

async function legacyDb(): Promise<SmithersDb> {
  const db = openSmithersDb(tempDbPath());
  await db.withTransaction("legacyFrames", (q) =>
    frames.insertFrames(
      q,
      fixture.frames.map(({ xml: _xml, ...row }) => ({ ...row, runId: RUN })),
    ),
  );
  clearFrameCache();
  return db;
}

test("the fixture is what it claims: JSON deltas of every op kind, and a keyframe inside the chain", () => {
  const deltas = fixture.frames.filter((f) => f.encoding === "delta");
  expect(deltas.length).toBeGreaterThan(10);
  expect(deltas.every((f) => f.body.startsWith("[{"))).toBe(true);
  const ops = new Set(deltas.flatMap((f) => (JSON.parse(f.body) as { op: string }[]).map((o) => o.op)));
  expect([...ops].sort()).toEqual(["insert", "remove", "set"]);
  expect(fixture.frames.some((f) => f.encoding === "keyframe")).toBe(true);
});

test("every frame stored with JSON deltas reads back as the XML the old code read", async () => {
  const db = await legacyDb();
  for (const f of fixture.frames) expect(await readFrameXml(db, RUN, f.frameNo)).toBe(f.xml);
  const seen: string[] = [];
  for await (const step of frameHistory(db, RUN)) seen.push(encodeFrameXml(step.tree));
  expect(seen).toEqual(fixture.frames.map((f) => f.xml));
  const at = await runAtFrame(db, RUN, last);
  expect(encodeFrameXml(at.tree)).toBe(fixture.frames[last]!.xml);
  await db.close();
});

test("a chain of JSON deltas goes on with text deltas, and the mixed chain reads back", async () => {
  const db = await legacyDb();
  const chain = await FrameChain.open(db, RUN);
  expect(chain.current?.toXml()).toBe(fixture.frames[last]!.xml);
  const row = chain.append([{ op: "set", path: [0, 0], name: "state", value: "failed" }], Date.now());
  expect(row).toMatchObject({ frameNo: last + 1, encoding: "delta", body: "0.0\tstate=failed" });
  await db.withTransaction("appendFrame", (q) => frames.insertFrame(q, row!));
  clearFrameCache();
  const expected = decodeFrameXml(fixture.frames[last]!.xml);
  const task = expected.children[0]!.children[0]!;
  expected.children[0]!.children[0] = { ...task, props: { ...task.props, state: "failed" } };
  expect(await readFrameXml(db, RUN, last + 1)).toBe(encodeFrameXml(expected));
  expect(encodeFrameXml((await runAtFrame(db, RUN, last + 1)).tree)).toBe(encodeFrameXml(expected));
  await db.close();
});
