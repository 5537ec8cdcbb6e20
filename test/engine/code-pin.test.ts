import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { workflowCodeHash } from "../../src/engine/workflow/code-pin.ts";
import { tempDir } from "../helpers.ts";

const SRC = resolve(import.meta.dir, "../../src");

describe("workflowCodeHash", () => {
  test("covers the workflow's file and its local imports, not Smithers' own sources imported by path", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "helper.ts"), "export const n = 1;\n");
    writeFileSync(join(dir, "flow.ts"), `import { runWorkflow } from "${SRC}/index.ts";\nimport { n } from "./helper.ts";\nexport { runWorkflow, n };\n`);
    const { files } = workflowCodeHash(join(dir, "flow.ts"));
    expect(files).toEqual([join(dir, "flow.ts"), join(dir, "helper.ts")]);
  });
});
