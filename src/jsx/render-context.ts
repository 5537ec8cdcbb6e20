/**
 * The ctx of the render in progress, for components that read outputs while the tree is turned
 * into a plan (a `<Signal>` mounts its children once its payload exists). The engine sets it
 * around build and render; outside a render there is none.
 */

import type { PlanNode } from "./plan.ts";

/** The failure a rendered subtree ended with, as the scheduler sees it (see `failureIn`). */
export type ScopeFailure = { code: string; message: string; nodeId?: string; iteration?: number };

/** What a component may ask of the ctx during a render (the engine's SmithersCtx has it). */
export type RenderContext = {
  outputMaybe(target: unknown, lookup: { nodeId: string; iteration?: number }): unknown;
  /**
   * The failure `node` (already rendered) ended with given the persisted node states, or
   * undefined while it has none: what a `<TryCatchFinally catch={(error) => …}>` is called with.
   * Only the engine answers it.
   */
  failureIn?(node: PlanNode): ScopeFailure | undefined;
};

let current: RenderContext | undefined;

/** Runs `fn` with `ctx` as the render context (restored afterwards, also when `fn` throws). */
export function withRenderContext<T>(ctx: RenderContext, fn: () => T): T {
  const previous = current;
  current = ctx;
  try {
    return fn();
  } finally {
    current = previous;
  }
}

/** The ctx of the render in progress, or undefined outside one. */
export function renderContext(): RenderContext | undefined {
  return current;
}
