/** The element tree the JSX runtime builds: plain data, no React. */
export const SMITHERS_ELEMENT = Symbol.for("smithers.element");

// biome-ignore lint/suspicious/noExplicitAny: props are contravariant, so only `any` admits every component as Component
export type Component<P = any> = (props: P) => SmithersNode;

// biome-ignore lint/suspicious/noExplicitAny: the default must admit an element of any component (see Component)
export type SmithersElement<P = any> = {
  readonly $$typeof: typeof SMITHERS_ELEMENT;
  readonly type: string | Component<P> | typeof Fragment;
  readonly props: P;
  readonly key: string | null;
};

/** Anything JSX may produce or hold as a child. Tasks also take functions and plain objects as children. */
// biome-ignore lint/suspicious/noExplicitAny: a child may be an element of any component (see Component)
export type SmithersNode = SmithersElement<any> | string | number | boolean | null | undefined | readonly SmithersNode[];

export const Fragment: unique symbol = Symbol.for("smithers.fragment") as never;

export function isElement(value: unknown): value is SmithersElement {
  return typeof value === "object" && value !== null && (value as { $$typeof?: unknown }).$$typeof === SMITHERS_ELEMENT;
}

export function makeElement<P>(type: SmithersElement<P>["type"], props: P, key?: string | number | null): SmithersElement<P> {
  return { $$typeof: SMITHERS_ELEMENT, type, props, key: key === undefined || key === null ? null : String(key) };
}

/**
 * Classic `createElement(type, config, ...children)`. The automatic runtime falls back to it
 * (imported from the package root) when `key` comes after a spread, so it takes `key` out of
 * `config` as React does.
 */
export function createElement(type: SmithersElement["type"], config: Record<string, unknown> | null, ...children: unknown[]): SmithersElement {
  const { key, ...props } = config ?? {};
  if (children.length === 1) props.children = children[0];
  else if (children.length > 1) props.children = children;
  return makeElement(type, props, key as string | number | null | undefined);
}
