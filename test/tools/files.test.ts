import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { edit, getDefinedToolMetadata, read, tools, write } from "../../src/tools/index.ts";
import { rejection } from "../helpers.ts";
import { callIn, closeScopes, tempRoot, toolScope } from "./helpers.ts";

afterEach(closeScopes);

const PATCH = `--- a/greet.ts
+++ b/greet.ts
@@ -1,4 +1,5 @@
 export function greet(name: string) {
-  return "hi " + name;
+  const text = "hello " + name;
+  return text;
 }
 // end
`;

/** A scope whose root holds greet.ts, beside a directory outside it holding secret.txt. */
function scene() {
  const scope = toolScope();
  const root = scope.ctx.rootDir;
  writeFileSync(join(root, "greet.ts"), 'export function greet(name: string) {\n  return "hi " + name;\n}\n// end\n');
  const outside = tempRoot();
  writeFileSync(join(outside, "secret.txt"), "secret\n");
  symlinkSync(outside, join(root, "link"));
  return { ...scope, root, outside };
}

describe("read", () => {
  test("returns a file's text by a path relative to the root or absolute inside it", async () => {
    const { ctx, root } = scene();
    expect(await callIn(ctx, read, { path: "greet.ts" })).toStartWith("export function greet");
    expect(await callIn(ctx, read, { path: join(root, "greet.ts") })).toStartWith("export function greet");
  });

  test("a file larger than maxOutputBytes is refused with TOOL_OUTPUT_TOO_LARGE", async () => {
    const { ctx } = scene();
    expect((await rejection(callIn({ ...ctx, maxOutputBytes: 10 }, read, { path: "greet.ts" }))).code).toBe("TOOL_OUTPUT_TOO_LARGE");
  });

  test("a missing file or a directory fails with TOOL_FAILED", async () => {
    const { ctx } = scene();
    expect((await rejection(callIn(ctx, read, { path: "nope.ts" }))).code).toBe("TOOL_FAILED");
    expect((await rejection(callIn(ctx, read, { path: "." }))).code).toBe("TOOL_FAILED");
  });
});

describe("write", () => {
  test("writes the content, creating parent directories, and returns ok", async () => {
    const { ctx, root } = scene();
    expect(await callIn(ctx, write, { path: "a/b/c.txt", content: "deep\n" })).toBe("ok");
    expect(readFileSync(join(root, "a/b/c.txt"), "utf8")).toBe("deep\n");
  });

  test("follows a symlink that stays inside the root", async () => {
    const { ctx, root } = scene();
    mkdirSync(join(root, "real"));
    symlinkSync(join(root, "real"), join(root, "alias"));
    await callIn(ctx, write, { path: "alias/x.txt", content: "x" });
    expect(readFileSync(join(root, "real/x.txt"), "utf8")).toBe("x");
  });

  test("refuses a dangling symlink whose target is outside the root, creating nothing", async () => {
    const { ctx, root, outside } = scene();
    symlinkSync(join(outside, "planted.txt"), join(root, "dangling"));
    expect((await rejection(callIn(ctx, write, { path: "dangling", content: "x" }))).code).toBe("TOOL_PATH_OUTSIDE_ROOT");
    expect(existsSync(join(outside, "planted.txt"))).toBe(false);
  });

  test("content over maxOutputBytes is refused with TOOL_INVALID_INPUT", async () => {
    const { ctx, root } = scene();
    expect((await rejection(callIn({ ...ctx, maxOutputBytes: 3 }, write, { path: "big.txt", content: "four" }))).code).toBe("TOOL_INVALID_INPUT");
    expect(existsSync(join(root, "big.txt"))).toBe(false);
  });
});

describe("edit", () => {
  test("applies a unified diff to the file and returns ok", async () => {
    const { ctx, root } = scene();
    expect(await callIn(ctx, edit, { path: "greet.ts", patch: PATCH })).toBe("ok");
    expect(readFileSync(join(root, "greet.ts"), "utf8")).toBe(
      'export function greet(name: string) {\n  const text = "hello " + name;\n  return text;\n}\n// end\n',
    );
  });

  test("a patch whose context does not match fails with TOOL_FAILED and leaves the file as it was", async () => {
    const { ctx, root } = scene();
    const before = readFileSync(join(root, "greet.ts"), "utf8");
    const error = await rejection(callIn(ctx, edit, { path: "greet.ts", patch: PATCH.replace('"hi "', '"bye "') }));
    expect(error.code).toBe("TOOL_FAILED");
    expect(readFileSync(join(root, "greet.ts"), "utf8")).toBe(before);
  });

  test("text that is not a unified diff fails with TOOL_FAILED", async () => {
    const { ctx } = scene();
    expect((await rejection(callIn(ctx, edit, { path: "greet.ts", patch: "make it say hello" }))).code).toBe("TOOL_FAILED");
    expect((await rejection(callIn(ctx, edit, { path: "greet.ts", patch: "@@ -1,1 +1,1 @@\n-x\n+y\n?\n" }))).code).toBe("TOOL_FAILED");
  });

  test("a missing file fails with TOOL_FAILED", async () => {
    const { ctx } = scene();
    expect((await rejection(callIn(ctx, edit, { path: "gone.ts", patch: PATCH }))).code).toBe("TOOL_FAILED");
  });
});

describe("file tools confined to the root", () => {
  const escapes = (outside: string) => ({
    "a ../ path": `../${basename(outside)}/secret.txt`,
    "an absolute path outside": join(outside, "secret.txt"),
    "a symlink pointing outside": "link/secret.txt",
  });
  const calls = {
    read: (path: string) => [read, { path }] as const,
    write: (path: string) => [write, { path, content: "pwned\n" }] as const,
    edit: (path: string) => [edit, { path, patch: "--- a\n+++ b\n@@ -1 +1 @@\n-secret\n+pwned\n" }] as const,
  };
  for (const [name, make] of Object.entries(calls)) {
    test(`${name} refuses ../, an absolute path outside and a symlink outside with TOOL_PATH_OUTSIDE_ROOT, touching nothing`, async () => {
      const { ctx, outside } = scene();
      for (const path of Object.values(escapes(outside))) {
        const [tool, input] = make(path);
        expect({ path, code: (await rejection(callIn(ctx, tool, input))).code }).toEqual({ path, code: "TOOL_PATH_OUTSIDE_ROOT" });
      }
      expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("secret\n");
    });
  }

  test("the bundle holds the five built-ins; read and grep are pure, write, edit and bash are non-idempotent side effects", () => {
    expect(Object.keys(tools)).toEqual(["read", "write", "edit", "grep", "bash"]);
    expect(Object.values(tools).map((t) => getDefinedToolMetadata(t))).toEqual([
      { name: "read", sideEffect: false, idempotent: true },
      { name: "write", sideEffect: true, idempotent: false },
      { name: "edit", sideEffect: true, idempotent: false },
      { name: "grep", sideEffect: false, idempotent: true },
      { name: "bash", sideEffect: true, idempotent: false },
    ]);
  });
});
