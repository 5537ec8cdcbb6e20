/** @jsxImportSource smithers */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decodeFrameXml, encodeFrameXml, planToXml, type XmlElement } from "../../src/codec/index.ts";
import { Loop, Parallel, render, Task, Workflow } from "../../src/jsx/index.ts";
import { errorOf } from "../helpers.ts";

const out = z.object({ n: z.number() });
const plan = render(
  <Workflow name={'fix "auth" & <tokens>'}>
    <Task id="analyze" output={out} retries={2} label="Analyze & triage">{{ n: 1 }}</Task>
    <Parallel maxConcurrency={2}>
      <Task id="a" output={out} skipIf>{() => ({ n: 2 })}</Task>
      <Task id="b" output={out} dependsOn={["a"]} continueOnFail>{{ n: 3 }}</Task>
    </Parallel>
    <Loop id="revise" until={false} maxIterations={3}>
      <Task id="write" output={out}>{{ n: 4 }}</Task>
    </Loop>
  </Workflow>,
  new Map([["revise", { iteration: 1, done: false }]]),
);

describe("planToXml", () => {
  test("renders the plan as workflow/sequence/parallel/loop/task elements with their attributes", () => {
    const xml = encodeFrameXml(planToXml(plan, () => "out"));
    expect(xml).toBe(
      '<workflow name="fix &quot;auth&quot; &amp; &lt;tokens&gt;">' +
        '<task id="analyze" iteration="0" output="out" mode="static" label="Analyze &amp; triage" retries="2"/>' +
        '<parallel maxConcurrency="2"><task id="a" iteration="0" output="out" mode="compute" skip="true"/>' +
        '<task id="b" iteration="0" output="out" mode="static" continueOnFail="true" dependsOn="a"/></parallel>' +
        '<loop id="revise" iteration="1" maxIterations="3" onMaxReached="return-last"><task id="write" iteration="1" output="out" mode="static"/></loop>' +
        "</workflow>",
    );
  });
});

describe("encodeFrameXml / decodeFrameXml", () => {
  test("round-trip exactly in both directions, special characters included", () => {
    const tree = planToXml(plan, (t) => `table_${t.nodeId}`);
    const xml = encodeFrameXml(tree);
    expect(decodeFrameXml(xml)).toEqual(tree);
    expect(encodeFrameXml(decodeFrameXml(xml))).toBe(xml);
  });

  test("the XML is well-formed for a general parser: every element closes and attribute text is escaped", () => {
    const tree: XmlElement = { tag: "workflow", props: { name: `a'b"c<d>&e` }, children: [{ tag: "task", props: { id: "x" }, children: [] }] };
    const xml = encodeFrameXml(tree);
    expect(xml).not.toMatch(/="[^"]*[<&][^;]*"/);
    expect(decodeFrameXml(xml).props.name).toBe(`a'b"c<d>&e`);
  });

  test("XML with text content or several roots is rejected with INVALID_FRAME", () => {
    for (const bad of ["<workflow>hello</workflow>", "<a/><b/>", ""]) {
      expect(errorOf(() => decodeFrameXml(bad)).code).toBe("INVALID_FRAME");
    }
  });
});
