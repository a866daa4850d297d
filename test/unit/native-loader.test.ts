/**
 * bin/native-loader.mjs, in Node processes of its own (its hooks are for the whole thread): a
 * package's TypeScript under node_modules loads, its stripped form is kept only where no one else
 * can write, an edited file is stripped again, and host modules are the very objects handed over.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";

const LOADER = pathToFileURL(join(PROJECT_ROOT, "bin", "native-loader.mjs")).href;
const scratch = makeTempDir("phw-loader-");
afterAll(() => removeTempDir(scratch));

/** A package installed under node_modules, with TypeScript that imports a host module and a file of its own. */
function installedPackage(name: string): { root: string; entry: string } {
  const root = join(scratch, name, "node_modules", "pkg");
  mkdirSync(join(root, "src"), { recursive: true });
  writeFileSync(
    join(root, "src", "main.ts"),
    [
      'import { host } from "the-host";',
      'import { twice } from "./twice.ts";',
      "const n: number = twice(21);",
      "export const result: { n: number; sameHost: boolean } = { n, sameHost: host === (globalThis as { theHost?: unknown }).theHost };",
      "",
    ].join("\n"),
  );
  writeFileSync(join(root, "src", "twice.ts"), "export function twice(x: number): number {\n  return x * 2;\n}\n");
  return { root, entry: join(root, "src", "main.ts") };
}

/** Runs Node with the loader installed for `root`, and prints what the entry exported. */
function load(root: string, entry: string, cacheDir: string | undefined): { n: number; sameHost: boolean } {
  const script = [
    `import { createRequire } from "node:module";`,
    `import { installTypeScriptLoader } from ${JSON.stringify(LOADER)};`,
    `const host = { made: "by the host" };`,
    `globalThis.theHost = host;`,
    `const root = ${JSON.stringify(pathToFileURL(root).href + "/")};`,
    `if (!installTypeScriptLoader(root, ${JSON.stringify(cacheDir)}, { "the-host": { host } })) throw new Error("not installed");`,
    // Twice: Pi loads an extension again on /reload.
    `installTypeScriptLoader(root, ${JSON.stringify(cacheDir)}, { "the-host": { host } });`,
    `const { result } = createRequire(import.meta.url)(${JSON.stringify(entry)});`,
    `process.stdout.write(JSON.stringify(result));`,
  ].join("\n");
  const out = execFileSync(NODE_BIN, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    timeout: 30_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return JSON.parse(out) as { n: number; sameHost: boolean };
}

describe("the native loader", () => {
  it("loads TypeScript under node_modules, with the host module the one handed over, and keeps it stripped", () => {
    const { root, entry } = installedPackage("kept");
    const cache = join(scratch, "kept-cache");
    expect(load(root, entry, cache)).toEqual({ n: 42, sameHost: true });
    const kept = readdirSync(cache).sort();
    expect(kept).toHaveLength(2);
    // What is kept is Node's stripping of the file (types become spaces): the same lines.
    const texts = kept.map((name) => readFileSync(join(cache, name), "utf8"));
    expect(texts).toContain("export function twice(x        )         {\n  return x * 2;\n}\n");
    // An edited file is stripped again; the unchanged one is served as kept.
    writeFileSync(join(root, "src", "twice.ts"), "export function twice(x: number): number {\n  return x * 3;\n}\n");
    expect(load(root, entry, cache)).toEqual({ n: 63, sameHost: true });
    expect(readdirSync(cache)).toHaveLength(3);
  });

  it("keeps nothing in a cache directory others can write to, and still loads", () => {
    const { root, entry } = installedPackage("shared");
    const cache = join(scratch, "shared-cache");
    mkdirSync(cache);
    chmodSync(cache, 0o777);
    expect(load(root, entry, cache)).toEqual({ n: 42, sameHost: true });
    expect(readdirSync(cache)).toEqual([]);
  });

  it("loads without a cache directory, keeping nothing", () => {
    const { root, entry } = installedPackage("uncached");
    expect(load(root, entry, undefined)).toEqual({ n: 42, sameHost: true });
  });
});
