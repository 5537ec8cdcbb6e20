import { describe, expect, test } from "bun:test";
import { frameHash, type PropValue, type XmlElement } from "../../src/codec/index.ts";
import { ChildHashTree } from "../../src/codec/hash-tree.ts";
import { foldList, out } from "../../src/codec/hash.ts";
import { createRng } from "./random-frames.ts";

const el = (tag: string, props: Record<string, PropValue> = {}, children: XmlElement[] = []): XmlElement => ({ tag, props, children });
const tasks = (n: number) => Array.from({ length: n }, (_, i) => el("task", { id: `t${i}`, state: "pending" }));

describe("frameHash", () => {
  test("is 16 lowercase hex digits", () => {
    expect(frameHash(el("workflow", { name: "w" }, tasks(3)))).toMatch(/^[0-9a-f]{16}$/);
  });

  test("equal frames built separately hash equally", () => {
    expect(frameHash(el("workflow", { name: "w" }, tasks(50)))).toBe(frameHash(el("workflow", { name: "w" }, tasks(50))));
  });

  test("any single change of tag, prop name, prop value, prop order or child changes the hash", () => {
    const base = el("workflow", { name: "w", n: 1 }, [el("sequence", {}, tasks(3))]);
    const variants = [
      el("workflows", { name: "w", n: 1 }, [el("sequence", {}, tasks(3))]),
      el("workflow", { name: "w", m: 1 }, [el("sequence", {}, tasks(3))]),
      el("workflow", { name: "w", n: "1" }, [el("sequence", {}, tasks(3))]),
      el("workflow", { n: 1, name: "w" }, [el("sequence", {}, tasks(3))]),
      el("workflow", { name: "w", n: 1 }, [el("sequence", {}, tasks(2))]),
      el("workflow", { name: "w", n: 1 }, [el("sequence", {}, [...tasks(3), el("task")])]),
      el("workflow", { name: "w", n: 1 }, [el("sequence", {}, tasks(3).reverse())]),
      el("workflow", { name: "w", n: 1 }, [el("sequence"), el("sequence", {}, tasks(3))]),
      el("workflow", { name: "w", n: 1 }, [el("sequence", {}, [el("sequence", {}, tasks(3))])]),
    ];
    const hashes = new Set([base, ...variants].map(frameHash));
    expect(hashes.size).toBe(variants.length + 1);
  });

  test("a string prop and the same text as a number or JSON string hash differently", () => {
    const hashes = [1, "1", "=1", true, "true", null, "null", [1], "[1]"].map((v) => frameHash(el("task", { v })));
    expect(new Set(hashes).size).toBe(hashes.length);
  });

  test("moving a child one level up or down changes the hash even when the child list hashes could coincide", () => {
    const a = el("x"),
      b = el("y"),
      c = el("z");
    expect(frameHash(el("r", {}, [a, b, c]))).not.toBe(frameHash(el("r", {}, [el("g", {}, [a, b]), c])));
  });

  test("10,000 distinct small frames have 10,000 distinct hashes", () => {
    const hashes = new Set<string>();
    for (let i = 0; i < 10_000; i++) hashes.add(frameHash(el("task", { id: `t${i % 100}`, n: Math.floor(i / 100) })));
    expect(hashes.size).toBe(10_000);
  });
});

describe("ChildHashTree", () => {
  const fold = (as: number[], bs: number[]) => {
    foldList(Int32Array.from(as), Int32Array.from(bs));
    return [out.a, out.b];
  };

  test("its root equals the balanced fold for every list length from 0 to 70", () => {
    const rng = createRng(7);
    for (let n = 0; n <= 70; n++) {
      const as = Array.from({ length: n }, () => rng.int(2 ** 32) | 0);
      const bs = Array.from({ length: n }, () => rng.int(2 ** 32) | 0);
      const tree = new ChildHashTree(n);
      as.forEach((a, i) => tree.leaf(i, a, bs[i]!));
      tree.build();
      expect([tree.rootA, tree.rootB]).toEqual(fold(as, bs));
    }
  });

  /** A tree of n leaves (i, -i), built, with its leaves' lanes to fold afresh. */
  const builtTree = (n: number) => {
    const as = Array.from({ length: n }, (_, i) => i);
    const bs = Array.from({ length: n }, (_, i) => -i);
    const tree = new ChildHashTree(n);
    as.forEach((a, i) => tree.leaf(i, a, bs[i]!));
    tree.build();
    return { as, bs, tree };
  };

  test("stays equal to a fresh fold through random single-leaf updates", () => {
    const rng = createRng(11);
    for (const n of [1, 2, 3, 5, 8, 13, 100, 1000]) {
      const { as, bs, tree } = builtTree(n);
      for (let k = 0; k < 50; k++) {
        const i = rng.int(n);
        as[i] = rng.int(2 ** 32) | 0;
        bs[i] = rng.int(2 ** 32) | 0;
        tree.leaf(i, as[i]!, bs[i]!);
        tree.refresh([i]);
        expect([tree.rootA, tree.rootB]).toEqual(fold(as, bs));
      }
    }
  });

  test("refresh after several leaves changed at once (repeats among them) equals a fresh fold", () => {
    const rng = createRng(13);
    for (const n of [1, 2, 3, 5, 8, 13, 100, 1000]) {
      const { as, bs, tree } = builtTree(n);
      for (let k = 0; k < 50; k++) {
        // Neighbours (as a step's two tasks), scattered leaves, and the same leaf twice.
        const first = rng.int(n);
        const changed = [first, Math.min(first + 1, n - 1), rng.int(n), first];
        for (const i of changed) {
          as[i] = rng.int(2 ** 32) | 0;
          bs[i] = rng.int(2 ** 32) | 0;
          tree.leaf(i, as[i]!, bs[i]!);
        }
        tree.refresh(changed);
        expect([tree.rootA, tree.rootB]).toEqual(fold(as, bs));
      }
      // Every leaf at once (a step that starts every task of a wide parallel), last first, each twice.
      const all = Array.from({ length: n }, (_, i) => n - 1 - i);
      for (const i of all) {
        as[i] = rng.int(2 ** 32) | 0;
        bs[i] = rng.int(2 ** 32) | 0;
        tree.leaf(i, as[i]!, bs[i]!);
      }
      tree.refresh([...all, ...all]);
      expect([tree.rootA, tree.rootB]).toEqual(fold(as, bs));
    }
  });
});
