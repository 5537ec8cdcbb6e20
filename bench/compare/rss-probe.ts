/**
 * Preloaded (`bun --preload`) into the CLI processes bench/compare times, which are the engines'
 * own CLIs and can't report for themselves: at exit, writes this process's peak RSS in KB to
 * $BENCH_RSS_FILE. See peakRssKb for why the parent can't simply read the child's maxRSS. With
 * $BENCH_STATEMENTS_FILE set (ours only: the `rest` rows), it also counts every SQL statement the
 * process executes (../statement-counter.ts) and writes the total there at exit.
 */
import { writeFileSync } from "node:fs";
import { peakRssKb } from "./protocol.ts";

const file = process.env.BENCH_RSS_FILE;
if (file) process.on("exit", () => writeFileSync(file, String(peakRssKb())));
const statementsFile = process.env.BENCH_STATEMENTS_FILE;
if (statementsFile) {
  // Loaded only here, so the `smithers up` row of the main table runs exactly as before.
  const { startCounting } = await import("../statement-counter.ts");
  const { counted } = startCounting();
  process.on("exit", () => writeFileSync(statementsFile, String(counted.total)));
}
