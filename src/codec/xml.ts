/**
 * The full (keyframe) encoding: one XML element per frame element, props as attributes in order.
 * Built and parsed with fast-xml-parser; decodeFrameXml(encodeFrameXml(t)) deep-equals t.
 */
import { XMLBuilder, XMLParser, XMLValidator } from "fast-xml-parser";
import { SmithersError } from "../errors/index.ts";
import { FRAME_MAX_DEPTH } from "./constants.ts";
import { decodePropValue, encodePropValue } from "./prop-text.ts";
import { checkName, checkValue, isXmlName, type PropValue, type XmlElement } from "./tree.ts";

const OPTIONS = {
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: "",
  parseAttributeValue: false,
  parseTagValue: false,
  trimValues: false,
  suppressEmptyNode: true,
  // The builder escapes & < > " ' in attributes; prop-text keeps every other character safe.
  processEntities: true,
  maxNestedTags: FRAME_MAX_DEPTH,
} as const;

// The parser renames names like `toString` to `__toString`, which is itself a valid name; a prefix no
// XML name can start with lets decode undo the renaming unambiguously.
const RENAMED = "\u0001";
// Both keep no state between calls (parse makes a fresh parser per document), so one of each serves all.
const builder = new XMLBuilder(OPTIONS);
const parser = new XMLParser({ ...OPTIONS, onDangerousProperty: (name: string) => RENAMED + name });

const ATTRS = ":@";
type Ordered = Record<string, unknown> & { [ATTRS]?: Record<string, string> };

const invalid = (message: string, cause?: unknown) => new SmithersError("INVALID_FRAME", message, cause === undefined ? {} : { cause });

function toOrdered(el: XmlElement, depth: number): Ordered {
  if (depth > FRAME_MAX_DEPTH) throw invalid(`Frame is nested deeper than ${FRAME_MAX_DEPTH} elements`);
  checkName(el.tag, "tag");
  const node: Ordered = { [el.tag]: el.children.map((c) => toOrdered(c, depth + 1)) };
  const names = Object.keys(el.props);
  if (names.length > 0) {
    const attrs: Record<string, string> = {};
    for (const name of names) {
      const value = el.props[name];
      checkName(name, "prop");
      checkValue(value, name);
      attrs[name] = encodePropValue(value);
    }
    node[ATTRS] = attrs;
  }
  return node;
}

function originalName(name: string, what: "tag" | "attribute"): string {
  const original = name.startsWith(RENAMED) ? name.slice(RENAMED.length) : name;
  if (!isXmlName(original)) throw invalid(`Frame XML ${what} name ${JSON.stringify(original)} is not allowed in a frame`);
  return original;
}

function fromOrdered(node: Ordered): XmlElement {
  const key = Object.keys(node).find((k) => k !== ATTRS);
  if (!key || key === "#text") throw invalid("Frame XML holds text where only elements are allowed");
  if (key.startsWith("?") || key.startsWith("!")) throw invalid(`Frame XML holds ${key} where only elements are allowed`);
  const props: Record<string, PropValue> = {};
  for (const [raw, text] of Object.entries(node[ATTRS] ?? {})) {
    const name = originalName(raw, "attribute");
    props[name] = decodePropValue(text, name);
  }
  return { tag: originalName(key, "tag"), props, children: (node[key] as Ordered[]).map(fromOrdered) };
}

/**
 * The frame as well-formed XML 1.0; throws INVALID_FRAME for a name that is not an XML name, a
 * value that is not JSON, or nesting deeper than FRAME_MAX_DEPTH.
 * @example encodeFrameXml({ tag: "task", props: { id: "a", retries: 2 }, children: [] }) // '<task id="a" retries="=2"/>'
 */
export function encodeFrameXml(root: XmlElement): string {
  return builder.build([toOrdered(root, 1)]) as string;
}

/**
 * The frame an XML text holds; INVALID_FRAME when the text is not well-formed, holds text content,
 * has other than one root, or carries a name or value no frame can have.
 * @example decodeFrameXml('<task id="a" retries="=2"/>') // { tag: "task", props: { id: "a", retries: 2 }, children: [] }
 */
export function decodeFrameXml(xml: string, options: { hashChecked?: boolean } = {}): XmlElement {
  // A caller that compares the result with a stored hash catches a damaged text anyway, so the
  // separate well-formedness pass (a third of the decode time) can be skipped.
  if (!options.hashChecked) {
    const verdict = XMLValidator.validate(xml);
    if (verdict !== true) throw invalid(`Frame XML is not well-formed: ${verdict.err.msg} (line ${verdict.err.line})`);
  }
  let parsed: Ordered[];
  try {
    parsed = parser.parse(xml) as Ordered[];
  } catch (cause) {
    throw invalid(`Frame XML does not parse: ${(cause as Error).message}`, cause);
  }
  // An XML declaration is the one thing besides the root an XML tool may reasonably write.
  const roots = parsed.filter((node) => !Object.hasOwn(node, "?xml"));
  if (roots.length !== 1) throw invalid(`Frame XML must have exactly one root element, found ${roots.length}`);
  return fromOrdered(roots[0]!);
}
