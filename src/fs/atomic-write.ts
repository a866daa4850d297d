/**
 * Atomic file replacement: a reader sees the old content or the new, never a mix.
 *
 * Invariant: the temp file lives beside the target (same file system, so rename is atomic) and is
 * removed on every failure path. Durable by default (file and directory fsynced); `durable: false`
 * keeps only the atomicity, for a small status file rewritten often whose loss in a crash costs nothing.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, linkSync, openSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { link, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { errorCode } from "./probe.ts";

export interface AtomicWriteOptions {
  /** `false`: fail with EEXIST instead of replacing an existing file. */
  overwrite?: boolean;
  /** `false`: no fsync of the file or its directory (still atomic, not crash-safe). */
  durable?: boolean;
}

/** A fresh temp file name in the same directory as `path` (same file system, so a rename is atomic). */
export function tempPathBeside(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
}

/**
 * Replaces `path` with `text` so that readers see either the old or the new content, never a mix:
 * write `.<name>.<pid>.<random>.tmp` beside it, fsync, rename over `path`, fsync the directory.
 * With `overwrite: false` the temp file is hard-linked instead, which fails with EEXIST if `path` exists.
 */
export async function writeFileAtomic(path: string, text: string, options: AtomicWriteOptions = {}): Promise<void> {
  const dir = dirname(path);
  const tempPath = tempPathBeside(path);
  try {
    const handle = await open(tempPath, "wx");
    try {
      await handle.writeFile(text, "utf8");
      if (options.durable !== false) await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.overwrite === false) {
      await link(tempPath, path);
      await rm(tempPath, { force: true });
    } else {
      await rename(tempPath, path);
    }
  } catch (error) {
    await rm(tempPath, { force: true });
    throw error;
  }
  if (options.durable !== false) await fsyncDirectory(dir);
}

/** Synchronous twin of `writeFileAtomic`, for callers that cannot await. */
export function writeFileAtomicSync(path: string, text: string, options: AtomicWriteOptions = {}): void {
  const dir = dirname(path);
  const tempPath = tempPathBeside(path);
  try {
    const fd = openSync(tempPath, "wx");
    try {
      writeFileSync(fd, text, "utf8");
      if (options.durable !== false) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (options.overwrite === false) {
      linkSync(tempPath, path);
      rmSync(tempPath, { force: true });
    } else {
      renameSync(tempPath, path);
    }
  } catch (error) {
    rmSync(tempPath, { force: true });
    throw error;
  }
  if (options.durable !== false) fsyncDirectorySync(dir);
}

export async function fsyncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch (error) {
    if (!cannotFsyncDirectory(error)) throw error;
  } finally {
    await handle?.close();
  }
}

function fsyncDirectorySync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch (error) {
    if (!cannotFsyncDirectory(error)) throw error;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Some platforms (Windows) and file systems cannot fsync a directory; the rename is still atomic. */
function cannotFsyncDirectory(error: unknown): boolean {
  const code = errorCode(error);
  return code === "EISDIR" || code === "EPERM" || code === "EINVAL" || code === "ENOTSUP";
}
