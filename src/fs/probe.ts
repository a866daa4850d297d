/**
 * Small read-only questions about the file system, and the one rule for an operation on a path
 * that may already be gone.
 *
 * Invariants:
 * - `unlessMissing` counts only `ENOENT` as gone; any other failure is thrown.
 * - `isDirectory`, `isFile`, `readTextIfPresent` and `readFileEnd` never throw: a file that
 *   cannot be read is undefined (or false), and each caller has a safe answer for that.
 * - `readFileEnd` reads a bounded window, never a whole file.
 * - `isDirectory`, `isFile` and `readSmallFile` ask synchronously: a listing asks them of hundreds
 *   of handoffs, and one asynchronous stat or read costs tens of times the call itself (the thread
 *   pool's round trip, an error object for every missing file); each asks a few local system
 *   calls about a small record, never reads a large or growing file.
 * - `readSmallFile` says `missing` only for a file that is not there (`ENOENT`), asked without a
 *   thrown error; a path through something that is not a directory (`ENOTDIR`) is an error, as
 *   reading it says.
 */
import { readFileSync, statSync } from "node:fs";
import { lstat, open, readdir, readFile, readlink } from "node:fs/promises";
import { dirname } from "node:path";

/** The `code` of a Node system error (`ENOENT`, `EEXIST`, ...), if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string")
    return error.code;
  return undefined;
}

export async function isDirectory(path: string): Promise<boolean> {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
  } catch {
    return false;
  }
}

/** Whether `path` itself (not a link to one) is a directory with nothing in it (false when it cannot be read). */
export async function isEmptyDirectory(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory() && (await readdir(path)).length === 0;
  } catch {
    return false;
  }
}

export async function isFile(path: string): Promise<boolean> {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}

/**
 * A small record file's text (a manifest, a lease, a published state): `missing` when it does
 * not exist, the error when it cannot be read.
 */
export function readSmallFile(
  path: string,
): { code: "ok"; text: string } | { code: "missing" } | { code: "error"; error: unknown } {
  try {
    // A missing record (no lease, no published state) is common: stats that cannot throw say so
    // without the error Node would build for the read; one removed in between is still `missing`.
    if (statSync(path, { throwIfNoEntry: false }) === undefined && nearestExistingIsDirectory(dirname(path)))
      return { code: "missing" };
    return { code: "ok", text: readFileSync(path, "utf8") };
  } catch (error) {
    return errorCode(error) === "ENOENT" ? { code: "missing" } : { code: "error", error };
  }
}

/**
 * Whether the nearest existing directory on the way up to `dir` is a directory: then a file below
 * it is missing (`ENOENT`), where a file under something else would be `ENOTDIR`. (A stat with
 * `throwIfNoEntry: false` answers undefined for both.)
 */
function nearestExistingIsDirectory(dir: string): boolean {
  for (let current = dir; ; current = dirname(current)) {
    const info = statSync(current, { throwIfNoEntry: false });
    if (info !== undefined) return info.isDirectory();
    if (dirname(current) === current) return true;
  }
}

/**
 * A file's text, or undefined when it cannot be read (missing, a directory, no permission). Its
 * callers poll for a note (and keep waiting: the wait's bound then says nothing was announced)
 * or judge an action lock (an unreadable one is a writer's that died while writing it); a throw
 * there would stop a launch or a listing over a file that only informs it.
 */
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

/**
 * Whether `a` and `b` hold the same: the same bytes for files, the same target for symlinks, the
 * same names with the same content for directories (walked to at most `maxEntries` entries; more
 * is "not known to be the same", false). Never throws: anything unreadable is false.
 */
export async function sameContent(a: string, b: string, maxEntries = 10_000): Promise<boolean> {
  let budget = maxEntries;
  const same = async (left: string, right: string): Promise<boolean> => {
    budget -= 1;
    if (budget < 0) return false;
    const [l, r] = await Promise.all([lstat(left), lstat(right)]);
    if (l.isSymbolicLink() || r.isSymbolicLink())
      return l.isSymbolicLink() && r.isSymbolicLink() && (await readlink(left)) === (await readlink(right));
    if (l.isFile() && r.isFile()) return l.size === r.size && (await readFile(left)).equals(await readFile(right));
    if (l.isDirectory() && r.isDirectory()) {
      const [ln, rn] = await Promise.all([readdir(left), readdir(right)]);
      if (ln.length !== rn.length || ln.sort().join("\0") !== rn.sort().join("\0")) return false;
      for (const name of ln) if (!(await same(`${left}/${name}`, `${right}/${name}`))) return false;
      return true;
    }
    return false;
  };
  try {
    return await same(a, b);
  } catch {
    return false;
  }
}
