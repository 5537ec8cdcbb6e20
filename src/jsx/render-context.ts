/**
 * The ctx of the render in progress, for components that read outputs while the tree is turned
 * into a plan (a `<Signal>` mounts its children once its payload exists). The engine sets it
 * around build and render; outside a render there is none.
 */

/** What a component may ask of the ctx during a render (the engine's SmithersCtx has it). */
export type RenderContext = {
  outputMaybe(target: unknown, lookup: { nodeId: string; iteration?: number }): unknown;
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
