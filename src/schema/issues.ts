/** Zod issues as text: the one formatter for run input, task output and agent replies. */
import type { z } from "zod";

/** `items[0].name`: keys as a property path, indexes in brackets, odd keys quoted; `(root)` when empty. */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return "(root)";
  return path
    .map((key, i) => {
      if (typeof key === "number") return `[${key}]`;
      const name = String(key);
      if (!/^[A-Za-z_$][\w$]*$/.test(name)) return `[${JSON.stringify(name)}]`;
      return i === 0 ? name : `.${name}`;
    })
    .join("");
}

function formatIssue(issue: z.core.$ZodIssue, prefix: readonly PropertyKey[]): string {
  const path = [...prefix, ...issue.path];
  let line = `${formatIssuePath(path)}: ${issue.message}`;
  // Zod reports a failed union as a bare "Invalid input"; the branches say what was expected.
  if (issue.code === "invalid_union" && issue.errors.length > 0) {
    const branches = issue.errors.map((branch, i) => `option ${i + 1}: ${branch.map((sub) => formatIssue(sub, path)).join(", ")}`);
    line += ` (${branches.join("; ")})`;
  }
  return line;
}

/**
 * Zod issues as `path: message` each, joined by `separator`.
 * @example formatZodIssues(parsed.error.issues, "; ") // "a: Invalid input: expected string, received number; b[1]: …"
 */
export function formatZodIssues(issues: readonly z.core.$ZodIssue[], separator = "\n"): string {
  return issues.map((issue) => formatIssue(issue, [])).join(separator);
}
