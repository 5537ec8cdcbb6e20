/**
 * `.mdx` prompt files as components: `import Review from "./review.mdx"` gives a function
 * component whose Markdown, compiled by @mdx-js/mdx against the smithers JSX runtime, becomes a
 * Task's prompt text (see jsx/prompt-text.ts); `{props.x}` reads its props, and `props.schema`
 * is the task's output schema described for the agent.
 *
 * `smithers up` registers the loader itself; for scripts and tests, preload `smithers-workflows/mdx-preload`
 * (bunfig.toml: `preload = ["smithers-workflows/mdx-preload"]`) or call `Bun.plugin(mdxPlugin())`.
 */
import type { BunPlugin } from "bun";

/** A Bun plugin that compiles `.mdx` files to smithers prompt components. */
export function mdxPlugin(): BunPlugin {
  return {
    name: "smithers-mdx",
    setup(build) {
      build.onLoad({ filter: /\.mdx$/ }, async (args) => {
        const { compile } = await import("@mdx-js/mdx");
        const source = await Bun.file(args.path).text();
        const compiled = await compile(source, { jsxImportSource: "smithers-workflows", development: false });
        return { contents: String(compiled), loader: "js" };
      });
    },
  };
}

let registered = false;

/** Registers the `.mdx` loader in this process, once. */
export function registerMdx(): void {
  if (registered) return;
  registered = true;
  void Bun.plugin(mdxPlugin()); // setup is synchronous: nothing to await
}
