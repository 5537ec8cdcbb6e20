import { describe, expect, test } from "bun:test";
import { XMLValidator } from "fast-xml-parser";
import { decodeFrameXml, encodeFrameXml, FRAME_MAX_DEPTH, type PropValue, type XmlElement } from "../../src/codec/index.ts";
import { errorOf } from "../helpers.ts";

const el = (tag: string, props: Record<string, PropValue> = {}, children: XmlElement[] = []): XmlElement => ({ tag, props, children });

/** Encodes, checks well-formedness with an independent validator, and decodes again. */
function roundTrip(tree: XmlElement): { xml: string; back: XmlElement } {
  const xml = encodeFrameXml(tree);
  expect(XMLValidator.validate(xml)).toBe(true);
  return { xml, back: decodeFrameXml(xml) };
}

describe("encodeFrameXml / decodeFrameXml", () => {
  test("plain strings are written as attribute text unchanged", () => {
    expect(encodeFrameXml(el("task", { id: "a", label: "Analyze it" }))).toBe('<task id="a" label="Analyze it"/>');
  });

  test("numbers, booleans, null, arrays and objects come back with their JSON types", () => {
    const props = { int: 3, neg: -42, frac: -0.125, big: 1e21, yes: true, no: false, none: null, list: [1, "two", [3]], obj: { a: { b: null } } };
    const { xml, back } = roundTrip(el("task", props));
    expect(xml).toContain('int="=3" neg="=-42" frac="=-0.125"');
    expect(back.props).toEqual(props);
  });

  test("a number's or a boolean's attribute text is the marker and its JSON text, for every kind of number", () => {
    const values = [0, -0, 1, -1, 0.1, -0.125, 1e21, 1e-7, 5e-324, 2 ** 53, -(2 ** 31), Number.MAX_VALUE, Number.MIN_VALUE, true, false];
    for (let i = 0; i < 500; i++) values.push((Math.random() - 0.5) * 10 ** Math.floor(Math.random() * 40 - 20));
    for (const value of values) {
      const xml = encodeFrameXml(el("task", { v: value }));
      expect(xml).toBe(`<task v="=${JSON.stringify(value)}"/>`);
      expect(decodeFrameXml(xml).props.v).toBe(JSON.parse(JSON.stringify(value)));
    }
  });

  test("XML-special characters survive: & < > \" ' and ]]>", () => {
    const text = `a & b < c > d " e ' f ]]> g &amp; &#10;`;
    const { xml, back } = roundTrip(el("task", { text }));
    expect(xml).toBe('<task text="a &amp; b &lt; c &gt; d &quot; e &apos; f ]]&gt; g &amp;amp; &amp;#10;"/>');
    expect(back.props.text).toBe(text);
  });

  test("tabs, newlines and carriage returns survive although XML parsers normalise them in attributes", () => {
    const text = "line 1\nline\t2\r\n";
    const { xml, back } = roundTrip(el("task", { text }));
    expect(xml).not.toMatch(/[\t\n\r]/);
    expect(back.props.text).toBe(text);
  });

  test("emoji and other non-ASCII text stay readable in the XML", () => {
    const { xml, back } = roundTrip(el("task", { text: "héllo 中文 😀" }));
    expect(xml).toBe('<task text="héllo 中文 😀"/>');
    expect(back.props.text).toBe("héllo 中文 😀");
  });

  test("characters XML 1.0 cannot hold (controls, lone surrogates, U+FFFE/U+FFFF) are escaped and come back", () => {
    const values = ["\u0000", "a\u0001b", "\u001f", "\ud800", "x\udfffy", "\ufffe", "\uffff", "\u007f\u0085", "\u2028"];
    const { xml, back } = roundTrip(el("task", Object.fromEntries(values.map((v, i) => [`v${i}`, v]))));
    expect(xml).toMatch(/^[\x20-\x7E]*$/);
    expect(Object.values(back.props)).toEqual(values);
  });

  test("a string that starts with = is escaped so it is never read as JSON", () => {
    const { xml, back } = roundTrip(el("task", { a: "=x", b: "=", c: "=1", d: "x=1" }));
    expect(xml).toBe('<task a="=&quot;=x&quot;" b="=&quot;=&quot;" c="=&quot;=1&quot;" d="x=1"/>');
    expect(back.props).toEqual({ a: "=x", b: "=", c: "=1", d: "x=1" });
  });

  test("attribute order is the props' order", () => {
    const { xml, back } = roundTrip(el("task", { z: "1", a: "2", m: "3" }));
    expect(xml).toBe('<task z="1" a="2" m="3"/>');
    expect(Object.keys(back.props)).toEqual(["z", "a", "m"]);
  });

  test("nested elements keep their order and empty elements self-close", () => {
    const tree = el("workflow", {}, [el("sequence", {}, [el("task", { id: "b" }), el("task", { id: "a" })]), el("parallel")]);
    const { xml, back } = roundTrip(tree);
    expect(xml).toBe('<workflow><sequence><task id="b"/><task id="a"/></sequence><parallel/></workflow>');
    expect(back).toEqual(tree);
  });

  test("names that JavaScript objects hold specially (toString, valueOf, hasOwnProperty) round-trip", () => {
    const tree = el("toString", { valueOf: 1, hasOwnProperty: "x", __toString: "y" }, [el("hasOwnProperty")]);
    expect(roundTrip(tree).back).toEqual(tree);
  });

  test("a tree as deep as FRAME_MAX_DEPTH round-trips", () => {
    let tree = el("task");
    for (let depth = 1; depth < FRAME_MAX_DEPTH; depth++) tree = el("group", {}, [tree]);
    expect(roundTrip(tree).back).toEqual(tree);
  });

  test("a tree deeper than FRAME_MAX_DEPTH is refused with INVALID_FRAME", () => {
    let tree = el("task");
    for (let depth = 0; depth < FRAME_MAX_DEPTH; depth++) tree = el("group", {}, [tree]);
    expect(errorOf(() => encodeFrameXml(tree)).code).toBe("INVALID_FRAME");
  });

  test("tag and prop names that are not XML names are refused with INVALID_FRAME", () => {
    for (const name of ["", "1a", "a b", "a:b", "ä", "-x", ".x", "a/b", "__proto__", "constructor", "prototype"]) {
      expect(errorOf(() => encodeFrameXml(el(name))).code).toBe("INVALID_FRAME");
      expect(errorOf(() => encodeFrameXml(el("task", { [name]: "v" }))).code).toBe("INVALID_FRAME");
    }
  });

  test("names of an ASCII letter or _ followed by letters, digits, _ . - are written and read back", () => {
    for (const name of ["_", "a", "Z", "_1", "a.b-c_d", "task9", "z-Z.0"]) {
      expect(roundTrip(el(name, { [name]: "v" })).back).toEqual(el(name, { [name]: "v" }));
    }
  });

  test("values that are not JSON (NaN, Infinity, undefined, functions, class instances) are refused with INVALID_FRAME", () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, undefined, () => 1, new Date(0), [1, undefined]]) {
      expect(errorOf(() => encodeFrameXml(el("task", { v: value as PropValue }))).code).toBe("INVALID_FRAME");
    }
  });

  test("XML with text content, several roots, no root or broken nesting is rejected with INVALID_FRAME", () => {
    for (const bad of ["<workflow>hello</workflow>", "<a/><b/>", "", "<a><b></a>", "<a x=1/>", "<!-- only a comment -->"]) {
      expect(errorOf(() => decodeFrameXml(bad)).code).toBe("INVALID_FRAME");
    }
  });

  test("an XML declaration before the root is accepted", () => {
    expect(decodeFrameXml('<?xml version="1.0" encoding="UTF-8"?>\n<task id="a"/>')).toEqual(el("task", { id: "a" }));
  });

  test("XML written otherwise than encodeFrameXml writes it reads to the same tree", () => {
    const tree = el("workflow", { name: "w" }, [el("task", { id: "a", label: "x & y", n: 2 }), el("sequence", {}, [el("task", { id: "b" })])]);
    for (const xml of [
      "<workflow name='w'><task id='a' label='x &amp; y' n='=2'/><sequence><task id='b'/></sequence></workflow>",
      '<workflow  name="w"><task id="a" label="x &amp; y" n="=2" /><sequence><task id="b"></task></sequence></workflow>',
      '<?xml version="1.0"?><workflow name="w"><task id="a" label="x &amp; y" n="=2"/><sequence><task id="b"/></sequence></workflow>',
    ]) {
      expect(decodeFrameXml(xml)).toEqual(tree);
    }
  });

  test("an unclosed element, a closing tag that does not match or a repeated attribute is rejected with INVALID_FRAME", () => {
    for (const bad of ["<a><b/>", "<a><b></c></a>", "<a></a></a>", '<a id="x" id="y"/>', '<a id="x/>']) {
      expect(errorOf(() => decodeFrameXml(bad)).code).toBe("INVALID_FRAME");
    }
  });

  test("XML whose names or = values no frame can hold is rejected with INVALID_FRAME", () => {
    for (const bad of ["<a:b/>", '<a x:y="1"/>', '<a x="=not json"/>']) {
      expect(errorOf(() => decodeFrameXml(bad)).code).toBe("INVALID_FRAME");
    }
  });
});
