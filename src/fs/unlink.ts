/**
 * Deleting a file that may already be gone.
 *
 * Invariants: a missing file is `false`, never an error; any other failure (a permission, a
 * directory) is thrown, so a caller never believes a file went that did not.
 */
import { unlink } from "node:fs/promises";
import { unlessMissing } from "./probe.ts";

/** Deletes `path`; whether it was there. */
export function unlinkIfPresent(path: string): Promise<boolean> {
  return unlessMissing(() => unlink(path));
}
