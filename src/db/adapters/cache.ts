/**
 * `_smithers_cache`: task outputs reused across runs. An entry stores the schema signature of
 * its output table at write time; on read the live table is signed again and a different
 * signature is a miss, so a migrated table never serves a stale row.
 */
import type { InferSelectModel } from "drizzle-orm";
import { and, eq, type SQL } from "drizzle-orm/sql";
import { getTableColumns } from "drizzle-orm/utils";
import { SmithersError } from "../../errors/index.ts";
import { canonicalJson, sha256Hex, UnstableJsonError } from "../../json/index.ts";
import { smithersCache } from "../internal-schema.ts";
import type { OutputTableInfo } from "../output-tables.ts";
import { computeSchemaSignature, hashSchemaSignature, liveColumns } from "../schema-signature.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { sqlNames } from "./shared.ts";

export type CacheRow = InferSelectModel<typeof smithersCache>;

/** Which runs share an entry: one run's, every run of one workflow, or every workflow's. */
export type CacheScope = "run" | "workflow" | "global";

export type CacheKeyParts = {
  /** Default "workflow". */
  scope?: CacheScope;
  /** Part of the key in scope "run" only. */
  runId?: string;
  /** Part of the key in scopes "run" and "workflow". */
  workflowName: string;
  /** The task's identity in the key, unless `key` stands in for it. */
  nodeId: string;
  /** Replaces `nodeId` in the key: tasks sharing it share entries. */
  key?: string | null;
  /** The task's `cache.by` value (any JSON; see cacheKeyJson). */
  by: unknown;
  version?: string | number | null;
  schemaSig: string;
  agentSig?: string | null;
};

/**
 * canonicalJson (strict) as a cache key's material: a value without one JSON form is
 * CACHE_KEY_FAILED naming where it is.
 * @example cacheKeyJson({ b: 1, a: [true, "x"] }) // '{"a":[true,"x"],"b":1}'
 */
export function cacheKeyJson(value: unknown): string {
  try {
    return canonicalJson(value);
  } catch (error) {
    if (!(error instanceof UnstableJsonError)) throw error;
    throw new SmithersError("CACHE_KEY_FAILED", `${error.what} at ${error.path} has no stable JSON form and cannot be part of a cache key`, {
      path: error.path,
    });
  }
}

/**
 * SHA-256 over the parts that make two task runs interchangeable: the scope and what it names
 * (the run id for "run", the workflow name for "run" and "workflow", nothing for "global"), the
 * task (`key`, else the node id), the stable JSON of `by`, the version, the output table's schema
 * signature and the agents' signature. Throws CACHE_KEY_FAILED when `by` has no stable JSON form.
 */
export function computeCacheKey(parts: CacheKeyParts): string {
  const scope = parts.scope ?? "workflow";
  const material = cacheKeyJson({
    scope,
    run: scope === "run" ? (parts.runId ?? null) : null,
    workflow: scope === "global" ? null : parts.workflowName,
    task: parts.key != null ? { key: parts.key } : { node: parts.nodeId },
    by: JSON.parse(cacheKeyJson(parts.by ?? null)) as unknown,
    version: parts.version ?? null,
    schema: parts.schemaSig,
    agents: parts.agentSig ?? null,
  });
  return sha256Hex(material);
}

export type CachePut = {
  cacheKey: string;
  workflowName: string;
  nodeId: string;
  outputTable: string;
  payload: unknown;
  createdAtMs: number;
  agentSig?: string | null;
  /** Defaults to the signature of `outputTable` as it is on disk now. */
  schemaSig?: string;
};

export type CacheHit = { payload: unknown; row: CacheRow };

const C = sqlNames(smithersCache);

const UPSERT = `INSERT INTO ${C.$table} (${C.cacheKey}, ${C.createdAtMs}, ${C.workflowName}, ${C.nodeId}, ${C.outputTable}, ${C.schemaSig}, ${C.agentSig}, ${C.payloadJson})
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (${C.cacheKey}) DO UPDATE SET ${[C.createdAtMs, C.workflowName, C.nodeId, C.outputTable, C.schemaSig, C.agentSig, C.payloadJson]
    .map((c) => `${c} = excluded.${c}`)
    .join(", ")}`;

/** Stores (or replaces) an entry inside the caller's transaction: the engine writes it with the task's output row. */
export async function putCacheIn(q: Sql, entry: CachePut): Promise<void> {
  await q.run(
    UPSERT,
    entry.cacheKey,
    entry.createdAtMs,
    entry.workflowName,
    entry.nodeId,
    entry.outputTable,
    entry.schemaSig ?? (await computeSchemaSignature(q, entry.outputTable)),
    entry.agentSig ?? null,
    JSON.stringify(entry.payload ?? null),
  );
}

/**
 * Stores (or replaces) a cached output.
 * @example
 * await putCache(db, { cacheKey, workflowName: "wf", nodeId: "analyze", outputTable: "analysis", payload, createdAtMs: Date.now() });
 */
export function putCache(db: SmithersDb, entry: CachePut): Promise<void> {
  return db.write("putCache", (q) => putCacheIn(q, entry));
}

/** The cached output, unless absent or its output table's schema has changed since (a miss). */
export function getCache(db: SmithersDb, cacheKey: string): Promise<CacheHit | undefined> {
  return db.read("getCache", async (q) => {
    const row = await q.orm.select().from(smithersCache).where(eq(smithersCache.cacheKey, cacheKey)).get();
    if (!row) return undefined;
    const columns = await liveColumns(q, row.outputTable);
    if (columns.length === 0 || hashSchemaSignature(row.outputTable, columns) !== row.schemaSig) return undefined;
    return { payload: JSON.parse(row.payloadJson) as unknown, row };
  });
}

export type CacheLookup = {
  cacheKey: string;
  /** The output table's signature now, part of the key and stored with a new entry. */
  schemaSig: string;
  /** The entry under the key, when there is one for this very table and schema. */
  hit: CacheHit | undefined;
};

const SELECT = `SELECT ${C.cacheKey} AS "cacheKey", ${C.createdAtMs} AS "createdAtMs", ${C.workflowName} AS "workflowName", ${C.nodeId} AS "nodeId",
  ${C.outputTable} AS "outputTable", ${C.schemaSig} AS "schemaSig", ${C.agentSig} AS "agentSig", ${C.payloadJson} AS "payloadJson"
  FROM ${C.$table} WHERE ${C.cacheKey} = ?`;

/**
 * One read for a task about to run: signs its output table as it is now, keys the entry with
 * that signature (so a schema change is a different key), and reads the entry.
 */
export function lookupCache(db: SmithersDb, parts: Omit<CacheKeyParts, "schemaSig">, outputTable: string): Promise<CacheLookup> {
  return db.read("lookupCache", async (q) => {
    const schemaSig = await computeSchemaSignature(q, outputTable);
    const cacheKey = computeCacheKey({ ...parts, schemaSig });
    const row = await q.get<CacheRow>(SELECT, cacheKey);
    const hit = row && row.outputTable === outputTable && row.schemaSig === schemaSig ? { payload: JSON.parse(row.payloadJson) as unknown, row } : undefined;
    return { cacheKey, schemaSig, hit };
  });
}

/**
 * A stored payload as the task's output values again: JSON keeps every column kind but dates,
 * which come back as ISO text and are turned into Dates for the table's timestamp columns.
 */
export function revivePayload(info: OutputTableInfo, payload: unknown): unknown {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return payload;
  const out = { ...(payload as Record<string, unknown>) };
  for (const [field, column] of Object.entries(getTableColumns(info.table))) {
    if (column.columnType !== "SQLiteTimestamp") continue;
    for (const name of [field, column.name]) {
      const value = out[name];
      if (typeof value === "string" || typeof value === "number") out[name] = new Date(value);
    }
  }
  return out;
}

/** Drops the cached outputs of a workflow, or of one of its nodes; returns how many. */
export function deleteCache(db: SmithersDb, filter: { workflowName: string; nodeId?: string }): Promise<number> {
  const conditions: SQL[] = [eq(smithersCache.workflowName, filter.workflowName)];
  if (filter.nodeId !== undefined) conditions.push(eq(smithersCache.nodeId, filter.nodeId));
  return db.write(
    "deleteCache",
    async (q) =>
      (
        await q.orm
          .delete(smithersCache)
          .where(and(...conditions))
          .returning({ cacheKey: smithersCache.cacheKey })
          .all()
      ).length,
  );
}
