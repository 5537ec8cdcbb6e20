/** `smithers init` scaffolds without overwriting, and `smithers test` is `bun test` with its exit code. */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT, main } from "../../src/cli/index.ts";
import { cli } from "../e2e/cli-helpers.ts";

async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const fresh = () => mkdtempSync(join(tmpdir(), "smithers-init-"));
const json = (path: string) => JSON.parse(readFileSync(path, "utf8"));

describe("smithers init", () => {
  test("writes the tsconfig, workflow, test, package.json with the scripts and .gitignore into a new directory", async () => {
    const dir = join(fresh(), "my-flows");
    const { code, out } = await run(["init", dir]);
    expect(code).toBe(EXIT.ok);
    expect(out).toContain("npm install");
    for (const file of ["tsconfig.json", "workflows/hello.tsx", "test/hello.test.ts", "package.json", ".gitignore"])
      expect(existsSync(join(dir, file))).toBe(true);
    expect(json(join(dir, "tsconfig.json")).compilerOptions).toMatchObject({ jsx: "react-jsx", jsxImportSource: "smithers-workflows" });
    const pkg = json(join(dir, "package.json"));
    expect(pkg.name).toBe("my-flows");
    expect(Object.keys(pkg.dependencies).sort()).toEqual(["smithers-workflows", "zod"]);
    expect(pkg.scripts).toEqual({
      start: `smithers up workflows/hello.tsx --input '{"name":"Ada"}'`,
      dev: "smithers serve --workflows workflows",
      test: "smithers test",
    });
    expect(readFileSync(join(dir, ".gitignore"), "utf8").split("\n")).toEqual(expect.arrayContaining(["smithers.db", "smithers.db-*", "node_modules/"]));
  });

  test("refuses to overwrite a file or a script: FILE_EXISTS names them and nothing is written; --force overwrites", async () => {
    const dir = fresh();
    mkdirSync(join(dir, "workflows"));
    writeFileSync(join(dir, "workflows/hello.tsx"), "mine");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "x", scripts: { start: "node server.js", build: "tsc" } }));
    const refused = await run(["init", dir]);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain("FILE_EXISTS");
    expect(refused.err).toContain("workflows/hello.tsx");
    expect(refused.err).toContain('package.json script "start"');
    expect(existsSync(join(dir, "tsconfig.json"))).toBe(false);
    expect(readFileSync(join(dir, "workflows/hello.tsx"), "utf8")).toBe("mine");
    expect(json(join(dir, "package.json")).scripts.start).toBe("node server.js");

    const forced = await run(["init", dir, "--force"]);
    expect(forced.code).toBe(EXIT.ok);
    expect(readFileSync(join(dir, "workflows/hello.tsx"), "utf8")).toContain("createSmithers");
    const pkg = json(join(dir, "package.json"));
    expect(pkg.scripts).toMatchObject({ start: expect.stringContaining("smithers up"), build: "tsc", test: "smithers test" });
    expect(pkg.dependencies).toBeUndefined(); // an existing package.json gets scripts only
  });

  test("an existing package.json with npm's placeholder test script, and a .gitignore, are added to, not refused", async () => {
    const dir = fresh();
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "y", scripts: { test: 'echo "Error: no test specified" && exit 1' } }));
    writeFileSync(join(dir, ".gitignore"), "dist\nsmithers.db");
    const { code } = await run(["init", dir]);
    expect(code).toBe(EXIT.ok);
    expect(json(join(dir, "package.json")).scripts.test).toBe("smithers test");
    expect(readFileSync(join(dir, ".gitignore"), "utf8")).toBe("dist\nsmithers.db\nnode_modules/\nsmithers.db-*\n");
    expect((await run(["init", dir, "extra"])).code).toBe(2);
  });
});

describe("smithers test", () => {
  test("runs bun test in the current directory with the given arguments, and exits with its code", () => {
    const dir = fresh();
    writeFileSync(join(dir, "ok.test.ts"), `import { test, expect } from "bun:test"; test("ok", () => expect(1).toBe(1));`);
    writeFileSync(join(dir, "bad.test.ts"), `import { test, expect } from "bun:test"; test("bad", () => expect(1).toBe(2));`);
    const spawn = (args: string[]) => Bun.spawnSync([process.execPath, cli, "test", ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    const one = spawn(["ok.test.ts"]);
    expect(one.stderr.toString()).toContain("1 pass");
    expect(one.exitCode).toBe(0);
    const all = spawn([]);
    expect(all.stderr.toString()).toContain("1 fail");
    expect(all.exitCode).toBe(1);
  });
});
