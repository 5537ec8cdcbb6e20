/** The file tools: `read`, `write` and `edit`, confined to the context's root directory. */
import { dirname } from "node:path";
import { z } from "zod";
import { SmithersError, describeThrown } from "../errors/index.ts";
import { defineTool, lazySchema, type ToolCallContext } from "./define-tool.ts";
import { resolveInRoot } from "./sandbox.ts";

/** node:fs/promises, loaded on a file tool's first call: a process that calls none does not pay for loading it. */
const fsPromises = () => import("node:fs/promises");

const pathSchema = () => z.string().min(1).describe("File path, relative to the root directory or absolute inside it");
const readInput = lazySchema(() => z.object({ path: pathSchema() }));
const writeInput = lazySchema(() => z.object({ path: pathSchema(), content: z.string() }));
const editInput = lazySchema(() => z.object({ path: pathSchema(), patch: z.string().min(1) }));

/** Reads a file as UTF-8, refusing one larger than the output cap. */
async function readCapped(path: string, label: string, ctx: ToolCallContext): Promise<string> {
  const { readFile, stat } = await fsPromises();
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    throw new SmithersError("TOOL_FAILED", `Cannot read ${label}: ${describeThrown(error)}`, { path: label, cause: error });
  }
  if (!info.isFile()) throw new SmithersError("TOOL_FAILED", `${label} is not a file`, { path: label });
  if (info.size > ctx.maxOutputBytes) {
    throw new SmithersError("TOOL_OUTPUT_TOO_LARGE", `${label} is ${info.size} bytes, over the limit of ${ctx.maxOutputBytes}`, {
      path: label,
      bytes: info.size,
    });
  }
  return readFile(path, "utf8");
}

function refuseLarge(text: string, what: string, ctx: ToolCallContext): void {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > ctx.maxOutputBytes)
    throw new SmithersError("TOOL_INVALID_INPUT", `The ${what} is ${bytes} bytes, over the limit of ${ctx.maxOutputBytes}`, { bytes });
}

/**
 * Reads a text file inside the root directory. Input `{ path }`; returns the file's text.
 * A file larger than `maxOutputBytes` fails with TOOL_OUTPUT_TOO_LARGE.
 * @example
 * const agent = new ToolLoopAgent({ model, tools: { read } });
 */
export const read = defineTool({
  name: "read",
  description: "Read a UTF-8 text file. Paths are relative to the working directory.",
  get schema() {
    return readInput();
  },
  execute: (args, ctx) => readCapped(resolveInRoot(ctx.rootDir, args.path), args.path, ctx),
});

/**
 * Writes a text file inside the root directory, creating its parent directories. Input
 * `{ path, content }`; returns "ok". A side effect: journaled, replayed rather than run twice.
 * @example
 * const agent = new ToolLoopAgent({ model, tools: { read, write } });
 */
export const write = defineTool({
  name: "write",
  description: "Write a UTF-8 text file (replacing it if it exists), creating parent directories. Returns ok.",
  get schema() {
    return writeInput();
  },
  sideEffect: true,
  idempotent: false,
  async execute(args, ctx) {
    refuseLarge(args.content, "content", ctx);
    const path = resolveInRoot(ctx.rootDir, args.path);
    const { mkdir, writeFile } = await fsPromises();
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, args.content, "utf8");
    return "ok";
  },
});

/**
 * Applies a unified diff to an existing file inside the root directory (with the `diff`
 * package's applyPatch, which places hunks by their context). Input `{ path, patch }`; returns
 * "ok". A patch that does not fit the file fails with TOOL_FAILED and leaves the file as it was.
 * @example
 * const agent = new ToolLoopAgent({ model, tools: { read, edit } });
 */
export const edit = defineTool({
  name: "edit",
  description: "Apply a unified diff (---/+++ headers, @@ hunks) to an existing UTF-8 text file. Returns ok.",
  get schema() {
    return editInput();
  },
  sideEffect: true,
  idempotent: false,
  async execute(args, ctx) {
    refuseLarge(args.patch, "patch", ctx);
    const path = resolveInRoot(ctx.rootDir, args.path);
    const source = await readCapped(path, args.path, ctx);
    let patched: string | false;
    try {
      // applyPatch takes text without any hunk as an empty patch: that is a mistake here, not a no-op.
      const { applyPatch, parsePatch } = await import("diff"); // loaded on first use, not at start-up
      if (parsePatch(args.patch).every((file) => file.hunks.length === 0)) throw new Error("it has no @@ hunk");
      patched = applyPatch(source, args.patch);
    } catch (error) {
      throw new SmithersError("TOOL_FAILED", `The patch for ${args.path} cannot be read: ${describeThrown(error)}`, { path: args.path, cause: error });
    }
    if (patched === false)
      throw new SmithersError("TOOL_FAILED", `The patch does not apply to ${args.path}: its context lines do not match the file`, { path: args.path });
    await (await fsPromises()).writeFile(path, patched, "utf8");
    return "ok";
  },
});
