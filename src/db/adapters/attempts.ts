/** `_smithers_attempts`: every execution attempt of every node, kept as history. */
import { and, eq, type InferInsertModel, type InferSelectModel } from "drizzle-orm";
import { smithersAttempts } from "../internal-schema.ts";
import { changedRows, type Drizzle, type SmithersDb } from "../smithers-db.ts";

export type AttemptRow = InferSelectModel<typeof smithersAttempts>;
export type NewAttemptRow = InferInsertModel<typeof smithersAttempts>;

export function insertAttempt(d: Drizzle, row: NewAttemptRow): void {
  d.insert(smithersAttempts).values(row).run();
}

/** Closes a `running` attempt; returns 0 when it was not running any more (taken over). */
export function finishAttempt(
  d: Drizzle,
  key: { runId: string; nodeId: string; iteration: number; attempt: number },
  patch: Pick<Partial<NewAttemptRow>, "state" | "finishedAtMs" | "errorJson" | "responseText" | "metaJson">,
): number {
  return changedRows(
    d
      .update(smithersAttempts)
      .set(patch)
      .where(
        and(
          eq(smithersAttempts.runId, key.runId),
          eq(smithersAttempts.nodeId, key.nodeId),
          eq(smithersAttempts.iteration, key.iteration),
          eq(smithersAttempts.attempt, key.attempt),
          eq(smithersAttempts.state, "running"),
        ),
      )
      .run(),
  );
}

export function listAttempts(db: SmithersDb, runId: string): Promise<AttemptRow[]> {
  return db.read("listAttempts", (d) =>
    d.select().from(smithersAttempts).where(eq(smithersAttempts.runId, runId)).orderBy(smithersAttempts.startedAtMs).all(),
  );
}

/** Closes attempts a dead process left `running`; returns how many. */
export function abandonRunningAttempts(d: Drizzle, runId: string, nowMs: number, errorJson: string): number {
  return changedRows(
    d
    .update(smithersAttempts)
    .set({ state: "abandoned", finishedAtMs: nowMs, errorJson })
    .where(and(eq(smithersAttempts.runId, runId), eq(smithersAttempts.state, "running")))
    .run(),
  );
}
