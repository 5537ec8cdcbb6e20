/**
 * The delta encoding: an ordered list of ops, each addressing an element by its path of child
 * indices from the root, valid at the moment the op applies. The op kinds live here and only here.
 */
import { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import { treeSchemas } from "./tree.ts";

function buildOpSchemas() {
  const { PropValueSchema, XmlElementSchema, XmlNameSchema } = treeSchemas();
  const IndexSchema = z.number().int().nonnegative();
  const PathSchema = z.array(IndexSchema);
  const FrameOpSchema = z.discriminatedUnion("op", [
    /** Add or change prop `name` of the element at `path`; a new prop goes last. */
    z.strictObject({ op: z.literal("set"), path: PathSchema, name: XmlNameSchema, value: PropValueSchema }),
    /** Remove prop `name` of the element at `path`, or with no `name` the element itself. */
    z.strictObject({ op: z.literal("remove"), path: PathSchema, name: XmlNameSchema.optional() }),
    /** Insert `node` as child `index` of the element at `path`. */
    z.strictObject({ op: z.literal("insert"), path: PathSchema, index: IndexSchema, node: XmlElementSchema }),
  ]);
  return { FrameOpSchema, FrameDeltaSchema: z.array(FrameOpSchema) };
}

let opSchemasBuilt: ReturnType<typeof buildOpSchemas> | undefined;
/**
 * The delta's Zod schemas (one op, a delta), built on first use: only a delta read back from
 * outside is checked against them, and building them is ~2 ms of every cold start.
 */
export function opSchemas(): ReturnType<typeof buildOpSchemas> {
  opSchemasBuilt ??= buildOpSchemas();
  return opSchemasBuilt;
}

export type FrameOp = z.infer<ReturnType<typeof opSchemas>["FrameOpSchema"]>;
export type FrameOpKind = FrameOp["op"];
export type FrameDelta = FrameOp[];

export const corrupt = (message: string, cause?: unknown) => new SmithersError("FRAME_CORRUPT", message, cause === undefined ? {} : { cause });

/** The delta as validated plain data; FRAME_CORRUPT naming the first bad op otherwise. */
export function parseDelta(delta: unknown): FrameDelta {
  const result = opSchemas().FrameDeltaSchema.safeParse(delta);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` at ${issue.path.join(".")}` : "";
  throw corrupt(`Frame delta is malformed${where}: ${issue?.message ?? "invalid"}`, result.error);
}

/**
 * The delta as compact JSON text.
 * @example encodeDeltaJson([{ op: "set", path: [3], name: "state", value: "running" }]) // '[{"op":"set","path":[3],"name":"state","value":"running"}]'
 */
export function encodeDeltaJson(delta: FrameDelta): string {
  return JSON.stringify(delta);
}

/**
 * The delta a JSON text holds, validated; FRAME_CORRUPT when the text is not JSON or not a delta.
 * @example decodeDeltaJson('[{"op":"remove","path":[0,2]}]') // [{ op: "remove", path: [0, 2] }]
 */
export function decodeDeltaJson(text: string): FrameDelta {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (cause) {
    throw corrupt(`Frame delta is not JSON: ${(cause as Error).message}`, cause);
  }
  return parseDelta(data);
}
