import { describe, expect, test } from "bun:test";
import { applyDelta, decodeDeltaJson, encodeDelta, encodeDeltaJson, type FrameDelta, type PropValue, type XmlElement } from "../../src/codec/index.ts";
import { errorOf } from "../helpers.ts";

const el = (tag: string, props: Record<string, PropValue> = {}, children: XmlElement[] = []): XmlElement => ({ tag, props, children });
const task = (id: string, state = "pending") => el("task", { id, state });
const tasks = (n: number, state = (_i: number) => "pending") => Array.from({ length: n }, (_, i) => task(`t${i}`, state(i)));
const workflow = (children: XmlElement[]) => el("workflow", { name: "w" }, children);

/** The delta, after checking it really turns prev into next (props' order included). */
function diff(prev: XmlElement, next: XmlElement): FrameDelta {
  const delta = encodeDelta(prev, next);
  expect(JSON.stringify(applyDelta(prev, delta))).toBe(JSON.stringify(next));
  return delta;
}

describe("encodeDelta", () => {
  test("equal frames give an empty delta", () => {
    const frame = workflow([el("sequence", {}, tasks(3))]);
    expect(encodeDelta(frame, structuredClone(frame))).toEqual([]);
  });

  test("a changed prop deep in the tree is a single set", () => {
    const prev = workflow([el("sequence", {}, [el("parallel", {}, tasks(5))])]);
    const next = workflow([
      el("sequence", {}, [
        el(
          "parallel",
          {},
          tasks(5, (i) => (i === 3 ? "running" : "pending")),
        ),
      ]),
    ]);
    expect(diff(prev, next)).toEqual([{ op: "set", path: [0, 0, 3], name: "state", value: "running" }]);
  });

  test("an added prop is a set and a dropped prop is a remove with its name", () => {
    expect(diff(el("task", { id: "a", old: 1 }), el("task", { id: "a", fresh: [1, { x: null }] }))).toEqual([
      { op: "remove", path: [], name: "old" },
      { op: "set", path: [], name: "fresh", value: [1, { x: null }] },
    ]);
  });

  test("reordered props are re-set so the attribute order matches", () => {
    const delta = diff(el("task", { a: 1, b: 2, c: 3 }), el("task", { a: 1, c: 3, b: 2 }));
    expect(delta).toEqual([
      { op: "remove", path: [], name: "b" },
      { op: "set", path: [], name: "b", value: 2 },
    ]);
  });

  test("a task inserted in the middle is one insert at its final index", () => {
    const before = tasks(10);
    const after = [...before.slice(0, 5), task("new"), ...before.slice(5)];
    expect(diff(workflow(before), workflow(after))).toEqual([{ op: "insert", path: [], index: 5, node: task("new") }]);
  });

  test("a removed task is one remove of its path", () => {
    const before = tasks(10);
    expect(diff(workflow(before), workflow(before.filter((_, i) => i !== 7)))).toEqual([{ op: "remove", path: [7] }]);
  });

  test("moving one task among 1,000 is a remove and an insert, not a cascade of sets", () => {
    const before = tasks(1000);
    const after = [...before];
    const [moved] = after.splice(100, 1);
    after.splice(900, 0, moved!);
    expect(diff(workflow(before), workflow(after))).toEqual([
      { op: "remove", path: [100] },
      { op: "insert", path: [], index: 900, node: task("t100") },
    ]);
  });

  test("a moved task that also changed is re-inserted in its new form", () => {
    const after = [task("c"), task("a", "running"), task("b")];
    expect(diff(workflow([task("a"), task("b"), task("c")]), workflow(after))).toEqual([
      { op: "remove", path: [2] },
      { op: "insert", path: [], index: 0, node: task("c") },
      { op: "set", path: [1], name: "state", value: "running" },
    ]);
  });

  test("removes come in descending index, then inserts in ascending final index, then edits inside kept children", () => {
    const prev = workflow([task("a"), task("b"), task("c"), task("d")]);
    const next = workflow([task("x"), task("a", "done"), task("c"), task("y")]);
    expect(diff(prev, next)).toEqual([
      { op: "remove", path: [3] },
      { op: "remove", path: [1] },
      { op: "insert", path: [], index: 0, node: task("x") },
      { op: "insert", path: [], index: 3, node: task("y") },
      { op: "set", path: [1], name: "state", value: "done" },
    ]);
  });

  test("a changed tag is a remove and an insert even when the id stays", () => {
    expect(diff(workflow([el("task", { id: "a" })]), workflow([el("loop", { id: "a" })]))).toEqual([
      { op: "remove", path: [0] },
      { op: "insert", path: [], index: 0, node: el("loop", { id: "a" }) },
    ]);
  });

  test("children without ids are matched in order per tag", () => {
    const prev = workflow([el("sequence", { n: 1 }), el("parallel"), el("sequence", { n: 2 })]);
    const next = workflow([el("sequence", { n: 1 }), el("sequence", { n: 3 })]);
    expect(diff(prev, next)).toEqual([
      { op: "remove", path: [1] },
      { op: "set", path: [1], name: "n", value: 3 },
    ]);
  });

  test("duplicate ids fall back to in-order matching instead of guessing", () => {
    const prev = workflow([task("dup", "a"), task("dup", "b")]);
    const next = workflow([task("dup", "b"), task("dup", "a")]);
    expect(diff(prev, next)).toEqual([
      { op: "set", path: [0], name: "state", value: "b" },
      { op: "set", path: [1], name: "state", value: "a" },
    ]);
  });

  test("ids that are not strings identify children too", () => {
    const prev = workflow([el("task", { id: 1 }), el("task", { id: "1" }), el("task", { id: null })]);
    const next = workflow([el("task", { id: null }), el("task", { id: 1 }), el("task", { id: "1" })]);
    expect(diff(prev, next)).toEqual([
      { op: "remove", path: [2] },
      { op: "insert", path: [], index: 0, node: el("task", { id: null }) },
    ]);
  });

  test("a different root tag cannot be a delta and throws INVALID_FRAME", () => {
    expect(errorOf(() => encodeDelta(el("workflow"), el("other"))).code).toBe("INVALID_FRAME");
  });

  test("a next frame with a name or value no frame can hold throws INVALID_FRAME", () => {
    expect(errorOf(() => encodeDelta(el("a"), el("a", { "bad name": 1 }))).code).toBe("INVALID_FRAME");
    expect(errorOf(() => encodeDelta(el("a"), el("a", { v: Number.NaN }))).code).toBe("INVALID_FRAME");
    expect(errorOf(() => encodeDelta(el("a"), el("a", {}, [el("1bad")]))).code).toBe("INVALID_FRAME");
  });

  test("a one-task change costs the same bytes in a 1,000-task and a 10,000-task frame", () => {
    const bytes = (n: number) => {
      const index = n / 2;
      const prev = workflow([el("parallel", {}, tasks(n))]);
      const next = workflow([
        el(
          "parallel",
          {},
          tasks(n, (i) => (i === index ? "finished" : "pending")),
        ),
      ]);
      return encodeDeltaJson(encodeDelta(prev, next)).length - String(index).length;
    };
    expect(bytes(1_000)).toBe(bytes(10_000));
    expect(bytes(1_000)).toBeLessThan(80);
  });
});

describe("applyDelta", () => {
  const base = workflow([el("sequence", {}, [task("a"), task("b")]), task("c")]);

  test("set changes a prop in place and appends a new one", () => {
    const next = applyDelta(base, [
      { op: "set", path: [0, 1], name: "state", value: "running" },
      { op: "set", path: [0, 1], name: "note", value: { ok: true } },
    ]);
    expect(next.children[0]!.children[1]).toEqual(el("task", { id: "b", state: "running", note: { ok: true } }));
    expect(Object.keys(next.children[0]!.children[1]!.props)).toEqual(["id", "state", "note"]);
  });

  test("remove with a name drops that prop; without one it drops the element", () => {
    const next = applyDelta(base, [
      { op: "remove", path: [1], name: "state" },
      { op: "remove", path: [0, 0] },
    ]);
    expect(next).toEqual(workflow([el("sequence", {}, [task("b")]), el("task", { id: "c" })]));
  });

  test("insert places a subtree at the given child index, including one past the end", () => {
    const next = applyDelta(base, [
      { op: "insert", path: [0], index: 2, node: task("z") },
      { op: "insert", path: [], index: 0, node: el("loop", {}, [task("l")]) },
    ]);
    expect(next.children.map((c) => c.tag)).toEqual(["loop", "sequence", "task"]);
    expect(next.children[1]!.children.map((c) => c.props.id)).toEqual(["a", "b", "z"]);
  });

  test("paths are read at the moment each op applies", () => {
    const next = applyDelta(base, [
      { op: "remove", path: [0] },
      { op: "set", path: [0], name: "state", value: "done" },
    ]);
    expect(next).toEqual(workflow([task("c", "done")]));
  });

  test("the previous frame is left unchanged and untouched subtrees are shared", () => {
    const before = JSON.stringify(base);
    const next = applyDelta(base, [{ op: "set", path: [0, 0], name: "state", value: "running" }]);
    expect(JSON.stringify(base)).toBe(before);
    expect(next.children[1]).toBe(base.children[1]!);
    expect(next.children[0]!.children[1]).toBe(base.children[0]!.children[1]!);
    expect(next.children[0]).not.toBe(base.children[0]!);
  });

  test("an empty delta returns the frame itself", () => {
    expect(applyDelta(base, [])).toBe(base);
  });

  test("a path that does not exist is FRAME_CORRUPT", () => {
    for (const path of [[5], [0, 2], [1, 0], [0, 0, 0]]) {
      expect(errorOf(() => applyDelta(base, [{ op: "set", path, name: "x", value: 1 }])).code).toBe("FRAME_CORRUPT");
      expect(errorOf(() => applyDelta(base, [{ op: "remove", path }])).code).toBe("FRAME_CORRUPT");
    }
  });

  test("an insert index past the end is FRAME_CORRUPT", () => {
    expect(errorOf(() => applyDelta(base, [{ op: "insert", path: [0], index: 3, node: task("x") }])).code).toBe("FRAME_CORRUPT");
  });

  test("removing the root or a prop that is not there is FRAME_CORRUPT", () => {
    expect(errorOf(() => applyDelta(base, [{ op: "remove", path: [] }])).code).toBe("FRAME_CORRUPT");
    expect(errorOf(() => applyDelta(base, [{ op: "remove", path: [1], name: "missing" }])).code).toBe("FRAME_CORRUPT");
  });

  test("malformed ops are FRAME_CORRUPT", () => {
    const bad: unknown[] = [
      { op: "move", path: [0] },
      { op: "set", path: [0], name: "x" },
      { op: "set", path: [-1], name: "x", value: 1 },
      { op: "set", path: [0.5], name: "x", value: 1 },
      { op: "set", path: [0], name: "1x", value: 1 },
      { op: "set", path: [0], name: "x", value: Number.NaN },
      { op: "insert", path: [], node: task("x") },
      { op: "insert", path: [], index: 0, node: { tag: "task", props: {} } },
      { op: "insert", path: [], index: 0, node: { tag: "a b", props: {}, children: [] } },
      { op: "remove", path: [0], extra: true },
      "set",
      null,
    ];
    for (const op of bad) expect(errorOf(() => applyDelta(base, [op] as FrameDelta)).code).toBe("FRAME_CORRUPT");
    expect(errorOf(() => applyDelta(base, {} as FrameDelta)).code).toBe("FRAME_CORRUPT");
  });

  test("the error names the op that did not fit", () => {
    const error = errorOf(() =>
      applyDelta(base, [
        { op: "set", path: [0], name: "x", value: 1 },
        { op: "remove", path: [9] },
      ]),
    );
    expect(error.message).toContain("op 1");
  });
});

describe("encodeDeltaJson / decodeDeltaJson", () => {
  test("a delta survives JSON exactly, awkward strings included", () => {
    const delta: FrameDelta = [
      { op: "set", path: [0, 2], name: "label", value: "a&b<c>\"d'\n\t😀\ud800=x" },
      { op: "remove", path: [1], name: "old" },
      { op: "remove", path: [3] },
      { op: "insert", path: [], index: 1, node: el("task", { id: "n", meta: { deep: [1.5, -2, null, false] } }, [el("x")]) },
    ];
    expect(decodeDeltaJson(encodeDeltaJson(delta))).toEqual(delta);
  });

  test("the JSON is compact: one set op is a short single line", () => {
    expect(encodeDeltaJson([{ op: "set", path: [0, 12], name: "state", value: "running" }])).toBe(
      '[{"op":"set","path":[0,12],"name":"state","value":"running"}]',
    );
  });

  test("text that is not JSON is FRAME_CORRUPT", () => {
    for (const text of ["", "[", "{op:set}", "[1,]"]) expect(errorOf(() => decodeDeltaJson(text)).code).toBe("FRAME_CORRUPT");
  });

  test("JSON that is not a delta is FRAME_CORRUPT", () => {
    for (const text of [
      "{}",
      "[1]",
      '[{"op":"set","path":[0],"name":"x"}]',
      '[{"op":"insert","path":[],"index":-1,"node":{"tag":"a","props":{},"children":[]}}]',
    ]) {
      expect(errorOf(() => decodeDeltaJson(text)).code).toBe("FRAME_CORRUPT");
    }
  });
});
