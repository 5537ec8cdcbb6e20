import { describe, expect, test } from "bun:test";
import { SmithersEventTypeSchema } from "../../src/engine/events.ts";
import { EVENT_TYPES } from "../../src/ui/types.ts";

describe("EVENT_TYPES", () => {
  test("the events page offers every type a run's journal can hold (the server's own RunRefused aside)", () => {
    expect([...EVENT_TYPES]).toEqual(SmithersEventTypeSchema.options.filter((t) => t !== "RunRefused"));
  });
});
