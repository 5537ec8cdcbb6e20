import { describe, expect, test } from "bun:test";
import { smithersEventSchema } from "../../src/engine/core/events.ts";
import { WAITING_STATUSES } from "../../src/db/constants.ts";
import { EVENT_TYPES, RUN_STATUSES } from "../../src/ui/types.ts";
import { serverPerTest } from "../server/helpers.ts";

describe("EVENT_TYPES", () => {
  test("the events page offers exactly the types the journal's event union has a payload variant for (the server's own RunRefused aside)", () => {
    // From the union's variants, not from the list both sides are built from.
    const variants = smithersEventSchema().options.map((o) => (o.shape.type as { value: string }).value);
    expect(new Set<string>(EVENT_TYPES)).toEqual(new Set(variants.filter((t) => t !== "RunRefused")));
  });
});

describe("RUN_STATUSES", () => {
  const start = serverPerTest();

  test("every status the runs list's filter offers is one GET /runs?status= accepts (and it refuses one it does not know)", async () => {
    const { url } = await start();
    for (const status of RUN_STATUSES) {
      const res = await fetch(`${url}/runs?status=${encodeURIComponent(status)}`);
      expect([status, res.status]).toEqual([status, 200]);
    }
    expect((await fetch(`${url}/runs?status=bogus`)).status).toBe(400);
  });

  test("the filter offers queued and the database's waiting statuses (lists written apart from names.ts)", () => {
    expect(RUN_STATUSES).toContain("queued");
    for (const status of WAITING_STATUSES) expect(RUN_STATUSES).toContain(status);
    expect(new Set(RUN_STATUSES).size).toBe(RUN_STATUSES.length);
  });
});
