/** Automatic JSX runtime (`jsxImportSource: "smithers"`). */
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
  // biome-ignore lint/suspicious/noEmptyInterface: empty on purpose: no lowercase intrinsic tags exist
  interface IntrinsicElements {}
}

export type { SmithersNode };
