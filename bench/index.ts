/** Runs every benchmark and prints its table: `bun run bench`. Numbers are printed, never asserted. */
import { runDbBench } from "./db/index.ts";
import { runEngineBench } from "./engine/index.tsx";

const benches: [name: string, run: () => Promise<void>][] = [
  ["db", runDbBench],
  ["engine", () => runEngineBench()],
];

for (const [name, run] of benches) {
  console.log(`\n== bench/${name} ==`);
  await run();
}
