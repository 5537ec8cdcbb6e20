/**
 * Bundles the dashboard (src/ui, Preact) with Bun.build into dist/dashboard: assets/ with
 * content-hashed names and an index.html that loads them, what `smithers serve` serves.
 * Run by `npm install` (the package's `prepare` script) and by the browser tests when missing.
 *
 *   bun scripts/build-dashboard.ts [outDir]
 */
import { mkdir, rm } from "node:fs/promises";
import { basename, join } from "node:path";

const ROOT = join(import.meta.dir, "..");
export const DASHBOARD_OUT = join(ROOT, "dist", "dashboard");

export async function buildDashboard(outDir = DASHBOARD_OUT): Promise<{ files: string[] }> {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(join(outDir, "assets"), { recursive: true });
  const result = await Bun.build({
    entrypoints: [join(ROOT, "src", "ui", "main.tsx")],
    outdir: join(outDir, "assets"),
    target: "browser",
    minify: true,
    sourcemap: "linked",
    tsconfig: join(ROOT, "src", "ui", "tsconfig.json"),
    naming: { entry: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]" },
  });
  if (!result.success) throw new AggregateError(result.logs, "The dashboard failed to build");
  const files = result.outputs.map((o) => basename(o.path));
  const script = files.find((f) => f.endsWith(".js"));
  const styles = files.filter((f) => f.endsWith(".css"));
  if (!script) throw new Error("The dashboard build wrote no script");
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Smithers</title>
<link rel="icon" href="data:,">
${styles.map((f) => `<link rel="stylesheet" href="/assets/${f}">`).join("\n")}
<script type="module" src="/assets/${script}"></script>
</head>
<body><div id="app"></div></body>
</html>
`;
  await Bun.write(join(outDir, "index.html"), html);
  return { files: ["index.html", ...files.map((f) => `assets/${f}`)] };
}

if (import.meta.main) {
  const { files } = await buildDashboard(process.argv[2] ?? DASHBOARD_OUT);
  console.log(`dashboard built: ${files.join(", ")}`);
}
