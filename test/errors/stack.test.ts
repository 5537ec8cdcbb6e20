import { describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import {
  errorSummaryJson,
  errorToJson,
  firstUserFrame,
  relativeFrame,
  SmithersError,
  sourceFileOf,
  STACK_LIMITS,
  storedStack,
  userStack,
} from "../../src/errors/index.ts";

const root = resolve(import.meta.dir, "../..");
const src = (file: string) => join(root, "src", file);
const author = "/home/ana/project/workflows/review.tsx";

/** A stack text as Bun writes it: a header line, then `    at …` frames. */
const stackText = (...frames: string[]) => ["Error: boom", ...frames.map((f) => `    at ${f}`)].join("\n");

/** An error made in "the engine": its stack names only this package's src/. */
function engineError(code: "INVALID_OUTPUT" | "TASK_FAILED", message: string, cause?: unknown) {
  const error = new SmithersError(code, message, cause === undefined ? {} : { cause });
  error.stack = stackText(`checkedOutput (${src("engine/attempt/attempt.ts")}:330:11)`, `validated (${src("engine/attempt/attempt.ts")}:318:5)`);
  return error;
}

describe("userStack", () => {
  test("keeps the author's frames in order and counts the internal ones (package src, node_modules, native, node:)", () => {
    const stack = stackText(
      `parse (${join(root, "node_modules/zod/index.js")}:10:3)`,
      `parseTotal (${author}:17:38)`,
      `<anonymous> (${author}:26:25)`,
      `async produce (${src("engine/attempt/attempt.ts")}:149:30)`,
      "processTicksAndRejections (native:7:39)",
      "node:internal/process/task_queues:95:5",
    );
    expect(userStack(stack)).toEqual([`at parseTotal (${author}:17:38)`, `at <anonymous> (${author}:26:25)`, "… 4 internal frames"]);
  });

  test("reads frames given as file:// URLs and frames without a function name", () => {
    expect(userStack(stackText(`file://${author}:3:1`, `run (${src("engine/run/run.ts")}:1:1)`))).toEqual([`at file://${author}:3:1`, "… 1 internal frame"]);
  });

  test("an error with no frame in the author's files keeps no stack: none is invented", () => {
    expect(userStack(engineError("INVALID_OUTPUT", "bad").stack)).toBeUndefined();
    expect(userStack("Error: no frames at all")).toBeUndefined();
    expect(userStack(undefined)).toBeUndefined();
  });

  test("is bounded: at most STACK_LIMITS.frames frames within STACK_LIMITS.chars, and says how many more there were", () => {
    const deep = Array.from({ length: 40 }, (_, i) => `f${i} (${author}:${i + 1}:1)`);
    const kept = userStack(stackText(...deep, `run (${src("engine/run/run.ts")}:1:1)`))!;
    expect(kept.length).toBe(STACK_LIMITS.frames + 1);
    expect(kept.at(-1)).toBe(`… ${40 - STACK_LIMITS.frames} more frames and 1 internal frame`);
    const long = Array.from({ length: 10 }, (_, i) => `${"x".repeat(2_000)}${i} (${author}:${i + 1}:1)`);
    const cut = userStack(stackText(...long))!;
    expect(cut.join("\n").length).toBeLessThanOrEqual(STACK_LIMITS.chars + 40);
    expect(cut.every((f) => f.length <= STACK_LIMITS.frameChars + 1)).toBe(true);
  });
});

describe("errorToJson", () => {
  test("an error thrown in the author's code keeps its stack; the TASK_FAILED the engine wraps it in keeps none", () => {
    const thrown = new Error("not a number");
    thrown.stack = stackText(`parseTotal (${author}:17:38)`, `async produce (${src("engine/attempt/attempt.ts")}:149:30)`);
    const json = errorToJson(engineError("TASK_FAILED", 'Task "t" failed: not a number', thrown));
    expect(json.stack).toBeUndefined();
    expect((json.cause as { stack: string[] }).stack).toEqual([`at parseTotal (${author}:17:38)`, "… 1 internal frame"]);
    expect(storedStack(json)).toEqual([`at parseTotal (${author}:17:38)`, "… 1 internal frame"]);
  });

  test("a schema check's error (made by the engine) stores no stack", () => {
    const json = errorToJson(engineError("INVALID_OUTPUT", "does not match its schema"));
    expect(JSON.stringify(json)).not.toContain('"stack"');
    expect(storedStack(json)).toBeUndefined();
  });

  test("a cause chain keeps a short stack per cause, and at most STACK_LIMITS.stacks of them", () => {
    let error: Error | undefined;
    for (let level = 7; level >= 0; level--) {
      const next: Error = new Error(`level ${level}`, error === undefined ? undefined : { cause: error });
      next.stack = stackText(...Array.from({ length: 20 }, (_, i) => `f${level}_${i} (${author}:${i + 1}:1)`));
      error = next;
    }
    const chain: { stack?: string[] }[] = [];
    for (let at = errorToJson(error) as { stack?: string[]; cause?: unknown }; at; at = at.cause as typeof at) chain.push(at);
    expect(chain.map((e) => e.stack?.length ?? 0)).toEqual([
      STACK_LIMITS.frames + 1,
      ...Array.from({ length: STACK_LIMITS.stacks - 1 }, () => STACK_LIMITS.causeFrames + 1),
      ...Array.from({ length: chain.length - STACK_LIMITS.stacks }, () => 0),
    ]);
  });

  test("the summary (run row, events) carries no stack", () => {
    const thrown = new Error("x");
    thrown.stack = stackText(`f (${author}:1:1)`);
    expect(errorToJson(thrown).stack).toBeDefined();
    expect(errorSummaryJson(thrown)).toEqual({ name: "Error", message: "x" });
  });
});

describe("firstUserFrame", () => {
  test("is the first frame of the first stack along the chain, its path relative to cwd", () => {
    const stored = { code: "TASK_FAILED", cause: { stack: [`at parseTotal (${author}:17:38)`, "… 3 internal frames"] } };
    expect(firstUserFrame(stored, "/home/ana/project")).toBe("at workflows/review.tsx:17:38");
    expect(firstUserFrame(stored, "/elsewhere")).toBe(`at ${author}:17:38`);
    expect(firstUserFrame({ code: "INVALID_OUTPUT" }, "/home/ana/project")).toBeUndefined();
  });

  test("relativeFrame shortens a frame's path under cwd and leaves the rest of the line", () => {
    expect(relativeFrame(`at parseTotal (${author}:17:38)`, "/home/ana/project")).toBe("at parseTotal (workflows/review.tsx:17:38)");
    expect(relativeFrame(`at file://${author}:17:38`, "/home/ana/project")).toBe("at workflows/review.tsx:17:38");
    expect(relativeFrame("… 3 internal frames", "/home/ana/project")).toBe("… 3 internal frames");
  });
});

describe("sourceFileOf", () => {
  test("names the file of the error's first frame: the module that made it", () => {
    expect(sourceFileOf(new Error("here"), "fallback")).toBe(import.meta.path);
  });

  test("takes a frame's source-mapped file as the stack names it, as a bundled module's frames do", () => {
    const bundled = new Error("from the bundle");
    bundled.stack = stackText(`r (${src("engine/workflow/workflow.ts")}:61:9)`, `/app/dist/bundle/chunk-1.js:1:2`);
    expect(sourceFileOf(bundled, "/app/dist/bundle/chunk-1.js")).toBe(src("engine/workflow/workflow.ts"));
  });

  test("gives the fallback when the stack names no file", () => {
    const native = new Error("native only");
    native.stack = stackText("forEach (native)", "processTicksAndRejections (node:internal/process/task_queues:95:5)");
    expect(sourceFileOf(native, "/fallback.ts")).toBe("/fallback.ts");
  });
});
