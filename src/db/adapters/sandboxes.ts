/** `_smithers_sandboxes`: sandbox sessions (bubblewrap, container, remote), keyed by run + sandbox id. */
import type { InferInsertModel, InferSelectModel } from "drizzle-orm";
import { and, asc, eq } from "drizzle-orm/sql";
import { smithersSandboxes } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";

export type SandboxRow = InferSelectModel<typeof smithersSandboxes>;
export type NewSandboxRow = InferInsertModel<typeof smithersSandboxes>;

/**
 * Inserts the sandbox or updates it by (runId, sandboxId); fields left undefined keep their
 * stored values, so status transitions can be written as small patches.
 * @example
 * await upsertSandbox(db, { runId, sandboxId: "sb1", configJson: "{}", status: "running" });
 */
export function upsertSandbox(db: SmithersDb, row: NewSandboxRow): Promise<void> {
  const { runId: _run, sandboxId: _id, ...rest } = row;
  const set = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  return db.write("upsertSandbox", async (q) => {
    const insert = q.orm.insert(smithersSandboxes).values(row);
    const target = [smithersSandboxes.runId, smithersSandboxes.sandboxId];
    if (Object.keys(set).length === 0) await insert.onConflictDoNothing({ target }).run();
    else await insert.onConflictDoUpdate({ target, set }).run();
  });
}

export function getSandbox(db: SmithersDb, runId: string, sandboxId: string): Promise<SandboxRow | undefined> {
  return db.read("getSandbox", (q) =>
    q.orm
      .select()
      .from(smithersSandboxes)
      .where(and(eq(smithersSandboxes.runId, runId), eq(smithersSandboxes.sandboxId, sandboxId)))
      .get(),
  );
}

/** A run's sandboxes by id. */
export function listSandboxes(db: SmithersDb, runId: string): Promise<SandboxRow[]> {
  return db.read("listSandboxes", (q) =>
    q.orm.select().from(smithersSandboxes).where(eq(smithersSandboxes.runId, runId)).orderBy(asc(smithersSandboxes.sandboxId)).all(),
  );
}

/**
 * Closes the sessions a dead process left `running` (status `abandoned`, no exit code, ended now,
 * `errorText` the reason); returns their directories, for the caller to remove.
 */
export function abandonOpenSandboxes(q: Sql, runId: string, nowMs: number, reason: string): Promise<{ sandboxId: string; rootDir: string | null }[]> {
  return q.orm
    .update(smithersSandboxes)
    .set({ status: "abandoned", completedAtMs: nowMs, exitCode: null, errorText: reason })
    .where(and(eq(smithersSandboxes.runId, runId), eq(smithersSandboxes.status, "running")))
    .returning({ sandboxId: smithersSandboxes.sandboxId, rootDir: smithersSandboxes.rootDir })
    .all();
}
