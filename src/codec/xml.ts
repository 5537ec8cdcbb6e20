/**
 * The full (keyframe) encoding: one XML element per frame element, props as attributes in order.
 * Written here (the text is the same as fast-xml-parser's builder gives, at several times its
 * speed: a keyframe of a large run is thousands of elements) and parsed with fast-xml-parser;
 * decodeFrameXml(encodeFrameXml(t)) deep-equals t.
 */
import type * as FastXml from "fast-xml-parser";
import { SmithersError } from "../errors/index.ts";
import { FRAME_MAX_DEPTH, XML_CHUNK_PARTS } from "./constants.ts";
import { decodePropValue, encodePropValue } from "./prop-text.ts";
import { checkName, checkValue, isXmlName, type PropValue, type XmlElement } from "./tree.ts";

/** fast-xml-parser's options for frame XML (the codec property test builds with them too, as the oracle of elementXml). */
export const FRAME_XML_OPTIONS = {
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
// fast-xml-parser is loaded on the first read of a keyframe: a process that only writes frames
// (a new run, `smithers up`) never needs it (~8 MB and ~15 ms of start-up).
let library: { parser: FastXml.XMLParser; validator: typeof FastXml.XMLValidator } | undefined;
function fastXml(): NonNullable<typeof library> {
  if (!library) {
    const { XMLParser, XMLValidator } = require("fast-xml-parser") as typeof FastXml;
    library = {
      parser: new XMLParser({ ...FRAME_XML_OPTIONS, onDangerousProperty: (name: string) => RENAMED + name }),
      validator: XMLValidator,
    };
  }
  return library;
}

const ATTRS = ":@";
type Ordered = Record<string, unknown> & { [ATTRS]?: Record<string, string> };

const invalid = (message: string, cause?: unknown) => new SmithersError("INVALID_FRAME", message, cause === undefined ? {} : { cause });

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
  return elementXml(root, false);
}

/**
 * An element-shaped tree: a frame, or LiveFrame's working copy, whose `texts` (when set) hold
 * encodePropValue of each prop, in the props' order.
 */
export type XmlShape = {
  readonly tag: string;
  readonly props: XmlElement["props"];
  readonly children: readonly XmlShape[];
  readonly texts?: readonly string[] | undefined;
};

/**
 * The builder's text for FRAME_XML_OPTIONS: the same escapes and self-closing tags. `checked`: the
 * tree's names, values and depth were checked already (a LiveFrame's), so they are not again.
 */
export function elementXml(root: XmlShape, checked: boolean): string {
  // Pieces joined a chunk at a time: a keyframe of a large run is a long text, built without a rope
  // per element and without an array of every piece (for 10,000 tasks, some 300,000 of them).
  const chunks: string[] = [];
  const parts: string[] = [];
  const write = (el: XmlShape, depth: number) => {
    if (parts.length >= XML_CHUNK_PARTS) {
      chunks.push(parts.join(""));
      parts.length = 0;
    }
    if (!checked) {
      if (depth > FRAME_MAX_DEPTH) throw invalid(`Frame is nested deeper than ${FRAME_MAX_DEPTH} elements`);
      checkName(el.tag, "tag");
    }
    parts.push("<", el.tag);
    const texts = checked ? el.texts : undefined;
    const names = Object.keys(el.props);
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      const value = el.props[name];
      if (!checked) {
        checkName(name, "prop");
        checkValue(value, name);
      }
      parts.push(" ", name, '="', escapeAttribute(texts ? texts[i]! : encodePropValue(value as PropValue)), '"');
    }
    if (el.children.length === 0) {
      parts.push("/>");
      return;
    }
    parts.push(">");
    for (const child of el.children) write(child, depth + 1);
    parts.push("</", el.tag, ">");
  };
  write(root, 1);
  if (chunks.length === 0) return parts.join("");
  chunks.push(parts.join(""));
  return chunks.join("");
}

const ATTRIBUTE_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
const ATTRIBUTE_SPECIAL = /[&<>"']/g;
const escapeAttribute = (text: string) => (ATTRIBUTE_SPECIAL.test(text) ? text.replace(ATTRIBUTE_SPECIAL, (ch) => ATTRIBUTE_ESCAPES[ch]!) : text);

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const SPACE = 0x20;
const QUOTE = 0x22;
const EQUALS = 0x3d;
const ENTITIES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'" };
const ENTITY = /&(?:amp|lt|gt|quot|apos);/g;
// In attribute text: a raw "<" is not XML, other "&"s and raw tabs and line ends are left to the parser.
const NOT_OWN_TEXT = /[<\t\n\r]|&(?!(?:amp|lt|gt|quot|apos);)/;

// The end of the name starting at `at`: the first of space, "/", ">", "=" or '"' (or the text's end).
function nameEnd(xml: string, at: number): number {
  let i = at;
  for (; i < xml.length; i++) {
    const c = xml.charCodeAt(i);
    if (c === SPACE || c === SLASH || c === GT || c === EQUALS || c === QUOTE) break;
  }
  return i;
}

/**
 * The frame `xml` holds when it is written exactly as elementXml writes it (no declaration, no text,
 * one space before each attribute, double quotes, only the five named escapes, `/>` or a closing
 * tag): a keyframe of 10,000 tasks is read here in a fraction of fast-xml-parser's time and memory.
 * Undefined for any other text, which decodeFrameXml then reads with fast-xml-parser: what this
 * accepts is well-formed XML that parser reads to the same tree.
 */
function readOwnXml(xml: string): XmlElement | undefined {
  const open: XmlElement[] = [];
  let root: XmlElement | undefined;
  let i = 0;
  while (i < xml.length) {
    if (root || xml.charCodeAt(i) !== LT) return undefined;
    if (xml.charCodeAt(i + 1) === SLASH) {
      const end = xml.indexOf(">", i);
      const top = open.pop();
      if (end < 0 || !top || xml.slice(i + 2, end) !== top.tag) return undefined;
      if (open.length === 0) root = top;
      i = end + 1;
      continue;
    }
    let at = nameEnd(xml, i + 1);
    const tag = xml.slice(i + 1, at);
    if (!isXmlName(tag) || open.length >= FRAME_MAX_DEPTH) return undefined;
    const el: XmlElement = { tag, props: {}, children: [] };
    let childless: boolean;
    for (;;) {
      const c = xml.charCodeAt(at);
      if (c !== SPACE) {
        childless = c === SLASH && xml.charCodeAt(at + 1) === GT;
        if (!childless && c !== GT) return undefined;
        i = at + (childless ? 2 : 1);
        break;
      }
      const end = nameEnd(xml, at + 1);
      const name = xml.slice(at + 1, end);
      if (!isXmlName(name) || Object.hasOwn(el.props, name) || xml.charCodeAt(end) !== EQUALS || xml.charCodeAt(end + 1) !== QUOTE) return undefined;
      const close = xml.indexOf('"', end + 2);
      if (close < 0) return undefined;
      const raw = xml.slice(end + 2, close);
      if (NOT_OWN_TEXT.test(raw)) return undefined;
      el.props[name] = decodePropValue(raw.includes("&") ? raw.replace(ENTITY, (e) => ENTITIES[e]!) : raw, name);
      at = close + 1;
    }
    const parent = open[open.length - 1];
    if (parent) parent.children.push(el);
    if (!childless) open.push(el);
    else if (!parent) root = el;
  }
  return open.length === 0 ? root : undefined;
}

/**
 * The frame an XML text holds; INVALID_FRAME when the text is not well-formed, holds text content,
 * has other than one root, or carries a name or value no frame can have.
 * @example decodeFrameXml('<task id="a" retries="=2"/>') // { tag: "task", props: { id: "a", retries: 2 }, children: [] }
 */
export function decodeFrameXml(xml: string, options: { hashChecked?: boolean } = {}): XmlElement {
  const own = readOwnXml(xml);
  if (own) return own;
  // A caller that compares the result with a stored hash catches a damaged text anyway, so the
  // separate well-formedness pass (a third of the decode time) can be skipped.
  if (!options.hashChecked) {
    const verdict = fastXml().validator.validate(xml);
    if (verdict !== true) throw invalid(`Frame XML is not well-formed: ${verdict.err.msg} (line ${verdict.err.line})`);
  }
  let parsed: Ordered[];
  try {
    parsed = fastXml().parser.parse(xml) as Ordered[];
  } catch (cause) {
    throw invalid(`Frame XML does not parse: ${(cause as Error).message}`, cause);
  }
  // An XML declaration is the one thing besides the root an XML tool may reasonably write.
  const roots = parsed.filter((node) => !Object.hasOwn(node, "?xml"));
  if (roots.length !== 1) throw invalid(`Frame XML must have exactly one root element, found ${roots.length}`);
  return fromOrdered(roots[0]!);
}
