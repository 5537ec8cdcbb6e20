import { z } from "zod";
import { WAITING_STATUSES } from "../db/index.ts";

/** States of a node in `_smithers_nodes`. */
export const NodeStateSchema = z.enum([
  "pending",
  "running",
  "finished",
  "failed",
  "skipped",
  "cancelled",
  "waiting-approval",
  "waiting-event",
  "waiting-timer",
]);
export type NodeState = z.infer<typeof NodeStateSchema>;

/**
 * States of an attempt in `_smithers_attempts`; `abandoned` = left running by a process that
 * died; `waiting` = a `<Subflow>` attempt whose child run stopped to wait (the next attempt resumes it).
 */
export const AttemptStateSchema = z.enum(["running", "finished", "failed", "cancelled", "abandoned", "waiting"]);
export type AttemptState = z.infer<typeof AttemptStateSchema>;

/**
 * `continued`: the run ended by handing its work to a new run (`<ContinueAsNew>`, `<Loop
 * continueAsNewEvery>`), named by its `next_run_id`; like `finished`, it never runs again.
 */
/**
 * `paused`: a run holding its state at a frame that no process executes and none takes over: a
 * fork not started yet (`smithers fork` without `--run`) or a rewound run; `smithers up --resume`
 * (or `rewind --resume`) continues it.
 */
export const RunStatusSchema = z.enum([
  "running",
  "finished",
  "continued",
  "failed",
  "cancelled",
  "paused",
  "waiting-approval",
  "waiting-event",
  "waiting-timer",
]);
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** The statuses of a run (and states of a node) that wait for the world: a person, a signal, a time. */
export { WAITING_STATUSES };
export type WaitingStatus = (typeof WAITING_STATUSES)[number];

export const isWaiting = (status: string): status is WaitingStatus => (WAITING_STATUSES as readonly string[]).includes(status);

/** Statuses after which a run never runs again (resuming a failed or cancelled one is a new attempt at it). */
export const isOver = (status: string): boolean => status === "finished" || status === "continued" || status === "failed" || status === "cancelled";
