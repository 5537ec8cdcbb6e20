import { useState } from "preact/hooks";

/** Moving between the dashboard's pages without reloading (history.pushState; main.tsx listens to popstate). */
export function navigate(href: string): void {
  history.pushState(null, "", href);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** An onClick for a link that navigates inside the page, leaving modified clicks (new tab…) to the browser. */
export function linkClick(href: string) {
  return (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
}

/** A query parameter as state, written back to the URL (replaceState) so a filtered view can be linked. */
export function useQueryParam(name: string): [string, (v: string) => void] {
  const [value, setValue] = useState(() => new URLSearchParams(location.search).get(name) ?? "");
  const update = (v: string) => {
    const params = new URLSearchParams(location.search);
    if (v === "") params.delete(name);
    else params.set(name, v);
    const query = params.toString();
    history.replaceState(null, "", `${location.pathname}${query ? `?${query}` : ""}`);
    setValue(v);
  };
  return [value, update];
}
