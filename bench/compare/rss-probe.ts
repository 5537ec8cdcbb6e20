/**
 * Preloaded (`bun --preload`) into the `smithers up` processes bench/compare times, which are the
 * engines' own CLIs and can't report for themselves: at exit, writes this process's peak RSS in KB
 * to $BENCH_RSS_FILE. See peakRssKb for why the parent can't simply read the child's maxRSS.
 */
import { writeFileSync } from "node:fs";
import { peakRssKb } from "./protocol.ts";

const file = process.env.BENCH_RSS_FILE;
if (file) process.on("exit", () => writeFileSync(file, String(peakRssKb())));
