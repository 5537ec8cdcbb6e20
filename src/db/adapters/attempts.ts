/** `_smithers_attempts`: every execution attempt of every node, kept as history. */
import { and, eq, sql, type InferInsertModel, type InferSelectModel } from "drizzle-orm";
import { cachedStatement } from "./shared.ts";
import { smithersAttempts } from "../internal-schema.ts";
import { changedRows, type Drizzle, type SmithersDb } from "../smithers-db.ts";

export type AttemptRow = InferSelectModel<typeof smithersAttempts>;
export type NewAttemptRow = InferInsertModel<typeof smithersAttempts>;

const p = (name: string) => sql.placeholder(name);

export function insertAttempt(d: Drizzle, row: NewAttemptRow): void {
  const statement = cachedStatement(d, "insertAttempt", () =>
    d
      .insert(smithersAttempts)
      .values({
        runId: p("runId"),
        nodeId: p("nodeId"),
        iteration: p("iteration"),
        attempt: p("attempt"),
        state: p("state"),
        startedAtMs: p("startedAtMs"),
        metaJson: p("metaJson"),
      })
      .prepare(),
  );
  if (row.finishedAtMs != null || row.errorJson != null || row.responseText != null) {
    d.insert(smithersAttempts).values(row).run(); // an attempt recorded already closed (rare)
    return;
  }
  statement.run({ ...row, iteration: row.iteration ?? 0, metaJson: row.metaJson ?? null });
}

/** Closes a `running` attempt; returns 0 when it was not running any more (taken over). */
export function finishAttempt(
  d: Drizzle,
  key: { runId: string; nodeId: string; iteration: number; attempt: number },
  patch: Pick<Partial<NewAttemptRow>, "state" | "finishedAtMs" | "errorJson" | "responseText" | "metaJson">,
): number {
  const statement = cachedStatement(d, "finishAttempt", () =>
    d
      .update(smithersAttempts)
      .set({
        state: sql`${p("state")}`,
        finishedAtMs: sql`${p("finishedAtMs")}`,
        errorJson: sql`${p("errorJson")}`,
        responseText: sql`${p("responseText")}`,
        metaJson: sql`coalesce(${p("metaJson")}, ${smithersAttempts.metaJson})`,
      })
      .where(
        and(
          eq(smithersAttempts.runId, p("runId")),
          eq(smithersAttempts.nodeId, p("nodeId")),
          eq(smithersAttempts.iteration, p("iteration")),
          eq(smithersAttempts.attempt, p("attempt")),
          eq(smithersAttempts.state, "running"),
        ),
      )
      .prepare(),
  );
  return changedRows(
    statement.run({
      ...key,
      state: patch.state ?? "finished",
      finishedAtMs: patch.finishedAtMs ?? null,
      errorJson: patch.errorJson ?? null,
      responseText: patch.responseText ?? null,
      metaJson: patch.metaJson ?? null,
    }),
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
