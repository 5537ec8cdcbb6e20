/**
 * An npm registry on 127.0.0.1 for install tests, with no network: it serves the packages of the
 * repository's package-lock.json (their tarballs read from npm's own cache, where the repository's
 * `npm install` left them) and the tarballs the test adds (the package just packed by `npm pack`).
 * A package whose tarball is not in the cache is answered 404, so npm fails loudly.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

type Manifest = Record<string, unknown> & { name: string; version: string };
type LockEntry = Record<string, unknown> & { version?: string; integrity?: string; name?: string; link?: boolean };

/** Where cacache keeps the content with this SRI hash (`sha512-<base64>`). */
function cachePath(cacheDir: string, integrity: string): string {
  const [algorithm, digest] = integrity.split("-", 2) as [string, string];
  const hex = Buffer.from(digest, "base64").toString("hex");
  return join(cacheDir, "_cacache", "content-v2", algorithm, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

const MANIFEST_FIELDS = ["dependencies", "optionalDependencies", "peerDependencies", "peerDependenciesMeta", "bin", "engines", "os", "cpu", "license"];

export type LocalRegistry = { url: string; stop: () => Promise<void> };

/** Starts the registry; `extra` maps a package's manifest (its package.json) to its tarball file. */
export function startLocalRegistry(lockPath: string, extra: Array<{ manifest: Manifest; tarball: string }>, cacheDir = join(homedir(), ".npm")): LocalRegistry {
  const versions = new Map<string, Map<string, { manifest: Manifest; file: string; integrity: string }>>();
  const add = (manifest: Manifest, file: string, integrity: string) => {
    let byVersion = versions.get(manifest.name);
    if (!byVersion) versions.set(manifest.name, (byVersion = new Map()));
    byVersion.set(manifest.version, { manifest, file, integrity });
  };
  const lock = JSON.parse(readFileSync(lockPath, "utf8")) as { packages: Record<string, LockEntry> };
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (!key.includes("node_modules/") || entry.link || !entry.version || !entry.integrity) continue;
    const name = entry.name ?? key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length);
    const manifest: Manifest = { name, version: entry.version };
    for (const field of MANIFEST_FIELDS) if (entry[field] !== undefined) manifest[field] = entry[field];
    add(manifest, cachePath(cacheDir, entry.integrity), entry.integrity);
  }
  for (const { manifest, tarball } of extra) {
    add(manifest, tarball, `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`);
  }

  const server: Bun.Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request): Response {
      const path = decodeURIComponent(new URL(request.url).pathname.slice(1));
      const tarball = /^(.+)\/-\/(.+)$/.exec(path);
      if (tarball) {
        const [, name, file] = tarball as unknown as [string, string, string];
        const version = [...(versions.get(name)?.values() ?? [])].find((v) => `${name.split("/").pop()}-${v.manifest.version}.tgz` === file);
        if (!version || !existsSync(version.file)) return new Response("not in the cache", { status: 404 });
        return new Response(Bun.file(version.file), { headers: { "content-type": "application/octet-stream" } });
      }
      const byVersion = versions.get(path);
      if (!byVersion) return new Response("{}", { status: 404 });
      const base: string = `http://127.0.0.1:${server.port}`;
      const all = [...byVersion.values()];
      const latest = all
        .map((v) => v.manifest.version)
        .sort((a, b) => Bun.semver.order(a, b))
        .pop()!;
      const packument = {
        name: path,
        "dist-tags": { latest },
        versions: Object.fromEntries(
          all.map(({ manifest, integrity }) => [
            manifest.version,
            { ...manifest, dist: { tarball: `${base}/${path}/-/${path.split("/").pop()}-${manifest.version}.tgz`, integrity } },
          ]),
        ),
      };
      return Response.json(packument);
    },
  });
  return { url: `http://127.0.0.1:${server.port}/`, stop: () => server.stop(true) };
}
