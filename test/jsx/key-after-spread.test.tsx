/** @jsxImportSource smithers-workflows */
// Kept in its own file: `key` after a spread compiles to `createElement` imported from the
// jsxImportSource root ("smithers-workflows"), and a missing export fails the whole module at load time.
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { render, Task, Workflow } from "../../src/jsx/index.ts";

const out = z.object({ n: z.number() });

describe("createElement (key after a spread)", () => {
  test("a Task written with {...props} before key renders with that key and its props", () => {
    const common = { output: out, children: { n: 1 } };
    const el = <Task {...common} id="a" key="ka" />;
    expect(el.key).toBe("ka");
    expect(el.props.id).toBe("a");
    const plan = render(<Workflow name="w">{el}</Workflow>);
    expect(plan.tasks.map((t) => [t.nodeId, t.mode, t.staticValue])).toEqual([["a", "static", { n: 1 }]]);
  });

  test("children passed after a spread and key end up in props.children", () => {
    const common = { output: out };
    const el = (
      <Task {...common} id="b" key="kb">
        {{ n: 2 }}
      </Task>
    );
    expect(el.props.children).toEqual({ n: 2 });
    expect("key" in el.props).toBe(false);
  });
});
