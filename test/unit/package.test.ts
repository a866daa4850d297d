/**
 * package.json says what the code needs and nothing more: every package the shipped code imports
 * is a dependency or a peer, every peer is imported, Pi's packages are optional peers of at least
 * the tested Pi (so `npm i -g` or `npx` never pull a second Pi), and what npm and Pi show a user
 * (repository, homepage, bugs, licence, changelog) is there and shipped.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PROJECT_ROOT } from "../support/pi.ts";

const PackageSchema = z.object({
  version: z.string(),
  license: z.string(),
  homepage: z.string(),
  repository: z.object({ type: z.literal("git"), url: z.string() }),
  bugs: z.object({ url: z.string() }),
  os: z.array(z.string()),
  files: z.array(z.string()),
  dependencies: z.record(z.string(), z.string()),
  devDependencies: z.record(z.string(), z.string()),
  peerDependencies: z.record(z.string(), z.string()),
  peerDependenciesMeta: z.record(z.string(), z.object({ optional: z.boolean() })),
});

const pkg = PackageSchema.parse(JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")));

function shippedSources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return shippedSources(full);
    return /\.(ts|mjs)$/.test(name) ? [full] : [];
  });
}

/** Bare package names imported at run time (`import type` is erased, so it needs nothing). */
function runtimeImports(): Set<string> {
  const names = new Set<string>();
  for (const file of ["bin", "src", "pi-extension"].flatMap((dir) => shippedSources(join(PROJECT_ROOT, dir)))) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(
      /^\s*import\s+(?!type\s)[^;]*?\bfrom\s+"([^".][^"]*)"|\bimport\("([^".][^"]*)"\)/gm,
    )) {
      const spec = match[1] ?? match[2] ?? "";
      if (spec.startsWith("node:")) continue;
      names.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : (spec.split("/")[0] ?? spec));
    }
  }
  return names;
}

describe("package.json", () => {
  it("declares exactly the packages the shipped code imports", () => {
    const imported = runtimeImports();
    for (const name of ["zod", "typebox", "@earendil-works/pi-coding-agent"]) expect(imported, name).toContain(name);
    const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]);
    expect([...imported].filter((name) => !declared.has(name)).sort()).toEqual([]);
    // A peer nothing imports would only make npm look for it.
    expect(
      Object.keys(pkg.peerDependencies)
        .filter((name) => !imported.has(name))
        .sort(),
    ).toEqual([]);
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual([
      "@earendil-works/pi-coding-agent",
      "@earendil-works/pi-tui",
      "typebox",
    ]);
  });

  it("takes Pi's packages as optional peers of Pi 1.6 or later, pinned for the tests", () => {
    for (const [name, range] of Object.entries(pkg.peerDependencies)) {
      expect(pkg.peerDependenciesMeta[name], name).toEqual({ optional: true });
      expect(range, name).not.toBe("*");
      expect(pkg.devDependencies[name], name).toMatch(/^\d+\.\d+\.\d+$/);
    }
    expect(pkg.peerDependencies["@earendil-works/pi-coding-agent"]).toBe(">=1.6.0");
    expect(pkg.peerDependencies["@earendil-works/pi-tui"]).toBe(">=1.6.0");
    // Never a dependency: Pi warns, and a second copy bypasses its module mapping.
    expect(
      Object.keys(pkg.dependencies).filter((name) => name.startsWith("@earendil-works/") || name === "typebox"),
    ).toEqual([]);
  });

  it("names its repository, homepage, bugs and platforms, and ships a licence and a changelog", () => {
    expect(pkg.repository.url).toMatch(/^git\+https:\/\/github\.com\/[\w-]+\/[\w-]+\.git$/);
    const repo = pkg.repository.url.replace(/^git\+/, "").replace(/\.git$/, "");
    expect(pkg.homepage).toBe(`${repo}#readme`);
    expect(pkg.bugs.url).toBe(`${repo}/issues`);
    expect(pkg.os).toEqual(["linux", "darwin"]);
    expect(pkg.license).toBe("MIT");
    expect(readFileSync(join(PROJECT_ROOT, "LICENSE"), "utf8")).toMatch(/^MIT License\n/);
    for (const file of ["LICENSE", "CHANGELOG.md", "README.md"]) {
      expect(pkg.files, file).toContain(file);
      expect(existsSync(join(PROJECT_ROOT, file)), file).toBe(true);
    }
    // Pi shows the entries newer than the installed version, matched by their heading.
    expect(readFileSync(join(PROJECT_ROOT, "CHANGELOG.md"), "utf8")).toMatch(
      new RegExp(`^## \\[${pkg.version.replaceAll(".", "\\.")}\\]`, "m"),
    );
  });

  it("keeps package-lock.json in step with it", () => {
    const lock = z
      .object({
        packages: z.record(
          z.string(),
          z
            .object({
              peerDependencies: z.record(z.string(), z.string()).optional(),
              os: z.array(z.string()).optional(),
            })
            .passthrough(),
        ),
      })
      .parse(JSON.parse(readFileSync(join(PROJECT_ROOT, "package-lock.json"), "utf8")));
    const root = lock.packages[""];
    expect(root?.peerDependencies).toEqual(pkg.peerDependencies);
    expect(root?.os).toEqual(pkg.os);
  });
});
