import { describe, expect, test } from "bun:test";
import { SmithersEventSchema } from "../../src/engine/events.ts";
import { RunStatusSchema } from "../../src/engine/states.ts";
import { EVENT_TYPES, RUN_STATUSES } from "../../src/ui/types.ts";

describe("EVENT_TYPES", () => {
  test("the events page offers exactly the types the journal's event union has a payload variant for (the server's own RunRefused aside)", () => {
    // From the union's variants, not from the list both sides are built from.
    const variants = SmithersEventSchema.options.map((o) => (o.shape.type as { value: string }).value);
    expect(new Set<string>(EVENT_TYPES)).toEqual(new Set(variants.filter((t) => t !== "RunRefused")));
  });
});

describe("RUN_STATUSES", () => {
  test("the runs list's status filter offers every run status, and queued", () => {
    expect(new Set(RUN_STATUSES)).toEqual(new Set(["queued", ...RunStatusSchema.options]));
  });
});
