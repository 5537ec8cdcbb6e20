import { expect, test } from "bun:test";
import { errorJsonText, ERROR_JSON_LIMITS, SmithersError } from "../../src/errors/index.ts";

test("errorJsonText stays within totalChars when its message and fields are all escapes", () => {
  const e = new Error("\u0001".repeat(5000)) as Error & Record<string, string>;
  for (let i = 0; i < 50; i++) e[`f${i}`] = "\u0001".repeat(2000);
  const text = errorJsonText(e);
  expect(text.length).toBeLessThanOrEqual(ERROR_JSON_LIMITS.totalChars);
});
test("same for a SmithersError (the task error path)", () => {
  const details: Record<string, string> = {};
  for (let i = 0; i < 50; i++) details[`f${i}`] = "\u0001".repeat(2000);
  const text = errorJsonText(new SmithersError("TASK_FAILED", "\u0001".repeat(5000), details));
  expect(text.length).toBeLessThanOrEqual(ERROR_JSON_LIMITS.totalChars);
});
