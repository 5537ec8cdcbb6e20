/**
 * Light and dark themes: the system's preference by default (prefers-color-scheme), or the one
 * chosen with the header's toggle, kept in localStorage and set as `data-theme` on <html>.
 */
import { useState } from "preact/hooks";

const KEY = "smithers.theme";
type Theme = "system" | "light" | "dark";
const NEXT: Record<Theme, Theme> = { system: "light", light: "dark", dark: "system" };

function stored(): Theme {
  const t = localStorage.getItem(KEY);
  return t === "light" || t === "dark" ? t : "system";
}

function apply(theme: Theme): void {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

/** Applies the stored choice (call once at start, before the first render). */
export function applyStoredTheme(): void {
  apply(stored());
}

export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(stored);
  const change = () => {
    const next = NEXT[theme];
    if (next === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, next);
    apply(next);
    setTheme(next);
  };
  return (
    <button type="button" class="theme-toggle" onClick={change} aria-label={`Theme: ${theme}. Switch to ${NEXT[theme]}`}>
      Theme: {theme}
    </button>
  );
}
