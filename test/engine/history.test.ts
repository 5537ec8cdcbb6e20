import { describe, expect, test } from "bun:test";
import type { XmlElement } from "../../src/codec/index.ts";
import { downstreamOf } from "../../src/engine/index.ts";

const task = (id: string, dependsOn?: string[]): XmlElement => ({ tag: "task", props: { id, ...(dependsOn ? { dependsOn } : {}) }, children: [] });
const el = (tag: string, ...children: XmlElement[]): XmlElement => ({ tag, props: {}, children });

describe("downstreamOf", () => {
  // workflow: [ parallel: [ sequence: [a, b], c ], d(dependsOn c), parallel: [ e, f(dependsOn a) ] ]
  const tree = el("workflow", el("parallel", el("sequence", task("a"), task("b")), task("c")), task("d", ["c"]), el("parallel", task("e"), task("f", ["a"])));

  test("follows the sequences around a node and dependsOn, not its parallel siblings", () => {
    expect([...downstreamOf(tree, ["b"])].sort()).toEqual(["b", "d", "e", "f"]);
    expect([...downstreamOf(tree, ["a"])].sort()).toEqual(["a", "b", "d", "e", "f"]);
    expect([...downstreamOf(tree, ["e"])].sort()).toEqual(["e"]);
    expect([...downstreamOf(tree, ["d"])].sort()).toEqual(["d", "e", "f"]);
  });

  test("nothing reset, nothing downstream; a dependsOn chain is followed to its end", () => {
    expect(downstreamOf(tree, []).size).toBe(0);
    const chain = el("parallel", task("x"), task("y", ["x"]), task("z", ["y"]), task("w"));
    expect([...downstreamOf(chain, ["x"])].sort()).toEqual(["x", "y", "z"]);
  });

  test("a long sequence is linear: every task after the reset one", () => {
    const n = 20_000;
    const seq = el("workflow", el("sequence", ...Array.from({ length: n }, (_, i) => task(`t${i}`))));
    expect(downstreamOf(seq, ["t100", "t50"]).size).toBe(n - 50);
  });
});
