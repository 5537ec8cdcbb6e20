/**
 * zod's `z` for code that needs it only when called: loaded then, not at import. Every workflow
 * imports zod itself, so `up` pays for it anyway; a command that runs none (`ps`, `inspect`,
 * `supervise` with nothing due) would pay ~20 ms of its start for a library it never calls.
 * A module that builds schemas at import keeps its static `import { z } from "zod"`.
 */
import type * as Zod from "zod";

let loaded: typeof Zod.z | undefined;

export function zod(): typeof Zod.z {
  // The module an `import` of zod resolves to: a bare require("zod") would resolve zod's `require`
  // export, its CommonJS build, a second zod (~45 ms to load) beside the one workflows import.
  loaded ??= (require(Bun.resolveSync("zod", import.meta.dir)) as typeof Zod).z;
  return loaded;
}

/** A zod enum of `values`, built on its first call (for a module that must not load zod at import). */
export function lazyEnum<const T extends readonly [string, ...string[]]>(values: T): () => Zod.z.ZodEnum<{ [K in T[number]]: K }> {
  let schema: Zod.z.ZodEnum<{ [K in T[number]]: K }> | undefined;
  return () => {
    schema ??= zod().enum(values);
    return schema;
  };
}
