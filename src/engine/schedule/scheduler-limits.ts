/** How the scheduler holds a ready task back by its `concurrencyKey` (pure, like the rest of decide). */
import type { PlanTask } from "../../jsx/index.ts";
import type { NodeStatus, Walk } from "./scheduler.ts";

/**
 * A ready task under a `concurrencyKey` that its key does not admit now: its rate wait has not
 * passed, or the caller knows the key full or its window closed until a time (`blocked`). It
 * waits there (one action when that changes) and the run may rest on it; otherwise it starts,
 * and the engine's claim decides. A task without a key comes here only while it is
 * `waiting-rate` because every agent of its list was rate-limited (see run-attempts.ts).
 */
export function heldByLimit(task: PlanTask, status: NodeStatus | undefined, w: Walk): boolean {
  const known = (task.concurrencyKey === undefined ? undefined : w.blocked?.get(task.concurrencyKey)) ?? -Infinity;
  const own = status?.state === "waiting-rate" ? (status.wakeAtMs ?? -Infinity) : -Infinity;
  const untilMs = Math.max(known, own);
  if (!(untilMs > w.nowMs)) return false;
  if (untilMs === Infinity) {
    if (status?.state !== "waiting-slot") w.actions.push({ type: "wait-slot", task });
    w.waitingSlot = true;
  } else {
    if (status?.state !== "waiting-rate" || status.wakeAtMs !== untilMs) w.actions.push({ type: "wait-rate", task, untilMs });
    w.waitingRate = true;
    w.timerAtMs = Math.min(w.timerAtMs ?? Infinity, untilMs);
  }
  return true;
}
