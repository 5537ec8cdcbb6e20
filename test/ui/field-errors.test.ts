import { describe, expect, test } from "bun:test";
import { placeErrors } from "../../src/ui/field-errors.ts";
import type { JsonSchema } from "../../src/ui/types.ts";

const schema: JsonSchema = {
  type: "object",
  properties: {
    title: { type: "string" },
    tags: { type: "array", items: { type: "string" } },
    contact: { type: "object", properties: { name: { type: "string" } } },
    extra: { type: "object" },
  },
};

describe("placeErrors", () => {
  test("a problem at a rendered field stays there", () => {
    expect(placeErrors(schema, [{ path: ["title"], message: "Too short" }])).toEqual({ title: "Too short" });
    expect(placeErrors(schema, [{ path: ["contact", "name"], message: "Required" }])).toEqual({ "contact.name": "Required" });
  });

  test("a list item's problem goes to its list, with its line; several meet there joined", () => {
    expect(
      placeErrors(schema, [
        { path: ["tags", 0], message: "Too long" },
        { path: ["tags", 2], message: "Too long" },
      ]),
    ).toEqual({ tags: "Line 1: Too long; Line 3: Too long" });
  });

  test("a path under a field with no inner fields goes to that field; one with no field at all to the whole form", () => {
    expect(placeErrors(schema, [{ path: ["extra", "deep", "x"], message: "Bad" }])).toEqual({ extra: "deep.x: Bad" });
    expect(placeErrors(schema, [{ path: ["unknown"], message: "Unrecognized" }])).toEqual({ "": "unknown: Unrecognized" });
    expect(placeErrors(schema, [{ path: [], message: "Expected object" }])).toEqual({ "": "Expected object" });
  });

  test("an answer that is not an object is the form's one field, `answer`", () => {
    const list: JsonSchema = { type: "array", items: { type: "number" } };
    expect(placeErrors(list, [{ path: [1], message: "Too big" }])).toEqual({ answer: "Line 2: Too big" });
    expect(placeErrors({ type: "string" }, [{ path: [], message: "Too short" }])).toEqual({ answer: "Too short" });
  });
});
