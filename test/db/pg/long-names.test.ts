/**
 * PostgreSQL cuts identifiers to 63 bytes: a field whose column name is longer is written and read
 * under the cut name, and must still read back as written (output rows and the stored input).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { z } from "zod";
import { OutputRegistry, writeOutputRow } from "../../../src/db/output-tables.ts";
import { PgDb } from "../../../src/db/pg/pg-db.ts";
import { loadInput, loadOutputs, writeInput } from "../../../src/db/snapshot.ts";
import { pgTestServer } from "../../support/postgres.ts";

const pg = await pgTestServer();

const opened: PgDb[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

// 66 bytes once snake_cased: PostgreSQL keeps the first 63.
const LONG = "theReviewersConfidenceThatTheChangeIsSafeToMergeWithoutFurtherTests";

describe.skipIf(!pg)("column names over 63 bytes on PostgreSQL", () => {
  test("an output field and an input field with such a name read back as written", async () => {
    const db = new PgDb(await pg!.createDatabase(), { max: 2 });
    opened.push(db);
    const registry = new OutputRegistry({ input: z.object({ [LONG]: z.string() }), review: z.object({ [LONG]: z.string(), n: z.number() }) });
    await db.ensureOutputTables([registry.input, ...registry.all()]);
    await db.withTransaction("w", async (q) => {
      await writeOutputRow(q, registry.resolve("review"), { runId: "r1", nodeId: "a", iteration: 0 }, { [LONG]: "high", n: 1 });
      await writeInput(q, registry, "r1", { [LONG]: "in" });
    });
    const snapshot = await loadOutputs(db, registry, "r1");
    expect(snapshot.review?.[0]?.[LONG]).toBe("high");
    expect(snapshot.review?.[0]?.n).toBe(1);
    expect(((await loadInput(db, registry, "r1")) as Record<string, unknown>)[LONG]).toBe("in");
  });
});
