/**
 * `_smithers_cache`: task outputs reused across runs. An entry stores the schema signature of
 * its output table at write time; on read the live table is signed again and a different
 * signature is a miss, so a migrated table never serves a stale row.
 */
import { and, eq, type InferSelectModel, type SQL } from "drizzle-orm";
import { smithersCache } from "../internal-schema.ts";
import { computeSchemaSignature, hashSchemaSignature, liveColumns } from "../schema-signature.ts";
import type { SmithersDb } from "../smithers-db.ts";

export type CacheRow = InferSelectModel<typeof smithersCache>;

export type CacheKeyParts = {
  workflowName: string;
  nodeId: string;
  /** The task's `cache.by` value (any JSON). */
  by: unknown;
  version?: string | number | null;
  schemaSig: string;
  agentSig?: string | null;
};

/** SHA-256 over the parts that make two task runs interchangeable. */
export function computeCacheKey(parts: CacheKeyParts): string {
  const material = [parts.workflowName, parts.nodeId, parts.by ?? null, parts.version ?? null, parts.schemaSig, parts.agentSig ?? null];
  return new Bun.CryptoHasher("sha256").update(JSON.stringify(material)).digest("hex");
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

/**
 * Stores (or replaces) a cached output.
 * @example
 * await putCache(db, { cacheKey, workflowName: "wf", nodeId: "analyze", outputTable: "analysis", payload, createdAtMs: Date.now() });
 */
export function putCache(db: SmithersDb, entry: CachePut): Promise<void> {
  return db.write("putCache", (d) => {
    const row = {
      cacheKey: entry.cacheKey,
      createdAtMs: entry.createdAtMs,
      workflowName: entry.workflowName,
      nodeId: entry.nodeId,
      outputTable: entry.outputTable,
      schemaSig: entry.schemaSig ?? computeSchemaSignature(d.$client, entry.outputTable),
      agentSig: entry.agentSig ?? null,
      payloadJson: JSON.stringify(entry.payload ?? null),
    };
    const { cacheKey: _key, ...set } = row;
    d.insert(smithersCache).values(row).onConflictDoUpdate({ target: smithersCache.cacheKey, set }).run();
  });
}

/** The cached output, unless absent or its output table's schema has changed since (a miss). */
export function getCache(db: SmithersDb, cacheKey: string): Promise<CacheHit | undefined> {
  return db.read("getCache", (d) => {
    const row = d.select().from(smithersCache).where(eq(smithersCache.cacheKey, cacheKey)).get();
    if (!row) return undefined;
    const columns = liveColumns(d.$client, row.outputTable);
    if (columns.length === 0 || hashSchemaSignature(row.outputTable, columns) !== row.schemaSig) return undefined;
    return { payload: JSON.parse(row.payloadJson) as unknown, row };
  });
}

/** Drops the cached outputs of a workflow, or of one of its nodes; returns how many. */
export function deleteCache(db: SmithersDb, filter: { workflowName: string; nodeId?: string }): Promise<number> {
  const conditions: SQL[] = [eq(smithersCache.workflowName, filter.workflowName)];
  if (filter.nodeId !== undefined) conditions.push(eq(smithersCache.nodeId, filter.nodeId));
  return db.write(
    "deleteCache",
    (d) =>
      d
        .delete(smithersCache)
        .where(and(...conditions))
        .returning({ cacheKey: smithersCache.cacheKey })
        .all().length,
  );
}
