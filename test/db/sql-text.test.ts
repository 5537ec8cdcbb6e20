import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { insertSql, sqlNames } from "../../src/db/adapters/shared.ts";
import { smithersAttempts } from "../../src/db/internal-schema.ts";

const DB = resolve(import.meta.dir, "../../src/db");

describe("sqlNames", () => {
  test("quotes the table name and each column's SQL name under its field key", () => {
    const t = sqliteTable("things", { runId: text("run_id"), count: integer("n_total") });
    const n = sqlNames(t);
    expect([n.$table, n.runId, n.count]).toEqual(['"things"', '"run_id"', '"n_total"']);
  });

  test("follows a column renamed in the table definition", () => {
    const renamed = sqliteTable("things", { runId: text("run_key") });
    expect(sqlNames(renamed).runId).toBe('"run_key"');
  });

  test("a field the table does not have is a type error", () => {
    const n = sqlNames(smithersAttempts);
    // @ts-expect-error: `_smithers_attempts` has no field `finishedAt` (it is `finishedAtMs`)
    expect(n.finishedAt).toBeUndefined();
    // @ts-expect-error: insertSql only takes the table's own field keys
    expect(() => insertSql(smithersAttempts, ["runId", "finishedAt"])).toThrow();
  });
});

describe("insertSql", () => {
  test("lists the given fields' columns with one placeholder each, in order", () => {
    expect(insertSql(smithersAttempts, ["runId", "attempt", "metaJson"])).toBe(
      'INSERT INTO "_smithers_attempts" ("run_id", "attempt", "meta_json") VALUES (?, ?, ?)',
    );
  });
});

describe("the db layer's SQL texts", () => {
  // Code reading output tables (output-tables.ts, snapshot.ts, history.ts' copies and deletes) is exempt: run_id, node_id and iteration are the fixed contract every output
  // table (custom ones too) carries, not names of internal-schema.ts.
  const EXEMPT = new Set(["internal-schema.ts", "output-tables.ts", "snapshot.ts", "history.ts"]);
  // The databases' own catalog names (PostgreSQL's, read by pg/ddl.ts's column report and schema-signature.ts's live columns;
  // SQLite's sqlite_master, read by ensure.ts for the tables a database has; pg/schema-check.ts's current_schema and split_part) are the server's contract, not names of internal-schema.ts.
  const CATALOG_NAMES = new Set([
    "sqlite_master",
    "pg_attribute",
    "pg_index",
    "format_type",
    "to_regclass",
    "pg_advisory_xact_lock",
    "pg_database_size",
    "current_database",
    "current_schema",
    "split_part",
    "statement_timeout",
    "txid_current",
    "txid_status",
    "search_path",
    "pg_extension",
    "pg_trigger",
    "quote_ident",
  ]);

  test("name no internal table or column by hand: each is built from the Drizzle table objects", () => {
    const files = readdirSync(DB, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith(".ts") && !EXEMPT.has(e.name))
      .map((e) => join(e.parentPath, e.name));
    const handWritten: string[] = [];
    for (const file of files) {
      const where = file.slice(DB.length + 1);
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/(?:FROM|INTO|UPDATE|JOIN)\s+_smithers_\w+/g)) handWritten.push(`${where}: ${m[0]}`);
      // A statement template: what is left once its interpolations are removed names no column.
      for (const m of text.matchAll(/`[^`]*\b(?:SELECT|INSERT|UPDATE|DELETE)\b[^`]*`/g)) {
        const bare = m[0].replace(/\$\{[^}]*\}/g, "");
        for (const name of bare.matchAll(/\b[a-z]+(?:_[a-z]+)+\b/g)) if (!CATALOG_NAMES.has(name[0])) handWritten.push(`${where}: ${name[0]}`);
      }
    }
    expect(handWritten).toEqual([]);
  });
});
