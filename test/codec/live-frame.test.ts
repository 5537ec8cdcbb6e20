import { describe, expect, test } from "bun:test";
import { encodeDelta, encodeFrameXml, frameHash, LiveFrame, type FrameDelta, type PropValue, type XmlElement } from "../../src/codec/index.ts";
import { errorOf } from "../helpers.ts";

const el = (tag: string, props: Record<string, PropValue> = {}, children: XmlElement[] = []): XmlElement => ({ tag, props, children });
const tasks = (n: number) => Array.from({ length: n }, (_, i) => el("task", { id: `t${i}`, state: "pending" }));
const frame = (n = 4) => el("workflow", { name: "w" }, [el("parallel", {}, tasks(n)), el("task", { id: "last" })]);

describe("LiveFrame", () => {
  test("starts as a copy of the tree it is given, with that tree's hash", () => {
    const tree = frame();
    const live = new LiveFrame(tree);
    expect(live.toTree()).toEqual(tree);
    expect(live.hash).toBe(frameHash(tree));
    tree.children[0]!.props.changed = true;
    expect(live.toTree()).toEqual(frame());
  });

  test("apply changes the tree and the hash exactly as applying the delta to a plain tree would", () => {
    const live = new LiveFrame(frame());
    const next = el("workflow", { name: "w" }, [
      el("parallel", {}, [el("task", { id: "new" }), ...tasks(4).slice(1)]),
      el("task", { id: "last", state: "done" }),
    ]);
    live.apply(encodeDelta(frame(), next));
    expect(live.toTree()).toEqual(next);
    expect(live.hash).toBe(frameHash(next));
    expect(live.toXml()).toBe(encodeFrameXml(next));
  });

  test("a set on one of 10,000 siblings updates the hash to that of the whole new tree", () => {
    const live = new LiveFrame(frame(10_000));
    live.apply([{ op: "set", path: [0, 7_777], name: "state", value: "running" }]);
    const expected = frame(10_000);
    expected.children[0]!.children[7_777]!.props.state = "running";
    expect(live.hash).toBe(frameHash(expected));
  });

  test("several ops in one delta, inserts and removes among them, leave the right hash", () => {
    const live = new LiveFrame(frame(100));
    const ops: FrameDelta = [];
    for (let i = 0; i < 30; i++) ops.push({ op: "insert", path: [0], index: i * 3, node: el("task", { id: `n${i}` }) });
    ops.push({ op: "remove", path: [0, 5] }, { op: "set", path: [0, 5], name: "state", value: "x" }, { op: "remove", path: [1], name: "id" });
    live.apply(ops);
    expect(live.hash).toBe(frameHash(live.toTree()));
    expect(live.hash).toBe(frameHash(structuredClone(live.toTree())));
  });

  test("a delta that does not fit throws FRAME_CORRUPT and leaves the frame exactly as it was", () => {
    const live = new LiveFrame(frame());
    const before = { xml: live.toXml(), hash: live.hash };
    const bad: FrameDelta = [
      { op: "set", path: [0, 1], name: "state", value: "running" },
      { op: "remove", path: [1], name: "id" },
      { op: "insert", path: [0], index: 0, node: el("task", { id: "z" }) },
      { op: "remove", path: [0, 2] },
      { op: "set", path: [9], name: "x", value: 1 },
    ];
    expect(errorOf(() => live.apply(bad)).code).toBe("FRAME_CORRUPT");
    expect(live.toXml()).toBe(before.xml);
    expect(live.hash).toBe(before.hash);
    live.apply([{ op: "set", path: [0, 1], name: "state", value: "running" }]);
    const expected = frame();
    expected.children[0]!.children[1]!.props.state = "running";
    expect(live.hash).toBe(frameHash(expected));
  });

  test("a malformed delta throws FRAME_CORRUPT before changing anything", () => {
    const live = new LiveFrame(frame());
    const hash = live.hash;
    const bad = [{ op: "set", path: [0, 0], name: "state", value: "ok" }, { op: "oops" }] as unknown as FrameDelta;
    expect(errorOf(() => live.apply(bad)).code).toBe("FRAME_CORRUPT");
    expect(live.hash).toBe(hash);
  });

  test("toTree is a frozen snapshot that later applies do not change", () => {
    const live = new LiveFrame(frame());
    const snapshot = live.toTree();
    live.apply([{ op: "set", path: [0, 0], name: "state", value: "running" }]);
    expect(snapshot.children[0]!.children[0]!.props.state).toBe("pending");
    expect(Object.isFrozen(snapshot) && Object.isFrozen(snapshot.props) && Object.isFrozen(snapshot.children)).toBe(true);
    expect(() => snapshot.children.push(el("x"))).toThrow();
  });

  test("successive snapshots share the subtrees no op touched", () => {
    const live = new LiveFrame(frame());
    const first = live.toTree();
    live.apply([{ op: "set", path: [0, 0], name: "state", value: "running" }]);
    const second = live.toTree();
    expect(second.children[1]).toBe(first.children[1]!);
    expect(second.children[0]!.children[1]).toBe(first.children[0]!.children[1]!);
    expect(second.children[0]).not.toBe(first.children[0]!);
  });

  test("values given to apply are copied, so mutating them afterwards changes nothing", () => {
    const live = new LiveFrame(frame());
    const value = { list: [1, 2] };
    live.apply([{ op: "set", path: [1], name: "meta", value }]);
    const hash = live.hash;
    value.list.push(3);
    expect(live.toTree().children[1]!.props.meta).toEqual({ list: [1, 2] });
    expect(live.hash).toBe(hash);
  });

  test("elementAt reads the element at a path, or undefined when there is none", () => {
    const live = new LiveFrame(frame());
    expect(live.elementAt([0, 2])).toEqual(el("task", { id: "t2", state: "pending" }));
    expect(live.elementAt([])).toEqual(frame());
    expect(live.elementAt([0, 9])).toBeUndefined();
  });

  test("a tree with a name or value no frame can hold is refused with INVALID_FRAME", () => {
    expect(errorOf(() => new LiveFrame(el("a", { "b c": 1 }))).code).toBe("INVALID_FRAME");
    expect(errorOf(() => new LiveFrame(el("a", { v: Number.POSITIVE_INFINITY }))).code).toBe("INVALID_FRAME");
  });
});
