/** Automatic JSX runtime (`jsxImportSource: "smithers"`). */
import { makeElement, Fragment, type Component, type SmithersElement, type SmithersNode } from "./element.ts";

export { Fragment };

export function jsx(type: SmithersElement["type"], props: Record<string, unknown>, key?: string | number): SmithersElement {
  return makeElement(type, props ?? {}, key);
}

export const jsxs = jsx;

export declare namespace JSX {
  type Element = SmithersElement<any>;
  type ElementType = string | Component<any> | typeof Fragment;
  interface ElementChildrenAttribute {
    children: {};
  }
  interface IntrinsicAttributes {
    key?: string | number | null;
  }
  interface IntrinsicElements {}
}

export type { SmithersNode };
