/**
 * Deleting a file that may already be gone.
 *
 * Invariants: a missing file is `false`, never an error; any other failure (a permission, a
 * directory) is thrown, or, for `unlinkEach`, named with its path, so a caller never believes a
 * file went that did not.
 */
import { unlink } from "node:fs/promises";
import { errorClause } from "../errors.ts";
import { unlessMissing } from "./probe.ts";

/** Deletes `path`; whether it was there. */
export function unlinkIfPresent(path: string): Promise<boolean> {
  return unlessMissing(() => unlink(path));
}

/** What deleting several files did: how many went, and each one that stayed, with why. */
export interface Deletions {
  deleted: number;
  left: { path: string; reason: string }[];
}

/** Deletes each of `paths`, every one tried whatever the others did. */
export async function unlinkEach(paths: readonly string[]): Promise<Deletions> {
  const outcome: Deletions = { deleted: 0, left: [] };
  for (const path of paths) {
    try {
      if (await unlinkIfPresent(path)) outcome.deleted += 1;
    } catch (error) {
      outcome.left.push({ path, reason: errorClause(error) });
    }
  }
  return outcome;
}
