export * from "./element.ts";
export * from "./components.ts";
export * from "./plan.ts";
export { render, DEFAULT_MAX_ITERATIONS } from "./render.ts";
