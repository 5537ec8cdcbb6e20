/**
 * Code pinning: what a run records of the code it runs, so a resume under changed code is
 * noticed. The workflow hash covers the workflow's file and every local module it imports,
 * transitively (not node_modules); a node's definition signature covers what the node does
 * (its mode, prompt, compute body, agents, output schema, retry and timeout settings).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, relative, resolve } from "node:path";
import type { z } from "zod";
import type { Agent } from "../../agents/index.ts";
import type { PlanTask } from "../../jsx/index.ts";
import { canonicalJson, sha256Hex } from "../../json/index.ts";
import { definitionText } from "../../schema/index.ts";

/** The code hash of the workflow at `path`; undefined when its file is gone or cannot be read (nothing to pin to). */
export function codeHashOf(path: string): string | undefined {
  try {
    return workflowCodeHash(path)?.hash;
  } catch {
    return undefined;
  }
}

const SCANNED: Record<string, "ts" | "tsx" | "js" | "jsx"> = {
  ".ts": "ts",
  ".mts": "ts",
  ".cts": "ts",
  ".tsx": "tsx",
  ".js": "js",
  ".mjs": "js",
  ".cjs": "js",
  ".jsx": "jsx",
};

/**
 * Whether `text` has a string literal that may name a local module: one starting with `./`, `../`
 * or `/` (or with an escape). Where the text has none, it imports no local module, and the
 * transpiler (some 0.5 ms of a first run: making one, scanning with it) is not needed to say so.
 * Searched for as plain text (a quote, then `.` or `/` or a backslash): a regular expression's
 * first use in a process compiles it, which costs a first run more than these searches.
 */
function maybeImportsLocal(text: string): boolean {
  for (const quote of ['"', "'", "`"]) {
    for (const start of [".", "/", "\\"]) {
      for (let at = text.indexOf(quote + start); at >= 0; at = text.indexOf(quote + start, at + 1)) {
        if (start !== "." || text.startsWith("/", at + 2) || text.startsWith("./", at + 2)) return true;
      }
    }
  }
  return false;
}

const transpilers = new Map<string, Bun.Transpiler>();
function importsOf(file: string, text: string): string[] {
  const ext = extname(file);
  if (ext === ".mdx" || ext === ".md") return [...text.matchAll(/^\s*import\s[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
  const loader = SCANNED[ext];
  if (!loader || !maybeImportsLocal(text)) return [];
  let t = transpilers.get(loader);
  if (!t) transpilers.set(loader, (t = new Bun.Transpiler({ loader })));
  try {
    return t.scanImports(text).map((i) => i.path);
  } catch {
    return []; // a file that does not parse still counts by its bytes; loading it reports the error
  }
}

/** Smithers' own sources: a workflow that imports them by path (this repository's examples) imports a library, not its code. */
const LIBRARY_DIR = `${resolve(import.meta.dir, "../..")}/`; // src/ (this file is src/engine/workflow/code-pin.ts)

/**
 * A local module `specifier` names from `fromFile`, or undefined (a package, Smithers itself, a
 * builtin, or not found). Only paths are local: a bare specifier names a package, and is not
 * resolved at all (a failed resolution walks every node_modules up to the root).
 */
function localModule(specifier: string, fromFile: string): string | undefined {
  if (!/^(\.{1,2}\/|\/)/.test(specifier)) return undefined;
  let found: string;
  try {
    found = Bun.resolveSync(specifier, dirname(fromFile));
  } catch {
    return undefined;
  }
  if (found.includes("/node_modules/") || found.startsWith(LIBRARY_DIR) || !existsSync(found)) return undefined;
  return found;
}

export type CodeHash = {
  /** SHA-256 over each file's path (relative to the entry's directory) and contents, in path order. */
  hash: string;
  /** The files it covers, absolute, entry first. */
  files: string[];
};

/**
 * The hash of a workflow's code: its file and the local modules it imports (followed through
 * imports of imports; `.mdx` prompts included). The same code in another directory hashes the same.
 * Undefined when the workflow's file is gone.
 * @example workflowCodeHash("workflows/review.tsx")?.hash // "3f1c…"
 */
export function workflowCodeHash(entry: string): CodeHash | undefined {
  const root = resolve(entry);
  // A process that starts many runs of one workflow hashes it once, until one of its files changes.
  const known = hashed.get(root);
  if (known?.stamps.every(([file, stamp]) => stampOf(file) === stamp)) return known.result;
  // Taken before the file is read: a change made meanwhile shows as a new stamp at the next look.
  const rootStamp = stampOf(root);
  if (rootStamp === "") return undefined;
  const result = hashCode(root);
  hashed.set(root, { result, stamps: result.files.map((file) => [file, file === root ? rootStamp : stampOf(file)]) });
  return result;
}

/** A file's modification time and size ("" when it is gone): what tells a cached hash is stale. */
function stampOf(file: string): string {
  try {
    const s = statSync(file);
    return `${s.mtimeMs}:${s.size}`;
  } catch {
    return "";
  }
}

const hashed = new Map<string, { result: CodeHash; stamps: [string, string][] }>();

function hashCode(root: string): CodeHash {
  const base = dirname(root);
  const seen = new Set([root]);
  const queue = [root];
  const parts: [string, string][] = [];
  while (queue.length > 0) {
    const file = queue.shift()!;
    let bytes: Buffer;
    try {
      bytes = readFileSync(file);
    } catch {
      continue;
    }
    parts.push([relative(base, file), sha256Hex(bytes)]);
    for (const specifier of importsOf(file, bytes.toString("utf8"))) {
      const local = localModule(specifier, file);
      if (local && !seen.has(local)) {
        seen.add(local);
        queue.push(local);
      }
    }
  }
  parts.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const hasher = new Bun.CryptoHasher("sha256");
  for (const [path, digest] of parts) hasher.update(`${path}\u0000${digest}\n`);
  return { hash: hasher.digest("hex"), files: [...seen] };
}

/**
 * The text of an output schema, once per schema object: its definition written with keys in order
 * (definitionText). Not zod's JSON Schema: making
 * that costs some 2 ms the first time in a process (a third of a one-task run), and a change
 * detector needs only to differ where the definition does (a default, a refinement's body, a
 * check's bound: what the JSON Schema leaves out counts here too).
 */
const schemaTexts = new WeakMap<object, string>();
function schemaText(schema: z.ZodType | undefined): string | null {
  if (!schema) return null;
  let text = schemaTexts.get(schema);
  if (text === undefined) {
    try {
      text = definitionText(schema);
    } catch {
      text = "(unrepresentable)";
    }
    schemaTexts.set(schema, text);
  }
  return text;
}

function valueText(value: unknown): string | null {
  if (value === undefined) return null;
  try {
    return canonicalJson(value, "loose");
  } catch {
    return "(unserializable)";
  }
}

/**
 * A node's definition signature (16 hex digits): the same for the same definition rendered from
 * the same code and data, different when its prompt, body, agents, schema or settings change.
 * Computed at every attempt's start, so kept cheap: the fields joined, hashed with Bun.hash (a
 * change detector, not a digest anyone trusts); the schema's text is made once per schema.
 */
export function definitionSignature(task: PlanTask, outputTable: string): string {
  const agents = task.agent === undefined ? "" : (Array.isArray(task.agent) ? task.agent : [task.agent as Agent]).map((a) => a.id ?? "(agent)").join(",");
  const text = [
    task.mode,
    outputTable,
    schemaText(task.outputSchema) ?? "",
    task.prompt ?? "",
    task.compute ? String(task.compute) : "",
    valueText(task.staticValue) ?? "",
    agents,
    task.retries ?? "",
    task.timeoutMs ?? "",
    task.skip ? 1 : 0,
    task.continueOnFail ? 1 : 0,
    task.dependsOn.join(","),
    task.approval ? valueText(task.approval) : "",
    task.human ? valueText(task.human) : "",
    task.event ? valueText({ ...task.event, payloadSchema: schemaText(task.event.payloadSchema) }) : "",
  ].join("\u0000");
  return Bun.hash(text).toString(16).padStart(16, "0");
}
