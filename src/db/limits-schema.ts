/**
 * The internal tables of concurrency keys and rate limits (issue 37), declared beside the others'
 * list in internal-schema.ts (which re-exports them), in a file of their own to keep that one short.
 */
import { integer, text } from "drizzle-orm/sqlite-core/columns";
import { index } from "drizzle-orm/sqlite-core/indexes";
import { primaryKey } from "drizzle-orm/sqlite-core/primary-keys";
import { lazySqliteTable } from "./lazy-table.ts";

/**
 * `_smithers_limits`: the limits each key was last declared with by a process that used it
 * (createSmithers `limits`, `--limit`), for `smithers limits` and the dashboard. The limit a
 * process enforces is its own; this row says what was declared, not what binds.
 */
export const smithersLimits = lazySqliteTable("_smithers_limits", () => ({
  limitKey: text("limit_key").primaryKey(),
  concurrency: integer("concurrency"),
  perMinute: integer("per_minute"),
  tokensPerMinute: integer("tokens_per_minute"),
  updatedAtMs: integer("updated_at_ms").notNull(),
}));

/**
 * `_smithers_slots`: a task's place under its `concurrencyKey`, one row per node. `held`: it runs
 * (or is starting); it counts against the key only while its run is `running` under the owner
 * that claimed it, so a slot of a dead process is freed when its run is taken over (the lease
 * rule of runs). `waiting`: the node waits for a slot (`waiting-slot`); a release makes its run due.
 */
export const smithersSlots = lazySqliteTable(
  "_smithers_slots",
  () => ({
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    limitKey: text("limit_key").notNull(),
    /** `held` or `waiting`. */
    state: text("state").notNull(),
    /** The run's owner when the slot was claimed. */
    ownerId: text("owner_id"),
    sinceMs: integer("since_ms").notNull(),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.nodeId, t.iteration] }), index("_smithers_slots_key_idx").on(t.limitKey, t.state)],
);

/**
 * `_smithers_rate_usage`: what started under a rate-limited key in the last minute: `request`
 * (a task start, amount 1), `tokens` (an attempt's agent tokens, when it ended), `blocked` (a
 * provider's 429 asked to wait: `at_ms` is when the key may be used again). Older rows are
 * deleted by the next claim of the key.
 */
export const smithersRateUsage = lazySqliteTable(
  "_smithers_rate_usage",
  () => ({
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    attempt: integer("attempt").notNull(),
    kind: text("kind").notNull(),
    limitKey: text("limit_key").notNull(),
    atMs: integer("at_ms").notNull(),
    amount: integer("amount").notNull().default(1),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.nodeId, t.iteration, t.attempt, t.kind] }), index("_smithers_rate_usage_key_idx").on(t.limitKey, t.atMs)],
);
