import { describe, expect, test } from "bun:test";
import { parseArgs as nodeParseArgs } from "node:util";
import { parseArgs } from "../../src/cli/parse-args.ts";

/** Options of the shapes the commands declare: string and boolean, with and without a letter, repeatable. */
const OPTIONS = {
  db: { type: "string" },
  resume: { type: "boolean" },
  detach: { type: "boolean", short: "d" },
  frame: { type: "string", short: "f" },
  limit: { type: "string", multiple: true },
  follow: { type: "boolean", short: "F", multiple: true },
} as const;

/** Arguments of every kind the parser tells apart: values, groups, inline values, unknown names, ambiguous values, the terminator. */
const ARGS = [
  "--db",
  "--db=x",
  "--db=",
  "--db=-x",
  "--resume",
  "--resume=1",
  "-d",
  "-f",
  "-fx",
  "-df",
  "-fd",
  "-dF",
  "-dx",
  "-dfx",
  "-Fd",
  "-x",
  "-d=1",
  "--nope",
  "--limit",
  "--limit=a",
  "-F",
  "--",
  "-",
  "a",
  "-1",
  "---x",
  "--=",
  "--=a=b",
  "--__proto__",
  "--no-resume",
  'q"',
];

/** What a parse comes to: its values and positionals, or its error's kind, code and message. */
function outcome(parse: () => { values: object; positionals: string[] }): unknown {
  try {
    const { values, positionals } = parse();
    return { prototype: Object.getPrototypeOf(values), values: { ...values }, positionals };
  } catch (error) {
    const { name, message, code } = error as TypeError & { code?: string };
    return { name, message, code };
  }
}

/** Every sequence of `length` arguments drawn from ARGS. */
function* sequences(length: number): Generator<string[]> {
  if (length === 0) {
    yield [];
    return;
  }
  for (const rest of sequences(length - 1)) for (const arg of ARGS) yield [...rest, arg];
}

describe("parseArgs", () => {
  test("gives node:util's values, positionals and errors (code and message) for every sequence of up to three arguments", () => {
    let compared = 0;
    const differ: unknown[] = [];
    for (let length = 0; length <= 3; length++) {
      for (const args of sequences(length)) {
        for (const allowPositionals of [false, true]) {
          const ours = outcome(() => parseArgs({ args, options: OPTIONS, allowPositionals }));
          const node = outcome(() => nodeParseArgs({ args, options: OPTIONS, allowPositionals }));
          compared++;
          if (!Bun.deepEquals(ours, node, true) && differ.length < 5) differ.push({ args, allowPositionals, ours, node });
        }
      }
    }
    expect(differ).toEqual([]);
    expect(compared).toBe(2 * (1 + ARGS.length + ARGS.length ** 2 + ARGS.length ** 3));
  });

  test("refuses the forms it does not implement instead of parsing them another way", () => {
    const args = ["--db", "x"];
    expect(() => parseArgs({ args, options: OPTIONS, strict: false as true })).toThrow("parses strictly");
    expect(() => parseArgs({ args, options: OPTIONS, tokens: true as false })).toThrow("parses strictly");
  });
});
