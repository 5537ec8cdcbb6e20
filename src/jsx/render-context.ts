/**
 * The ctx of the render in progress, for components that read outputs while the tree is turned
 * into a plan (a `<Signal>` mounts its children once its payload exists). The engine sets it
 * around build and render; outside a render there is none.
 */

import type { PlanNode } from "./plan.ts";

/** What a component may ask of the ctx during a render (the engine's SmithersCtx has it). */
export type RenderContext = {
  outputMaybe(target: unknown, lookup: { nodeId: string; iteration?: number }): unknown;
};

/** The failure a rendered subtree ended with, as the scheduler sees it (see RenderHooks). */
export type ScopeFailure = { code: string; message: string; nodeId?: string; iteration?: number };

/** What the engine answers during a render besides the ctx (not part of the ctx authors see). */
export type RenderHooks = {
  /**
   * The failure `node` (already rendered) ended with given the persisted node states, or
   * undefined while it has none: what a `<TryCatchFinally catch={(error) => …}>` is called with.
   */
  failureIn(node: PlanNode): ScopeFailure | undefined;
};

let current: RenderContext | undefined;
let currentHooks: RenderHooks | undefined;

/** Runs `fn` with `ctx` (and the engine's `hooks`) as the render context, restored afterwards, also when `fn` throws. */
export function withRenderContext<T>(ctx: RenderContext, fn: () => T, hooks?: RenderHooks): T {
  const previous = current;
  const previousHooks = currentHooks;
  current = ctx;
  currentHooks = hooks;
  try {
    return fn();
  } finally {
    current = previous;
    currentHooks = previousHooks;
  }
}

/** The ctx of the render in progress, or undefined outside one. */
export function renderContext(): RenderContext | undefined {
  return current;
}

/** The engine's hooks of the render in progress, or undefined (outside a render, or a render without an engine). */
export function renderHooks(): RenderHooks | undefined {
  return currentHooks;
}
