/**
 * Deleting a file that may already be gone.
 *
 * Invariants: a missing file is `false`, never an error; any other failure (a permission, a
 * directory) is thrown, so a caller never believes a file went that did not.
 */
import { unlink } from "node:fs/promises";
import { errorCode } from "./probe.ts";

/** Deletes `path`; whether it was there. */
export async function unlinkIfPresent(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    throw error;
  }
}
