/**
 * Small read-only questions about the file system, and the one rule for an operation on a path
 * that may already be gone.
 *
 * Invariants:
 * - Missing is `ENOENT` (and `ENOTDIR` for reads): only that is answered as absent where a caller
 *   acts on the answer (`readTextIfPresent`, `unlessMissing`); any other failure is thrown.
 * - `isDirectory`, `isFile` and `readFileEnd` never throw: their callers only look.
 * - `readFileEnd` reads a bounded window, never a whole file.
 */
import { open, readFile, stat } from "node:fs/promises";
import { errorMessage } from "../errors.ts";

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

/**
 * A file's text, or undefined when there is no such file (`ENOENT`, or a path component that is a
 * file: `ENOTDIR`). Any other failure (no permission, a directory, an I/O error) is thrown: it says
 * something is wrong, and a caller that took it for "absent" would wait for nothing or take over.
 */
export async function readTextIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    // Node leaves the path out of some of these (EISDIR): say which file it was.
    throw new Error(`Could not read ${path}: ${errorMessage(error)}`, { cause: error });
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

/** The last bytes of a file and what they were read from. */
export interface FileEnd {
  bytes: Buffer;
  /** Whether the file holds more than `bytes` (the window starts inside it). */
  cut: boolean;
  size: number;
  mtime: Date;
}

/**
 * The final `maxBytes` of a file (one open, one stat, one read, whatever the file's length), or
 * undefined when it cannot be read. Only the bytes really read count: a file that shrank between
 * the stat and the read yields fewer.
 */
export async function readFileEnd(path: string, maxBytes: number): Promise<FileEnd | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
    const stats = await handle.stat();
    const length = Math.min(stats.size, maxBytes);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, stats.size - length);
    return { bytes: buffer.subarray(0, bytesRead), cut: length < stats.size, size: stats.size, mtime: stats.mtime };
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}
