/**
 * The compact text form of a delta, the one frames are stored in. A step's delta is a handful of
 * prop sets on a few paths, and the JSON form spends most of its bytes on the keys of each op
 * (`{"op":"set","path":[0,0],"name":"state","value":"running"}`): written as lines instead, it is a
 * quarter of the size. One op kind per line, lines joined by "\n":
 *
 *   0.0<TAB>state=running<TAB>-error   prop edits of the element at path 0.0, in order: a set
 *                                       (name=prop text, as in the XML) or a removal (-name)
 *   <TAB>name=x                        the same on the root (its path is empty)
 *   -0.3                               remove the element at path 0.3
 *   +0.3<TAB>["task",{"id":"a"}]       insert an element so that it sits at path 0.3:
 *                                       [tag, props?, children?] in JSON, children in the same form
 *
 * Neither the prop text nor JSON ever holds a raw tab or newline, and no line starts with "[",
 * so decodeDelta tells this form from the older JSON one by the first character.
 */
import { FRAME_MAX_DEPTH } from "./constants.ts";
import { corrupt, decodeDeltaJson, type FrameDelta, type FrameOp } from "./ops.ts";
import { decodePropValue, encodePropValue } from "./prop-text.ts";
import { SmithersError } from "../errors/index.ts";
import { checkName, checkTree, checkValue, isXmlName, type PropValue, type XmlElement } from "./tree.ts";

type Props = XmlElement["props"];
type NodeTuple = [string] | [string, Props] | [string, Props, NodeTuple[]];

// Empty props and children are left off, so a leaf task is ["task",{...}].
function tupleOf(el: XmlElement): NodeTuple {
  if (el.children.length > 0) return [el.tag, el.props, el.children.map(tupleOf)];
  return Object.keys(el.props).length > 0 ? [el.tag, el.props] : [el.tag];
}

const samePath = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((n, i) => n === b[i]);

/**
 * The delta as compact text; INVALID_FRAME for a name or value no frame can hold, unless `checked`
 * says every op was checked already (ops a LiveFrame took).
 * @example encodeDeltaText([{ op: "set", path: [0, 2], name: "state", value: "running" }]) // "0.2\tstate=running"
 */
export function encodeDeltaText(delta: FrameDelta, checked = false): string {
  const lines: string[] = [];
  let line: string | undefined;
  let linePath: readonly number[] = [];
  for (const op of delta) {
    if (op.op === "insert") {
      if (!checked) checkTree(op.node, op.path.length + 2);
      if (line !== undefined) lines.push(line);
      line = undefined;
      lines.push(`+${[...op.path, op.index].join(".")}\t${JSON.stringify(tupleOf(op.node))}`);
      continue;
    }
    if (op.name === undefined) {
      if (line !== undefined) lines.push(line);
      line = undefined;
      lines.push(`-${op.path.join(".")}`);
      continue;
    }
    if (!checked) checkName(op.name, "prop");
    if (line === undefined || !samePath(linePath, op.path)) {
      if (line !== undefined) lines.push(line);
      line = op.path.join(".");
      linePath = op.path;
    }
    if (op.op === "remove") line += `\t-${op.name}`;
    else {
      if (!checked) checkValue(op.value, op.name);
      line += `\t${op.name}=${encodePropValue(op.value)}`;
    }
  }
  if (line !== undefined) lines.push(line);
  return lines.join("\n");
}

const bad = (line: number, why: string) => corrupt(`Frame delta line ${line + 1}: ${why}`);

// Decimal indices without leading zeros, "." between them; "" is the root.
function parsePath(text: string, line: number): number[] {
  const path: number[] = [];
  if (text === "") return path;
  let n = 0;
  let digits = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      if (digits === 0) throw bad(line, `path ${JSON.stringify(text)} has an empty index`);
      path.push(n);
      n = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39) {
      if (digits === 1 && n === 0) throw bad(line, `path ${JSON.stringify(text)} has an index with a leading zero`);
      n = n * 10 + (c - 0x30);
      if (++digits > 15) throw bad(line, `path ${JSON.stringify(text)} has an index too large`);
    } else throw bad(line, `path ${JSON.stringify(text)} is not indices joined by "."`);
  }
  return path;
}

function nodeOf(data: unknown, depth: number, line: number): XmlElement {
  if (depth > FRAME_MAX_DEPTH) throw bad(line, `the inserted element is nested deeper than ${FRAME_MAX_DEPTH} elements`);
  if (!Array.isArray(data) || data.length < 1 || data.length > 3 || typeof data[0] !== "string") {
    throw bad(line, "an inserted element is not [tag, props?, children?]");
  }
  const props = (data.length > 1 ? data[1] : {}) as unknown;
  const children = (data.length > 2 ? data[2] : []) as unknown;
  if (typeof props !== "object" || props === null || Array.isArray(props)) throw bad(line, "an inserted element's props are not an object");
  if (!Array.isArray(children)) throw bad(line, "an inserted element's children are not an array");
  return { tag: data[0], props: props as Props, children: children.map((child) => nodeOf(child, depth + 1, line)) };
}

function propEdits(text: string, line: number, ops: FrameOp[]): void {
  const parts = text.split("\t");
  if (parts.length < 2) throw bad(line, "a path with no prop edits");
  const path = parsePath(parts[0]!, line);
  for (let i = 1; i < parts.length; i++) {
    const edit = parts[i]!;
    if (edit.startsWith("-")) {
      const name = edit.slice(1);
      if (!isXmlName(name)) throw bad(line, `prop name ${JSON.stringify(name)} is not an XML name`);
      ops.push({ op: "remove", path, name });
      continue;
    }
    const eq = edit.indexOf("=");
    const name = eq < 0 ? edit : edit.slice(0, eq);
    if (eq < 0 || !isXmlName(name)) throw bad(line, `${JSON.stringify(edit)} is not name=value or -name`);
    const value: PropValue = decodePropValue(edit.slice(eq + 1), name);
    checkValue(value, name);
    ops.push({ op: "set", path, name, value });
  }
}

function insertLine(line: string, l: number, ops: FrameOp[]): void {
  const tab = line.indexOf("\t");
  const path = tab < 0 ? [] : parsePath(line.slice(1, tab), l);
  if (path.length === 0) throw bad(l, "an insert needs a position and an element");
  let data: unknown;
  try {
    data = JSON.parse(line.slice(tab + 1));
  } catch (cause) {
    throw corrupt(`Frame delta line ${l + 1}: the inserted element is not JSON (${(cause as Error).message})`, cause);
  }
  const node = nodeOf(data, path.length + 1, l);
  checkTree(node, path.length + 1);
  const index = path.pop()!;
  ops.push({ op: "insert", path, index, node });
}

/**
 * The delta a compact text holds, validated; FRAME_CORRUPT naming the line when it is not one.
 * @example decodeDeltaText("0.2\tstate=running\n-0.5") // [{ op: "set", path: [0, 2], name: "state", value: "running" }, { op: "remove", path: [0, 5] }]
 */
export function decodeDeltaText(text: string): FrameDelta {
  const ops: FrameOp[] = [];
  if (text === "") return ops;
  const lines = text.split("\n");
  for (let l = 0; l < lines.length; l++) {
    const line = lines[l]!;
    const first = line.charCodeAt(0);
    try {
      if (first === 0x2d /* - */) ops.push({ op: "remove", path: parsePath(line.slice(1), l) });
      else if (first === 0x2b /* + */) insertLine(line, l, ops);
      else propEdits(line, l, ops);
    } catch (error) {
      // A name or value no frame can hold, read from storage: the text is damaged.
      throw SmithersError.is(error, "INVALID_FRAME") ? bad(l, error.message) : error;
    }
  }
  return ops;
}

/**
 * A stored delta in either form: the JSON one frames were written in before the compact text
 * (it starts with "[", which no text line does) or the text one.
 * @example decodeDelta('[{"op":"remove","path":[0,2]}]') // same as decodeDelta("-0.2")
 */
export function decodeDelta(text: string): FrameDelta {
  return text.startsWith("[") ? decodeDeltaJson(text) : decodeDeltaText(text);
}
