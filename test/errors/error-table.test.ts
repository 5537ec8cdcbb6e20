/** The error table: each code's kind decides both the CLI's exit code and the server's HTTP status. */
import { describe, expect, test } from "bun:test";
import { main } from "../../src/cli/index.ts";
import { codeMatches, ERROR_KINDS, ERROR_TABLE, errorKind, exitCodeOf, SMITHERS_ERROR_CODES, SmithersError } from "../../src/errors/index.ts";
import { httpStatus } from "../../src/server/index.ts";
import { openSmithersDb } from "../../src/db/index.ts";
import { tempDbPath } from "../helpers.ts";

describe("ERROR_TABLE", () => {
  test("every code has a kind the front doors know and a one-line summary", () => {
    expect(SMITHERS_ERROR_CODES.length).toBeGreaterThan(80);
    for (const code of SMITHERS_ERROR_CODES) {
      const { kind, summary } = ERROR_TABLE[code];
      expect([code, kind in ERROR_KINDS]).toEqual([code, true]);
      expect([code, summary.length > 10 && !summary.includes("\n")]).toEqual([code, true]);
    }
  });

  test("a former name (aliasOf) names a code of the table, of the same kind, and only its own code matches it", () => {
    const aliases = Object.entries(ERROR_TABLE).filter(([, entry]) => "aliasOf" in entry) as [string, { kind: string; aliasOf: string }][];
    expect(aliases.map(([code, entry]) => [code, entry.aliasOf])).toEqual([["LOOP_MAX_REACHED", "RALPH_MAX_REACHED"]]);
    for (const [, entry] of aliases) expect(ERROR_TABLE[entry.aliasOf as keyof typeof ERROR_TABLE].kind).toBe(entry.kind as never);
    expect([codeMatches("RALPH_MAX_REACHED", "LOOP_MAX_REACHED"), codeMatches("LOOP_MAX_REACHED", "RALPH_MAX_REACHED")]).toEqual([true, true]);
    expect([codeMatches("RALPH_MAX_REACHED", "TASK_FAILED"), codeMatches("MY_CODE", "MY_CODE"), codeMatches("MY_CODE", "OTHER")]).toEqual([false, true, false]);
  });

  test("the exit code and the HTTP status of every code are its kind's", () => {
    for (const code of SMITHERS_ERROR_CODES) {
      const kind = ERROR_KINDS[errorKind(code)];
      expect([code, exitCodeOf(code), httpStatus(new SmithersError(code, "x"))]).toEqual([code, kind.exit, kind.http]);
    }
  });

  test("a caller's mistake (4xx) or a wrong set-up is exit 2; a failed run or an internal failure is exit 1 and a 5xx", () => {
    for (const code of SMITHERS_ERROR_CODES) {
      const status = httpStatus(new SmithersError(code, "x"));
      expect([code, exitCodeOf(code) === 2]).toEqual([code, (status >= 400 && status < 500) || errorKind(code) === "environment"]);
    }
    expect(httpStatus(new Error("plain"))).toBe(500);
  });

  test("the CLI ends with the kind's exit code: an unknown cron schedule is not-found (exit 2), as GET on the server is 404", async () => {
    const db = tempDbPath();
    await openSmithersDb(db).close();
    const err: string[] = [];
    const code = await main(["cron", "rm", "nope", "--db", db], { out: () => undefined, err: (l) => err.push(l) });
    expect([code, err.join("\n")]).toEqual([2, expect.stringContaining("CRON_NOT_FOUND")]);
    expect(httpStatus(new SmithersError("CRON_NOT_FOUND", "x"))).toBe(404);
  });
});
