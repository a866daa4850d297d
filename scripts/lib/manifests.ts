/**
 * Reading handoff manifests for the demo: `<agentDir>/handoff-worktree/manifests/<id>.json`,
 * each checked against the package's own schema. Read-only and lock-free (the store writes every
 * file atomically, so a reader never sees half a file).
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { ManifestSchema, type Manifest } from "../../src/manifest/schema.ts";
import { DemoFailure } from "./wait.ts";

export interface ManifestFile {
  path: string;
  manifest: Manifest;
}

export function manifestsDir(agentDir: string): string {
  return join(agentDir, "handoff-worktree", "manifests");
}

async function manifestFileNames(dir: string): Promise<string[]> {
  try {
    // Temp files and lock dirs start with "." or do not end in ".json".
    return (await readdir(dir)).filter((name) => name.endsWith(".json") && !name.startsWith(".")).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/** The one manifest in `dir`, or undefined while there is none; throws if there are several or it is invalid. */
export async function readOnlyManifest(dir: string): Promise<ManifestFile | undefined> {
  const names = await manifestFileNames(dir);
  const [name] = names;
  if (name === undefined) return undefined;
  if (names.length > 1) throw new DemoFailure(`Expected one handoff manifest in ${dir}, found ${names.length}.`);
  const path = join(dir, name);
  const parsed = ManifestSchema.safeParse(JSON.parse(await readFile(path, "utf8")));
  if (!parsed.success)
    throw new DemoFailure(
      `The handoff manifest ${path} does not match the schema (${parsed.error.issues.length} issues).`,
    );
  return { path, manifest: parsed.data };
}
