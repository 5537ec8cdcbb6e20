/** `.mdx` prompt files, compiled by smithers' loader (see mdx/index.ts): a component of its props. */
declare module "*.mdx" {
  import type { SmithersNode } from "smithers-workflows/jsx-runtime";

  // biome-ignore lint/suspicious/noExplicitAny: an MDX file reads whatever props it is given
  const Prompt: (props: Record<string, any>) => SmithersNode;
  export default Prompt;
}
