import { describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { definitionSignature, workflowCodeHash } from "../../src/engine/workflow/code-pin.ts";
import type { PlanTask } from "../../src/jsx/index.ts";
import { tempDir } from "../helpers.ts";

const SRC = resolve(import.meta.dir, "../../src");
/** The zod src/ uses, by path: a file in a temporary directory has no node_modules of its own. */
const ZOD = resolve(import.meta.dir, "../../node_modules/zod/index.js");

describe("workflowCodeHash", () => {
  test("covers the workflow's file and its local imports, not Smithers' own sources imported by path", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "helper.ts"), "export const n = 1;\n");
    writeFileSync(join(dir, "flow.ts"), `import { runWorkflow } from "${SRC}/index.ts";\nimport { n } from "./helper.ts";\nexport { runWorkflow, n };\n`);
    const { files } = workflowCodeHash(join(dir, "flow.ts"))!;
    expect(files).toEqual([join(dir, "flow.ts"), join(dir, "helper.ts")]);
  });

  test("follows a local import in either quote, a re-export and an import(); a file of package imports alone covers itself", () => {
    const dir = tempDir();
    for (const name of ["a.ts", "b.ts", "c.ts"]) writeFileSync(join(dir, name), "export const x = 1;\n");
    writeFileSync(join(dir, "flow.ts"), `import { x } from './a.ts';\nexport * from "./b.ts";\nexport const later = () => import("./c.ts");\nexport { x };\n`);
    expect(workflowCodeHash(join(dir, "flow.ts"))?.files).toEqual(["flow.ts", "a.ts", "b.ts", "c.ts"].map((name) => join(dir, name)));
    writeFileSync(join(dir, "packages.ts"), `import { z } from "zod";\nimport { Database } from "bun:sqlite";\nexport { z, Database };\n`);
    expect(workflowCodeHash(join(dir, "packages.ts"))?.files).toEqual([join(dir, "packages.ts")]);
  });

  test("follows a module of the parent directory and one by absolute path, and not a string that only starts with a dot", () => {
    const dir = tempDir();
    mkdirSync(join(dir, "flows"));
    for (const name of ["up.ts", "abs.ts"]) writeFileSync(join(dir, name), "export const x = 1;\n");
    writeFileSync(join(dir, "flows", "up-flow.ts"), `import { x } from "../up.ts";\nexport { x };\n`);
    writeFileSync(join(dir, "flows", "abs-flow.ts"), `import { x } from "${join(dir, "abs.ts")}";\nexport { x };\n`);
    expect(workflowCodeHash(join(dir, "flows", "up-flow.ts"))?.files).toEqual([join(dir, "flows", "up-flow.ts"), join(dir, "up.ts")]);
    expect(workflowCodeHash(join(dir, "flows", "abs-flow.ts"))?.files).toEqual([join(dir, "flows", "abs-flow.ts"), join(dir, "abs.ts")]);
    writeFileSync(join(dir, "dots.ts"), `export const ext = ".ts";\nexport const half = '.5';\n`);
    expect(workflowCodeHash(join(dir, "dots.ts"))?.files).toEqual([join(dir, "dots.ts")]);
  });

  test("has no hash while the workflow's file is gone, and the file's hash again once it is back", () => {
    const dir = tempDir();
    const file = join(dir, "flow.ts");
    writeFileSync(file, "export const x = 1;\n");
    const first = workflowCodeHash(file)?.hash;
    rmSync(file);
    expect(workflowCodeHash(file)).toBeUndefined();
    writeFileSync(file, "export const x = 1;\n");
    expect(workflowCodeHash(file)?.hash).toBe(first!);
  });
});

describe("smithers()", () => {
  test("names the file that called it as the workflow's source, also when a helper in another file calls it", async () => {
    const dir = tempDir();
    const kit = `import { createSmithers } from "${SRC}/index.ts";\nimport { z } from "${ZOD}";\nexport const kit = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: ":memory:" });\n`;
    writeFileSync(
      join(dir, "kit.ts"),
      `${kit}export function make() {\n  const wf = kit.smithers(() => null as never);\n  void wf.name.length;\n  return wf;\n}\n`,
    );
    writeFileSync(join(dir, "flow.ts"), `import { kit } from "./kit.ts";\nexport default kit.smithers(() => null as never);\n`);
    const direct = (await import(join(dir, "flow.ts"))) as { default: { sourcePath?: string } };
    const viaHelper = (await import(join(dir, "kit.ts"))) as { make: () => { sourcePath?: string } };
    expect([direct.default.sourcePath, viaHelper.make().sourcePath]).toEqual([join(dir, "flow.ts"), join(dir, "kit.ts")]);
  });
});

describe("definitionSignature", () => {
  // The fields definitionSignature reads, for a static task writing `schema`'s table.
  const task = (outputSchema: z.ZodType, staticValue: unknown = { n: 1 }) =>
    ({ mode: "static", outputSchema, staticValue, dependsOn: [] }) as unknown as PlanTask;
  const sig = (schema: z.ZodType, value?: unknown) => definitionSignature(task(schema, value), "out");

  test("the same definition built twice signs the same; a different type, bound, default or refinement signs differently", () => {
    const base = sig(z.object({ n: z.number() }));
    expect(sig(z.object({ n: z.number() }))).toBe(base);
    const others = [
      sig(z.object({ n: z.string() })),
      sig(z.object({ m: z.number() })),
      sig(z.object({ n: z.number().min(1) })),
      sig(z.object({ n: z.number().min(2) })),
      sig(z.object({ n: z.number().default(3) })),
      sig(z.object({ n: z.number().refine((v) => v > 0) })),
      sig(z.object({ n: z.number().refine((v) => v > 1) })),
      sig(z.object({ n: z.number().optional() })),
      sig(z.object({ n: z.number(), note: z.string().regex(/^a/) })),
      sig(z.object({ n: z.number(), note: z.string().regex(/^b/) })),
      sig(z.object({ n: z.number() }), { n: 2 }),
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
    for (const s of others) expect(s).toMatch(/^[0-9a-f]{16}$/);
  });

  test("a recursive schema signs (and the same recursion built twice signs the same)", () => {
    const tree = () => {
      const Node: z.ZodType = z.object({
        name: z.string(),
        get children() {
          return z.array(Node);
        },
      });
      return Node;
    };
    expect(sig(tree(), { name: "a", children: [] })).toBe(sig(tree(), { name: "a", children: [] }));
    expect(sig(tree(), { name: "a", children: [] })).not.toBe(sig(z.object({ name: z.string() }), { name: "a", children: [] }));
  });
});
