/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { Fragment as DevFragment, jsxDEV } from "../../src/jsx/jsx-dev-runtime.ts";
import { Fragment, jsx, jsxs } from "../../src/jsx/jsx-runtime.ts";
import { HOST, isElement, render, SMITHERS_ELEMENT, Task, Workflow, type SmithersNode } from "../../src/jsx/index.ts";

const out = z.object({ n: z.number() });

describe("jsx", () => {
  test("builds a plain element with type, props and a null key", () => {
    const el = jsx(Task, { id: "a", output: out, children: { n: 1 } });
    expect(el.$$typeof).toBe(SMITHERS_ELEMENT);
    expect(el.type).toBe(Task);
    expect(el.props).toEqual({ id: "a", output: out, children: { n: 1 } });
    expect(el.key).toBeNull();
  });

  test("turns a numeric key into a string", () => {
    expect(jsx(HOST.sequence, {}, 7).key).toBe("7");
    expect(jsx(HOST.sequence, {}, "k").key).toBe("k");
  });

  test("treats missing props as an empty object", () => {
    expect(jsx(HOST.sequence, undefined as unknown as Record<string, unknown>).props).toEqual({});
  });
});

describe("jsxs", () => {
  test("builds the same element as jsx for static children arrays", () => {
    const props = { children: ["a", "b"] };
    expect(jsxs(HOST.sequence, props, "k")).toEqual(jsx(HOST.sequence, props, "k"));
  });
});

describe("Fragment", () => {
  test("is the same symbol in the production and development runtimes", () => {
    expect(Fragment).toBe(DevFragment);
    expect(typeof Fragment).toBe("symbol");
  });

  test("JSX fragment syntax produces a Fragment element holding its children", () => {
    const el = (
      <>
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
        <Task id="b" output={out}>
          {{ n: 2 }}
        </Task>
      </>
    );
    expect(isElement(el)).toBe(true);
    expect(el.type).toBe(Fragment);
    expect(Array.isArray(el.props.children)).toBe(true);
    expect(el.props.children).toHaveLength(2);
  });
});

describe("jsxDEV", () => {
  test("ignores the dev-only arguments and builds the same element as jsx", () => {
    const props = { id: "a", output: out, children: { n: 1 } };
    const dev = jsxDEV(Task, props, "k", false, { fileName: "x.tsx", lineNumber: 1 }, {});
    expect(dev).toEqual(jsx(Task, props, "k"));
    expect(dev.key).toBe("k");
  });

  test("treats missing props as an empty object", () => {
    expect(jsxDEV(HOST.loop, null as unknown as Record<string, unknown>).props).toEqual({});
  });
});

describe("JSX syntax", () => {
  test("a component tag yields an element whose type is the component function", () => {
    const el = <Workflow name="w" />;
    expect(el.type).toBe(Workflow);
    expect(el.props).toEqual({ name: "w" });
  });

  test("the key attribute becomes the element key, not a prop", () => {
    const el = (
      <Task key="k1" id="a" output={out}>
        {{ n: 1 }}
      </Task>
    );
    expect(el.key).toBe("k1");
    expect("key" in el.props).toBe(false);
  });

  test("a single child is stored as is and several children as an array", () => {
    const one = (
      <Workflow name="w">
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
      </Workflow>
    );
    expect(isElement(one.props.children)).toBe(true);
    const two = (
      <Workflow name="w">
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
        <Task id="b" output={out}>
          {{ n: 2 }}
        </Task>
      </Workflow>
    );
    expect(two.props.children).toHaveLength(2);
  });

  test("elements built by JSX render to a plan", () => {
    const node: SmithersNode = (
      <Workflow name="w">
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
      </Workflow>
    );
    expect(render(node).tasks.map((t) => t.nodeId)).toEqual(["a"]);
  });
});
