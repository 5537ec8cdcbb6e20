/**
 * The frame tree: elements with an XML name, ordered props holding JSON values, and child
 * elements. Every frame encoding (XML, delta, hash) carries exactly this shape.
 */
import { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import { FRAME_MAX_DEPTH } from "./constants.ts";

// Parsers and Zod records treat these keys as the prototype, so they could never round-trip.
const RESERVED_NAMES: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

// Names seen valid: a frame repeats a few tags and prop names thousands of times. Bounded, so a
// run that invents names (props of a custom element) cannot grow it without end.
const KNOWN_NAMES = new Set<string>();
const KNOWN_NAMES_MAX = 4_096;

/** A tag or prop name: an ASCII letter or `_`, then letters, digits, `_ . -`. */
export function isXmlName(name: string): boolean {
  if (KNOWN_NAMES.has(name)) return true;
  if (!hasXmlNameShape(name) || RESERVED_NAMES.has(name)) return false;
  if (KNOWN_NAMES.size < KNOWN_NAMES_MAX) KNOWN_NAMES.add(name);
  return true;
}

/**
 * `[A-Za-z_][A-Za-z0-9_.-]*`, checked character by character: a regular expression is compiled at
 * its first use in a process, which costs a first run's first frame more than this loop.
 */
function hasXmlNameShape(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const start = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f; // A-Z a-z _
    if (!start && (i === 0 || !((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d))) return false; // 0-9 . -
  }
  return true;
}

function buildTreeSchemas() {
  const XmlNameSchema = z.string().refine(isXmlName, "must be an XML name ([A-Za-z_][A-Za-z0-9_.-]*)");
  /** Any JSON value: string, finite number, boolean, null, array or object. */
  const PropValueSchema = z.json();
  const XmlElementSchema = z.strictObject({
    tag: XmlNameSchema,
    props: z.record(XmlNameSchema, PropValueSchema),
    get children(): z.ZodArray<typeof XmlElementSchema> {
      return z.array(XmlElementSchema);
    },
  });
  return { XmlNameSchema, PropValueSchema, XmlElementSchema };
}

let treeSchemasBuilt: ReturnType<typeof buildTreeSchemas> | undefined;
/**
 * The frame tree's Zod schemas (an XML name, a prop value, an element), built on first use: a
 * run writes frames without validating one, and building them is ~1 ms of every cold start.
 */
export function treeSchemas(): ReturnType<typeof buildTreeSchemas> {
  treeSchemasBuilt ??= buildTreeSchemas();
  return treeSchemasBuilt;
}

export type PropValue = z.infer<ReturnType<typeof treeSchemas>["PropValueSchema"]>;
export type XmlElement = z.infer<ReturnType<typeof treeSchemas>["XmlElementSchema"]>;

const invalid = (message: string) => new SmithersError("INVALID_FRAME", message);

export function checkName(name: string, what: "tag" | "prop"): void {
  if (!isXmlName(name)) throw invalid(`Frame ${what} name ${JSON.stringify(name)} is not an XML name`);
}

function valueProblem(value: unknown): string | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : `${value} is not a JSON number`;
    case "object": {
      if (value === null) return undefined;
      if (Array.isArray(value)) {
        for (const item of value) {
          const problem = valueProblem(item);
          if (problem) return problem;
        }
        return undefined;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return "only plain objects are JSON values";
      for (const [key, item] of Object.entries(value)) {
        if (key === "__proto__") return "the key __proto__ does not survive JSON parsing";
        const problem = valueProblem(item);
        if (problem) return problem;
      }
      return undefined;
    }
    default:
      return `a ${typeof value} is not a JSON value`;
  }
}

export function checkValue(value: unknown, name: string): asserts value is PropValue {
  const problem = valueProblem(value);
  if (problem) throw invalid(`Frame prop ${name}: ${problem}`);
}

/**
 * Throws INVALID_FRAME unless every name and value in the tree can be encoded and it is no
 * deeper than FRAME_MAX_DEPTH; `depth` is the depth `el` sits at (the root is 1).
 */
export function checkTree(el: XmlElement, depth = 1): void {
  if (depth > FRAME_MAX_DEPTH) throw invalid(`Frame is nested deeper than ${FRAME_MAX_DEPTH} elements`);
  checkName(el.tag, "tag");
  const props = el.props;
  for (const name of Object.keys(props)) {
    checkName(name, "prop");
    checkValue(props[name], name);
  }
  for (const child of el.children) checkTree(child, depth + 1);
}

/** Equality of JSON values as written: key order counts, because it shows in the XML. */
export function sameValue(a: PropValue, b: PropValue): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => sameValue(item, b[i]!));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((key, i) => key === kb[i] && sameValue(a[key]!, b[key]!));
}

/** A deep, frozen copy of a value, so a holder can share it without fearing later mutation. */
export function frozenCopy(value: PropValue): PropValue {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return Object.freeze(value.map(frozenCopy)) as PropValue[];
  const out: Record<string, PropValue> = {};
  for (const [key, item] of Object.entries(value)) out[key] = frozenCopy(item!);
  return Object.freeze(out);
}
