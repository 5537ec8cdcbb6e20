/**
 * What `smithers init` writes: the files of templates/init (a tsconfig.json with the JSX settings,
 * a workflow with an input schema and two tasks, its test with the test kit; type-checked and
 * tested with the repository), plus package.json scripts and .gitignore lines.
 */
import { join } from "node:path";

/** The template directory, shipped in the package next to src/. */
export const TEMPLATE_DIR = join(import.meta.dir, "..", "..", "templates", "init");

/** The files init copies from TEMPLATE_DIR, by their path in the project. */
export const TEMPLATE_FILES = ["tsconfig.json", "workflows/hello.tsx", "test/hello.test.ts"];

/** Lines the project's .gitignore needs: the database and its journal files, and node_modules. */
export const GITIGNORE_LINES = ["node_modules/", "smithers.db", "smithers.db-*"];

/** The package.json scripts init adds. */
export const SCRIPTS: Record<string, string> = {
  start: `smithers up workflows/hello.tsx --input '{"name":"Ada"}'`,
  dev: "smithers serve --workflows workflows",
  test: "smithers test",
};

/** The test script `npm init -y` writes: a placeholder init may replace. */
export const NPM_PLACEHOLDER_TEST = 'echo "Error: no test specified" && exit 1';
