import { WAITING_STATUSES } from "../../db/index.ts";
import { ENDED_RUN_STATUSES, RUN_STATUSES } from "../../contract/index.ts";
import { lazyEnum } from "../../schema/index.ts";

/**
 * The states below are zod enums built on first use (nodeStateSchema() …), not at import: a
 * process that never validates one (every command but a few) then never loads zod for them.
 */

/** States of a node in `_smithers_nodes`. */
export const NODE_STATES = [
  "pending",
  "running",
  "finished",
  "failed",
  "skipped",
  "cancelled",
  "waiting-approval",
  "waiting-event",
  "waiting-timer",
  /** A task whose `concurrencyKey` has no free slot: it starts when one frees (see waits/limits.ts). */
  "waiting-slot",
  /** A task whose key's rate window is full: it may start at the node's wake_at_ms. */
  "waiting-rate",
] as const;
export type NodeState = (typeof NODE_STATES)[number];
export const nodeStateSchema = lazyEnum(NODE_STATES);

/**
 * States of an attempt in `_smithers_attempts`; `abandoned` = left running by a process that
 * died; `waiting` = a `<Subflow>` attempt whose child run stopped to wait (the next attempt resumes it).
 */
export const ATTEMPT_STATES = ["running", "finished", "failed", "cancelled", "abandoned", "waiting"] as const;
export type AttemptState = (typeof ATTEMPT_STATES)[number];
export const attemptStateSchema = lazyEnum(ATTEMPT_STATES);

/** A run's status (see names.ts for what `continued` and `paused` mean). */
export type RunStatus = (typeof RUN_STATUSES)[number];
export const runStatusSchema = lazyEnum(RUN_STATUSES);

/** The statuses of a run (and states of a node) that wait for the world: a person, a signal, a time. */
export { WAITING_STATUSES };
export type WaitingStatus = (typeof WAITING_STATUSES)[number];

export const isWaiting = (status: string): status is WaitingStatus => (WAITING_STATUSES as readonly string[]).includes(status);

const ENDED: ReadonlySet<string> = new Set(ENDED_RUN_STATUSES);

/** Statuses after which a run never runs again (resuming a failed or cancelled one is a new attempt at it). */
export const isOver = (status: string): boolean => ENDED.has(status);
