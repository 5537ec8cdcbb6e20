/**
 * The compact text form of deltas (how frames store them): its exact text, the lines it refuses,
 * and a fuzz property: a damaged text decodes to a valid delta or is FRAME_CORRUPT, nothing else.
 * Reproduce a fuzz failure with CODEC_SEED=<seed> (the seed is in the failure message).
 */
import { describe, expect, test } from "bun:test";
import {
  decodeDelta,
  decodeDeltaText,
  encodeDelta,
  encodeDeltaJson,
  encodeDeltaText,
  opSchemas,
  type FrameDelta,
  type PropValue,
  type XmlElement,
} from "../../src/codec/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { errorOf } from "../helpers.ts";
import { createRng, randomFrame, randomStep } from "./random-frames.ts";

const el = (tag: string, props: Record<string, PropValue> = {}, children: XmlElement[] = []): XmlElement => ({ tag, props, children });

describe("encodeDeltaText", () => {
  test("a loop's next iteration is two short lines: prop edits grouped by path, values as in the XML", () => {
    const delta: FrameDelta = [
      { op: "set", path: [0], name: "iteration", value: 7 },
      { op: "set", path: [0, 0], name: "iteration", value: 7 },
      { op: "set", path: [0, 0], name: "state", value: "running" },
    ];
    expect(encodeDeltaText(delta)).toBe("0\titeration==7\n0.0\titeration==7\tstate=running");
    expect(decodeDeltaText("0\titeration==7\n0.0\titeration==7\tstate=running")).toEqual(delta);
  });

  test("each op kind has its line, the root's path is empty, and order is kept", () => {
    const delta: FrameDelta = [
      { op: "remove", path: [1, 0] },
      { op: "set", path: [], name: "name", value: "w" },
      { op: "remove", path: [], name: "old" },
      { op: "insert", path: [1], index: 0, node: el("task", { id: "a", n: 2 }, [el("x"), el("y", { z: null })]) },
      { op: "set", path: [1, 0], name: "state", value: "=literal" },
    ];
    const text = encodeDeltaText(delta);
    expect(text).toBe('-1.0\n\tname=w\t-old\n+1.0\t["task",{"id":"a","n":2},[["x"],["y",{"z":null}]]]\n1.0\tstate=="=literal"');
    expect(decodeDeltaText(text)).toEqual(delta);
  });

  test("awkward strings survive, and never put a tab or newline into the text", () => {
    const value = "a&b<c>\"d'\n\t\r😀\ud800=x\u2028\u0000";
    const delta: FrameDelta = [
      { op: "set", path: [0, 2], name: "label", value },
      { op: "insert", path: [], index: 1, node: el("task", { id: "n", meta: { [value]: [1.5, -2, null, false, value] } }) },
    ];
    const text = encodeDeltaText(delta);
    expect(text.split("\n")).toHaveLength(2);
    expect(text.split("\t")).toHaveLength(3);
    expect(decodeDeltaText(text)).toEqual(delta);
  });

  test("is a fraction of the JSON form for the steps a run writes", () => {
    const step: FrameDelta = [
      { op: "set", path: [0, 41], name: "state", value: "finished" },
      { op: "set", path: [0, 42], name: "state", value: "running" },
    ];
    expect(encodeDeltaText(step)).toBe("0.41\tstate=finished\n0.42\tstate=running");
    expect(encodeDeltaText(step).length / encodeDeltaJson(step).length).toBeLessThan(0.4);
  });

  test("a name or value no frame can hold is INVALID_FRAME", () => {
    expect(errorOf(() => encodeDeltaText([{ op: "set", path: [0], name: "a b", value: 1 }])).code).toBe("INVALID_FRAME");
    expect(errorOf(() => encodeDeltaText([{ op: "set", path: [0], name: "a", value: Number.NaN }])).code).toBe("INVALID_FRAME");
    expect(errorOf(() => encodeDeltaText([{ op: "insert", path: [], index: 0, node: el("1x") }])).code).toBe("INVALID_FRAME");
  });
});

describe("decodeDeltaText / decodeDelta", () => {
  test("the empty text is the empty delta", () => {
    expect(decodeDeltaText("")).toEqual([]);
    expect(decodeDelta("")).toEqual([]);
  });

  test("decodeDelta reads both the older JSON form and the text form", () => {
    const delta: FrameDelta = [{ op: "set", path: [0, 12], name: "state", value: "running" }];
    expect(decodeDelta('[{"op":"set","path":[0,12],"name":"state","value":"running"}]')).toEqual(delta);
    expect(decodeDelta("0.12\tstate=running")).toEqual(delta);
  });

  test("malformed lines are FRAME_CORRUPT and name the line", () => {
    const cases = [
      "0.0", // a path with no edits
      "0.0\tstate", // neither name=value nor -name
      "0.0\tbad name=x",
      "0.0\t-1bad",
      "0.0\t__proto__=x",
      "00\tstate=x", // leading zero
      "0..1\tstate=x",
      "0.a\tstate=x",
      "0.1\tstate=={",
      '1\tx=={"__proto__":1}',
      "9999999999999999\tstate=x",
      '+\t["task"]',
      "+0.1",
      '+0.1\t{"tag":"task"}',
      '+0.1\t["task",[]]',
      '+0.1\t["task",{},{}]',
      '+0.1\t["1task"]',
      '+0.1\t["task",{"a b":1}]',
      '+0.1\t["task"',
      "-0.x",
      "0\tstate=x\n",
      "0\tstate=x\n\n1\tstate=y",
    ];
    for (const text of cases) {
      const error = errorOf(() => decodeDeltaText(text));
      if (error.code !== "FRAME_CORRUPT") expect(`${JSON.stringify(text)}: ${error.code}`).toBe(`${JSON.stringify(text)}: FRAME_CORRUPT`);
    }
    expect(errorOf(() => decodeDeltaText("0\tstate=x\n1\tbad name=y")).message).toContain("line 2");
  });

  test("an inserted element nested past the depth limit is FRAME_CORRUPT, not a stack overflow", () => {
    let node = '["x"]';
    for (let i = 0; i < 300; i++) node = `["x",{},[${node}]]`;
    expect(errorOf(() => decodeDeltaText(`+0\t${node}`)).code).toBe("FRAME_CORRUPT");
  });
});

// Damage: a character replaced, inserted or removed, or the text cut short, a few times over.
const NOISE = ["\t", "\n", "-", "+", "=", ".", "0", "9", "[", "]", "{", "}", '"', ",", "a", " ", "\\"];
function damage(text: string, rng: ReturnType<typeof createRng>): string {
  let out = text;
  for (let n = 1 + rng.int(3); n > 0; n--) {
    const at = rng.int(out.length + 1);
    const kind = rng.int(4);
    if (kind === 0) out = out.slice(0, at) + rng.pick(NOISE) + out.slice(at + 1);
    else if (kind === 1) out = out.slice(0, at) + rng.pick(NOISE) + out.slice(at);
    else if (kind === 2) out = out.slice(0, at) + out.slice(at + 1);
    else out = out.slice(0, at);
  }
  return out;
}

const FUZZ = 600;
const FIRST_SEED = 31_415_926;
const only = process.env.CODEC_SEED === undefined ? undefined : Number(process.env.CODEC_SEED);

describe("a damaged delta text", () => {
  test(`decodes to a valid delta or is FRAME_CORRUPT, over ${FUZZ} random deltas`, () => {
    const seeds = only === undefined ? Array.from({ length: FUZZ }, (_, i) => FIRST_SEED + i) : [only];
    let refused = 0;
    for (const seed of seeds) {
      const rng = createRng(seed);
      const prev = randomFrame(rng);
      const text = encodeDeltaText(encodeDelta(prev, randomStep(rng, prev)));
      for (let k = 0; k < 5; k++) {
        const damaged = damage(text, rng);
        if (damaged.startsWith("[")) continue; // the JSON form's own tests cover it
        let decoded: FrameDelta;
        try {
          decoded = decodeDeltaText(damaged);
        } catch (error) {
          if (!SmithersError.is(error, "FRAME_CORRUPT")) throw new Error(`CODEC_SEED=${seed}: ${JSON.stringify(damaged)} threw ${String(error)}`);
          refused++;
          continue;
        }
        const valid = opSchemas().FrameDeltaSchema.safeParse(decoded);
        if (!valid.success) throw new Error(`CODEC_SEED=${seed}: ${JSON.stringify(damaged)} decoded to an invalid delta: ${valid.error.message}`);
      }
    }
    expect(refused).toBeGreaterThan(0);
  });
});
