import { describe, expect, test } from "bun:test";
import { SmithersEventTypeSchema } from "../../src/engine/events.ts";
import { RunStatusSchema } from "../../src/engine/states.ts";
import { EVENT_TYPES, RUN_STATUSES } from "../../src/ui/types.ts";

describe("EVENT_TYPES", () => {
  test("the events page offers every type a run's journal can hold (the server's own RunRefused aside)", () => {
    expect([...EVENT_TYPES]).toEqual(SmithersEventTypeSchema.options.filter((t) => t !== "RunRefused"));
  });
});

describe("RUN_STATUSES", () => {
  test("the runs list's status filter offers every run status, and queued", () => {
    expect(new Set(RUN_STATUSES)).toEqual(new Set(["queued", ...RunStatusSchema.options]));
  });
});
