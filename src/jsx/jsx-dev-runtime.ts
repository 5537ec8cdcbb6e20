/** Development JSX runtime: same elements; the extra dev arguments are accepted and ignored. */
import { makeElement, Fragment, type SmithersElement } from "./element.ts";

export { Fragment };
export type { JSX } from "./jsx-runtime.ts";

export function jsxDEV(
  type: SmithersElement["type"],
  props: Record<string, unknown>,
  key?: string | number,
  _isStaticChildren?: boolean,
  _source?: unknown,
  _self?: unknown,
): SmithersElement {
  return makeElement(type, props ?? {}, key);
}
