/** A workflow file that fails to load says where: file:line:column of the cause, for the CLI to print (exit 2). */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadWorkflowFile } from "../../src/engine/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { smithers } from "../e2e/cli-helpers.ts";
import { tempDbPath, tempDir } from "../helpers.ts";

async function loadError(file: string): Promise<SmithersError> {
  const error = await loadWorkflowFile(file).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!SmithersError.is(error, "WORKFLOW_LOAD_FAILED")) throw new Error(`expected WORKFLOW_LOAD_FAILED, got ${String(error)}`);
  return error;
}

describe("loadWorkflowFile", () => {
  test("a syntax error names its file, line and column, and shows the line with a caret", async () => {
    const file = join(tempDir(), "syntax.tsx");
    writeFileSync(file, "export default function () {\n  const x = ;\n}\n");
    const error = await loadError(file);
    expect(error.details.location).toEqual({ file, line: 2, column: 13 });
    expect(error.message).toContain(`${file}:2:13: Unexpected ;`);
    expect(error.message).toContain("  const x = ;\n              ^");
  });

  test("an import that does not resolve names the importing line", async () => {
    const file = join(tempDir(), "missing.tsx");
    writeFileSync(file, '// a workflow\nimport { nope } from "./not-there.ts";\nexport default nope;\n');
    const error = await loadError(file);
    expect(error.details.location).toMatchObject({ file, line: 2 });
    expect(error.message).toContain("not-there.ts");
  });

  test("a throw while the module runs names the author's line", async () => {
    const file = join(tempDir(), "throws.tsx");
    writeFileSync(file, "const n = 1;\nif (n) throw new Error('no config');\nexport default n;\n");
    const error = await loadError(file);
    expect(error.details.location).toMatchObject({ file, line: 2 });
    expect(error.message).toContain(`${file}:2:`);
    expect(error.message).toContain("no config");
  });

  test("smithers up on such a file exits 2 with the location on one line", () => {
    const file = join(tempDir(), "bad.tsx");
    writeFileSync(file, "export default function () {\n  const x = ;\n}\n");
    const r = smithers(["up", file, "--db", tempDbPath()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`WORKFLOW_LOAD_FAILED: Could not load ${file}: ${file}:2:13: Unexpected ;`);
  });
});
