/** The host element names components render to, and the types of what tasks read and write. */
import type { z } from "zod";
import type { OutputTarget } from "../plan.ts";

/** The row type of an output target: the schema's output for a Zod schema, else a plain record. */
export type RowOf<T> = T extends z.ZodType ? z.output<T> : Record<string, unknown>;

/** Upstream outputs a task reads through `deps`, by the name it gives each. */
export type DepsSpec = Record<string, OutputTarget>;

export const HOST = {
  workflow: "smithers:workflow",
  task: "smithers:task",
  sequence: "smithers:sequence",
  parallel: "smithers:parallel",
  loop: "smithers:loop",
  subflow: "smithers:subflow",
} as const;
