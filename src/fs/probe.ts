/**
 * Small read-only questions about the file system, answered without throwing, and the one rule
 * for an operation on a path that may already be gone.
 */
import { readFile, stat } from "node:fs/promises";

/** The `code` of a Node system error (`ENOENT`, `EEXIST`, ...), if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") return error.code;
  return undefined;
}

export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

export async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** A file's text, or undefined when it cannot be read (missing, a directory, no permission). */
export async function readTextIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Runs `operation` on a path that may not exist: true when it ran, false when the path is missing
 * (`ENOENT`); any other failure is thrown, since it says something is wrong, not absent.
 */
export async function unlessMissing(operation: () => Promise<unknown>): Promise<boolean> {
  try {
    await operation();
    return true;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    throw error;
  }
}
