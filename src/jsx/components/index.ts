/**
 * The JSX surface, one file per family: each component returns a host element (`smithers:*`) that
 * render() turns into Plan nodes; Branch resolves on the spot, so the branch not taken is absent
 * from the plan.
 */
export * from "./host.ts";
export * from "./structure.ts";
export * from "./task.ts";
export * from "./approval.ts";
export * from "./escalation-chain.ts";
export * from "./waits.ts";
