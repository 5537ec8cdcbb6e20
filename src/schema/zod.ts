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

/**
 * An object schema's shape whose fields are made when the shape is first read, each once: zod
 * resolves an object's getter fields then (as it does recursive fields), so a schema the package
 * exports costs its object at import and its fields only when a parse or a look at them needs them.
 * @example export const pointSchema = z.object(lazyShape({ x: () => z.number(), y: () => z.number() }));
 */
export function lazyShape<const T extends Record<string, () => Zod.z.ZodType>>(fields: T): { [K in keyof T]: ReturnType<T[K]> } {
  const shape = {} as { [K in keyof T]: ReturnType<T[K]> };
  for (const [key, make] of Object.entries(fields)) {
    let made: Zod.z.ZodType | undefined;
    Object.defineProperty(shape, key, { enumerable: true, configurable: true, get: () => (made ??= make()) });
  }
  return shape;
}
