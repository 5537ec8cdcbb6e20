/**
 * The import floor of `smithers up`: a Bun process that loads only the two libraries every
 * workflow file needs before any line of ours runs: zod (the workflow's own `import { z } from
 * "zod"`) and Drizzle's SQLite core (the output tables). bench/compare times it spawn to exit with
 * the same preload as the `smithers up` row, so the two rows differ by exactly our code and the run.
 * The root node_modules by path: bench/node_modules may hold the peer's copies (see ../zod.ts).
 */
import "../../node_modules/zod/index.js";
import "../../node_modules/drizzle-orm/sqlite-core/index.js";
