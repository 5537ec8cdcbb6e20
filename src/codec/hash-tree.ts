/**
 * The children-list hash of hash.ts kept as a segment tree, so one changed child costs O(log n)
 * pair hashes instead of a full refold. Equal to foldList over the same leaves at every moment.
 */
import { EMPTY_LIST_A, EMPTY_LIST_B, out, pairHash } from "./hash.ts";

export class ChildHashTree {
  private readonly size: number;
  private readonly levels: number;
  private readonly a: Int32Array;
  private readonly b: Int32Array;

  /** Fill the leaves with leaf(), then call build(). */
  constructor(readonly count: number) {
    let size = 1;
    let levels = 0;
    while (size < count) {
      size <<= 1;
      levels++;
    }
    this.size = size;
    this.levels = levels;
    this.a = new Int32Array(2 * size);
    this.b = new Int32Array(2 * size);
  }

  leaf(i: number, a: number, b: number): void {
    this.a[this.size + i] = a;
    this.b[this.size + i] = b;
  }

  build(): void {
    for (let k = this.size - 1; k >= 1; k--) this.combine(k);
  }

  /** Replace leaf i and rehash its ancestors. */
  update(i: number, a: number, b: number): void {
    this.leaf(i, a, b);
    for (let k = (this.size + i) >> 1; k >= 1; k >>= 1) this.combine(k);
  }

  get rootA(): number {
    return this.count === 0 ? EMPTY_LIST_A : this.a[1]!;
  }

  get rootB(): number {
    return this.count === 0 ? EMPTY_LIST_B : this.b[1]!;
  }

  // A right subtree lying wholly past the last leaf is absent: the left value rises alone, as in foldList.
  private combine(k: number): void {
    const left = 2 * k;
    const right = left + 1;
    const depth = 31 - Math.clz32(right);
    const firstLeaf = (right - (1 << depth)) << (this.levels - depth);
    if (firstLeaf >= this.count) {
      this.a[k] = this.a[left]!;
      this.b[k] = this.b[left]!;
    } else {
      pairHash(this.a[left]!, this.b[left]!, this.a[right]!, this.b[right]!);
      this.a[k] = out.a;
      this.b[k] = out.b;
    }
  }
}
