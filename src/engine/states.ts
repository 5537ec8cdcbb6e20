import { z } from "zod";

/** States of a node in `_smithers_nodes`. */
export const NodeStateSchema = z.enum(["pending", "running", "finished", "failed", "skipped", "cancelled", "waiting-approval", "waiting-timer"]);
export type NodeState = z.infer<typeof NodeStateSchema>;

/** States of an attempt in `_smithers_attempts`; `abandoned` = left running by a process that died. */
export const AttemptStateSchema = z.enum(["running", "finished", "failed", "cancelled", "abandoned"]);
export type AttemptState = z.infer<typeof AttemptStateSchema>;

export const RunStatusSchema = z.enum(["running", "finished", "failed", "cancelled", "waiting-approval", "waiting-event", "waiting-timer"]);
export type RunStatus = z.infer<typeof RunStatusSchema>;
