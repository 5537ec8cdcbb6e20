/** Automatic JSX runtime (`jsxImportSource: "smithers-workflows"`). */
import { makeElement, Fragment, type Component, type SmithersElement, type SmithersNode } from "./element.ts";

export { Fragment };

export function jsx(type: SmithersElement["type"], props: Record<string, unknown>, key?: string | number): SmithersElement {
  return makeElement(type, props ?? {}, key);
}

export const jsxs = jsx;

export declare namespace JSX {
  // biome-ignore lint/suspicious/noExplicitAny: JSX.Element must admit an element of any component (see Component)
  type Element = SmithersElement<any>;
  // biome-ignore lint/suspicious/noExplicitAny: props are contravariant, so only `any` admits every component
  type ElementType = string | Component<any> | typeof Fragment;
  interface ElementChildrenAttribute {
    // biome-ignore lint/complexity/noBannedTypes: TypeScript reads only this property's name (the children prop)
    children: {};
  }
  interface IntrinsicAttributes {
    key?: string | number | null;
  }
  /**
   * The lowercase tags a prompt may hold (what Markdown and MDX compile to); inside a Task they
   * are written back as Markdown text (see prompt-text.ts). They are not workflow components.
   */
  interface IntrinsicElements {
    p: PromptTagProps;
    h1: PromptTagProps;
    h2: PromptTagProps;
    h3: PromptTagProps;
    h4: PromptTagProps;
    h5: PromptTagProps;
    h6: PromptTagProps;
    strong: PromptTagProps;
    b: PromptTagProps;
    em: PromptTagProps;
    i: PromptTagProps;
    del: PromptTagProps;
    code: PromptTagProps & { className?: string };
    pre: PromptTagProps;
    blockquote: PromptTagProps;
    a: PromptTagProps & { href?: string };
    ul: PromptTagProps;
    ol: PromptTagProps;
    li: PromptTagProps;
    br: PromptTagProps;
    hr: PromptTagProps;
  }
}

export type { SmithersNode };

/** Props of a prompt tag (see JSX.IntrinsicElements). */
export type PromptTagProps = { children?: SmithersNode };
