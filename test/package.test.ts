import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json";
import { BUNDLE_CLI, BUNDLE_CONDITION, bundleName, packedManifest } from "../scripts/build-bundle.ts";

const root = join(import.meta.dir, "..");

describe("package", () => {
  test("is the ESM package `smithers-workflows` with `smithers` and `smithers-workflows` bins (a Node launcher that brings Bun) and the root and JSX runtime exports", () => {
    expect(pkg.name).toBe("smithers-workflows");
    expect(pkg.type).toBe("module");
    expect(pkg.bin).toEqual({ smithers: "bin/smithers.js", "smithers-workflows": "bin/smithers.js" });
    expect(Object.keys(pkg.exports)).toEqual(expect.arrayContaining([".", "./jsx-runtime", "./jsx-dev-runtime"]));
  });

  test("`npm test` runs the format check, tsc and the linter before the tests, then the engine suite on PostgreSQL, and CI installs PostgreSQL with pgvector, Chromium, iproute2, Prometheus, the agent CLIs and bubblewrap then runs exactly the README's command", () => {
    // --timeout: Bun 1.4 ignores bunfig's [test] timeout, and 5 s cuts off subprocess tests on a loaded machine.
    expect(pkg.scripts.test).toBe("npm run check && bun test --timeout 20000 && npm run test:pg-engine");
    expect(pkg.scripts["test:pg-engine"]).toBe("SMITHERS_TEST_BACKEND=postgres bun test --timeout 20000 --preload ./test/support/pg-preload.ts test/engine");
    expect(pkg.scripts.check).toBe("biome ci --colors=off --error-on-warnings && tsc --noEmit && tsc --noEmit -p src/ui && eslint .");
    const ciCommands = readFileSync(join(root, ".ci/run"), "utf8")
      .split("\n")
      .filter((line) => line.trim() && !line.startsWith("#") && !/^(set|cd) /.test(line));
    expect(ciCommands).toEqual([
      "scripts/postgres/ensure.sh >/dev/null",
      "scripts/postgres/ensure-pgvector.sh >/dev/null",
      "scripts/chromium/ensure.sh >/dev/null",
      "scripts/netns/ensure.sh >/dev/null",
      "scripts/prometheus/ensure.sh >/dev/null",
      "scripts/agent-clis/ensure.sh >/dev/null",
      "scripts/bubblewrap/ensure.sh >/dev/null",
      "npm install && npm test",
    ]);
    expect(readFileSync(join(root, "README.md"), "utf8")).toContain("npm install && npm test ");
  });

  test("every export names its bundled file under the smithers-bundle condition and its source as the default, and the bundle ships and is built at pack time", () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      expect(Object.keys(target)).toEqual([BUNDLE_CONDITION, "default"]);
      expect(target[BUNDLE_CONDITION as keyof typeof target]).toBe(`./dist/bundle/${bundleName(subpath)}.js`);
      expect(target.default).toMatch(/^\.\/src\/.+\.ts$/);
    }
    expect(pkg.files).toContain("dist/bundle");
    expect([pkg.scripts.prepack, pkg.scripts.postpack]).toEqual(["bun scripts/build-bundle.ts --pack", "bun scripts/build-bundle.ts --clean"]);
    const launcher = readFileSync(join(root, "bin/smithers.js"), "utf8");
    expect(launcher).toContain(`--conditions=${BUNDLE_CONDITION}`);
    expect(launcher).toContain(`dist/bundle/${BUNDLE_CLI}`);
  });

  test("the packed package.json defaults every export to its bundled file, with its source as its types, and changes nothing else", () => {
    const text = readFileSync(join(root, "package.json"), "utf8");
    const packed = JSON.parse(packedManifest(text)) as { exports: Record<string, unknown> };
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      const bundled = `./dist/bundle/${bundleName(subpath)}.js`;
      expect(packed.exports[subpath]).toEqual({ types: target.default, [BUNDLE_CONDITION]: bundled, default: bundled });
    }
    expect({ ...packed, exports: pkg.exports }).toEqual(JSON.parse(text));
    // An export without a bundled file cannot be defaulted to one: the pack stops.
    const broken = JSON.parse(text);
    broken.exports["./extra"] = "./src/extra.ts";
    expect(() => packedManifest(JSON.stringify(broken))).toThrow("export ./extra names no smithers-bundle file");
  });

  test("the package name resolves to the same modules as the sources, so workflows and the engine share state", async () => {
    const viaName = await import("smithers-workflows");
    const viaPath = await import("../src/index.ts");
    expect(viaName.createSmithers).toBe(viaPath.createSmithers);
    const runtime = await import("smithers-workflows/jsx-runtime");
    const dev = await import("smithers-workflows/jsx-dev-runtime");
    expect(typeof runtime.jsx).toBe("function");
    expect(typeof dev.jsxDEV).toBe("function");
    expect(runtime.Fragment).toBe(dev.Fragment);
  });

  test("depends on drizzle-orm, zod 4, effect, fast-xml-parser, croner, @mdx-js/mdx, diff, hono, postgres, prom-client and the official OpenTelemetry trace packages, and not on React", () => {
    // The OpenTelemetry SDK and exporters are imported only when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (test/e2e/traces-cli.test.ts).
    expect(Object.keys(pkg.dependencies).sort()).toEqual([
      "@mdx-js/mdx",
      "@opentelemetry/api",
      "@opentelemetry/core",
      "@opentelemetry/exporter-trace-otlp-http",
      "@opentelemetry/exporter-trace-otlp-proto",
      "@opentelemetry/resources",
      "@opentelemetry/sdk-trace-base",
      "bun",
      "croner",
      "diff",
      "drizzle-orm",
      "effect",
      "fast-xml-parser",
      "hono",
      "postgres",
      "prom-client",
    ]);
    // zod is the user's: a peer (npm installs it when absent), so their schemas and ours are one zod.
    expect(pkg.peerDependencies.zod).toMatch(/^\^4/);
    // ai is the user's too, and optional: Smithers only shapes its tools like the SDK's (no import of
    // it), so an install without AI SDK agents gets none of ai 7's packages, which want Node 22 (EBADENGINE on 20).
    expect([pkg.peerDependencies.ai, pkg.peerDependenciesMeta.ai]).toEqual(["^6.0.0 || ^7.0.0", { optional: true }]);
    const all = { ...pkg.dependencies, ...pkg.devDependencies };
    expect(Object.keys(all).filter((name) => /^react(-dom)?$|^@types\/react/.test(name))).toEqual([]);
  });

  test("the dashboard's Preact is needed only to build it: a devDependency, and its bundle is in the package's files", () => {
    expect(pkg.devDependencies.preact).toMatch(/^\^11/);
    expect(Object.keys(pkg.dependencies)).not.toContain("preact");
    expect(pkg.scripts.prepare).toBe("bun scripts/build-dashboard.ts");
    expect(pkg.files).toEqual(expect.arrayContaining(["src", "dist/dashboard"]));
  });
});
