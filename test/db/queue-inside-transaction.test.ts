import { expect, test } from "bun:test";
import { SmithersDb } from "../../src/db/index.ts";
import { tempDbPath } from "../helpers.ts";

test("setDurability called inside a transaction is refused instead of deadlocking", async () => {
  const db = new SmithersDb(tempDbPath());
  const tx = db.withTransaction("t", async () => {
    await db.setDurability("power");
  });
  const outcome = await Promise.race([
    tx.then(
      () => "resolved",
      (e) => `rejected ${e.code}`,
    ),
    Bun.sleep(500).then(() => "still pending"),
  ]);
  expect(outcome).not.toBe("still pending");
});

test("close() called inside a transaction does not deadlock", async () => {
  const db = new SmithersDb(tempDbPath());
  const tx = db.withTransaction("t", async () => {
    await db.close();
  });
  const outcome = await Promise.race([
    tx.then(
      () => "resolved",
      (e) => `rejected ${e.code}`,
    ),
    Bun.sleep(500).then(() => "still pending"),
  ]);
  expect(outcome).not.toBe("still pending");
});
