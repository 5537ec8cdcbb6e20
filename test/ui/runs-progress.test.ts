/** The runs list's progress bar in Chromium: a failed run's bar is not full, turns red, and says how many tasks failed. */
import { describe, expect, test } from "bun:test";
import type { Locator } from "playwright-core";
import { post } from "../server/helpers.ts";
import { AUTH, chromiumPath, dashboardHarness, TIMEOUT_MS } from "./harness.ts";

/** The value and max of the <progress> in `cell` (the DOM's types are not in this tsconfig). */
const barOf = (cell: Locator) =>
  cell.locator("progress").evaluate((bar) => {
    const { value, max } = bar as unknown as { value: number; max: number };
    return [value, max];
  });

describe.skipIf(!chromiumPath)("the runs list's progress", () => {
  const h = dashboardHarness();

  test(
    "a run failed by a denial shows 0/1 (1 failed) with its bar empty and red; a finished run a full green one",
    async () => {
      const finished = await h.start("steps");
      const denied = await h.start("gate");
      await h.waitForStatus(finished, ["finished"]);
      await h.waitForStatus(denied, ["waiting-approval"]);
      expect((await post(`${h.url}/runs/${denied}/deny`, {}, AUTH)).status).toBe(200);
      await h.waitForStatus(denied, ["failed"]);

      const page = await h.open("/");
      const cell = page.locator(`tr[data-run="${denied}"] td`).nth(4);
      await cell.getByText("0/1 (1 failed)").waitFor();
      expect(await cell.locator("span").getAttribute("class")).toBe("progress progress-failed");
      expect(await barOf(cell)).toEqual([0, 1]);
      const whole = page.locator(`tr[data-run="${finished}"] td`).nth(4);
      expect(await whole.locator("span").getAttribute("class")).toBe("progress");
      const [value, max] = await barOf(whole);
      expect(value).toBe(max);
      await page.close();
    },
    TIMEOUT_MS,
  );
});
