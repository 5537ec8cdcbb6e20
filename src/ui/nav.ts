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
