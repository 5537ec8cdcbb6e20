/**
 * Confining the built-in tools to a root directory. A path is judged by where it really leads:
 * symlinks are resolved (for a path that does not exist yet, through its nearest existing
 * ancestor, following a dangling link to its target), so a link inside the root that points
 * outside is refused like `../`. This guards against an agent's mistakes, not an adversary
 * racing the check with its own symlinks.
 */
import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { SmithersError } from "../errors/index.ts";

/** Link hops followed before giving up, as the kernel's ELOOP limit does. */
const MAX_LINK_HOPS = 40;

function errnoCode(error: unknown): unknown {
  return typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
}

/** Where `path` leads on disk, whether or not it exists yet. */
function realDestination(path: string, hops = 0): string {
  try {
    return realpathSync(path);
  } catch (error) {
    const code = errnoCode(error);
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  let link = false;
  try {
    link = lstatSync(path).isSymbolicLink();
  } catch {
    // missing: resolve through its parent below
  }
  if (link) {
    if (hops >= MAX_LINK_HOPS) throw new SmithersError("TOOL_PATH_OUTSIDE_ROOT", `Too many symbolic links at ${path}`);
    return realDestination(resolve(dirname(path), readlinkSync(path)), hops + 1);
  }
  const parent = dirname(path);
  return parent === path ? path : join(realDestination(parent, hops), basename(path));
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * The real absolute path `path` (relative to `rootDir`, or absolute) leads to; throws
 * TOOL_PATH_OUTSIDE_ROOT when that is outside the real `rootDir`.
 * @example
 * resolveInRoot("/repo", "src/a.ts"); // "/repo/src/a.ts"
 */
export function resolveInRoot(rootDir: string, path: string): string {
  const root = realRoot(rootDir);
  const real = realDestination(resolve(root, path));
  if (!isInside(root, real)) {
    throw new SmithersError("TOOL_PATH_OUTSIDE_ROOT", `Path "${path}" leads to ${real}, outside the tools' root ${root}`, { path, rootDir: root });
  }
  return real;
}

/** The root directory with its symlinks resolved: what resolved paths are relative to. */
export function realRoot(rootDir: string): string {
  try {
    return realpathSync(rootDir);
  } catch (error) {
    throw new SmithersError("TOOL_FAILED", `The tools' root directory ${rootDir} cannot be resolved`, { cause: error });
  }
}
