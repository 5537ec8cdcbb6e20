/**
 * The zod module our engine (src/) uses, for bench code that builds schemas for it.
 *
 * A bare `import { z } from "zod"` under bench/ finds bench/node_modules/zod first once the peer
 * is installed (`npm install --prefix bench`): a second copy at run time, and a second copy of
 * zod's types, which makes `tsc` run out of memory comparing them. So the types come from the
 * declaration file src/ sees (node_modules/zod/index.d.cts) and the module is loaded from the root
 * node_modules by a computed specifier, which the type checker does not follow.
 */
import type { z as Zod } from "../node_modules/zod/index.cjs";

const ROOT_ZOD = "../node_modules/zod/index.js";
export const { z } = (await import(ROOT_ZOD)) as { z: typeof Zod };
