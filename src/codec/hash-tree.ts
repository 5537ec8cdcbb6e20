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
  /** refresh()'s indices of the level it is at (a few: one per changed leaf at most). */
  private readonly pending: number[] = [];

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

  /**
   * Rehash the ancestors of leaves `changed` (set with leaf() before; repeats allowed), each
   * ancestor once, level by level: two neighbours changed in one step share all but a few.
   */
  refresh(changed: readonly number[]): void {
    // Every leaf sits at the same depth, so the indices of one level share theirs: the root is 1.
    // In ascending order the parents of each level come out ascending too, so a repeat is always
    // the index last added: one comparison each (a scan of the level for each was quadratic in
    // the number changed, 33 million comparisons for a step that changes 10,000 children).
    const ks = this.pending;
    // Already ascending (a step's ops come in the tree's order) is kept as it is: no copy to sort.
    let leaves: ArrayLike<number> & Iterable<number> = changed;
    for (let j = 1; j < changed.length; j++) {
      if (changed[j]! < changed[j - 1]!) {
        leaves = Int32Array.from(changed).sort();
        break;
      }
    }
    let m = 0;
    for (const i of leaves) m = addLast(ks, m, (this.size + i) >> 1);
    while (m > 0 && ks[0]! >= 1) {
      let next = 0;
      for (let j = 0; j < m; j++) {
        const k = ks[j]!;
        this.combine(k);
        next = addLast(ks, next, k >> 1);
      }
      m = ks[0] === 0 ? 0 : next;
    }
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

// Appends k to the first `m` entries of `ks` (ascending) unless it is the last of them; returns the new count.
// Written over the same array as it is read: entry j is read before entry `next` <= j is written.
function addLast(ks: number[], m: number, k: number): number {
  if (m > 0 && ks[m - 1] === k) return m;
  ks[m] = k;
  return m + 1;
}
