/**
 * Bringing files from one checkout into another without ever overwriting: copies (mode kept, a
 * symlink copied as a symlink, a directory entry by entry) and symlinks to the source.
 *
 * Invariants:
 * - Nothing that exists at the target is replaced or changed: a file or link that is there is
 *   skipped and reported; an existing directory is entered, never replaced. Files are created
 *   with O_EXCL (`COPYFILE_EXCL`, `symlink`), so a file that appears meanwhile is not clobbered.
 * - The source is only read. Paths are relative to their roots and never leave them (no `..`,
 *   no absolute paths: the caller's globs were checked, and this checks again).
 * - Only regular files, symlinks and directories are copied; anything else (a socket, a FIFO) is
 *   skipped and reported, since reading one could block.
 */
import { constants } from "node:fs";
import { copyFile, lstat, mkdir, readdir, readlink, symlink } from "node:fs/promises";
import { dirname, isAbsolute, join, normalize, sep } from "node:path";
import { errorCode } from "./probe.ts";

export interface CopyReport {
  /** Files and links created (relative paths). */
  created: string[];
  /** Relative paths left alone, with why. */
  skipped: Array<{ path: string; reason: string }>;
}

function assertInside(relative: string): void {
  const normal = normalize(relative);
  if (relative === "" || isAbsolute(relative) || normal === ".." || normal.startsWith(`..${sep}`)) {
    throw new Error(`${JSON.stringify(relative)} is not a path inside the checkout.`);
  }
}

/** Copies `relative` (a file, a symlink or a directory) from `fromRoot` to the same place under `toRoot`. */
export async function copyInto(
  fromRoot: string,
  toRoot: string,
  relative: string,
  report: CopyReport = { created: [], skipped: [] },
): Promise<CopyReport> {
  assertInside(relative);
  const source = join(fromRoot, relative);
  const target = join(toRoot, relative);
  const info = await lstat(source);
  if (info.isDirectory()) {
    const existing = await lstat(target).catch(() => undefined);
    if (existing !== undefined && !existing.isDirectory()) {
      report.skipped.push({ path: relative, reason: "something else already exists there" });
      return report;
    }
    // The directory's own mode, so a private directory stays private.
    if (existing === undefined) await mkdir(target, { recursive: true, mode: info.mode & 0o7777 });
    for (const name of (await readdir(source)).sort()) await copyInto(fromRoot, toRoot, join(relative, name), report);
    return report;
  }
  if (!info.isSymbolicLink() && !info.isFile()) {
    report.skipped.push({ path: relative, reason: "not a regular file, link or directory" });
    return report;
  }
  return createOnce(target, relative, report, async () => {
    // COPYFILE_EXCL: fails rather than replaces; libuv gives the new file the source's mode.
    if (info.isSymbolicLink()) await symlink(await readlink(source), target);
    else await copyFile(source, target, constants.COPYFILE_EXCL);
  });
}

/** Creates `toRoot/relative` as a symlink to `fromRoot/relative` (absolute), unless something is there. */
export async function linkInto(
  fromRoot: string,
  toRoot: string,
  relative: string,
  report: CopyReport = { created: [], skipped: [] },
): Promise<CopyReport> {
  assertInside(relative);
  const target = join(toRoot, relative);
  return createOnce(target, relative, report, () => symlink(join(fromRoot, relative), target));
}

/** Runs `create` (which fails with EEXIST rather than replace) and records what it did. */
async function createOnce(
  target: string,
  relative: string,
  report: CopyReport,
  create: () => Promise<void>,
): Promise<CopyReport> {
  await mkdir(dirname(target), { recursive: true });
  try {
    await create();
  } catch (error) {
    if (errorCode(error) === "EEXIST") {
      report.skipped.push({ path: relative, reason: "already exists in the worktree" });
      return report;
    }
    throw error;
  }
  report.created.push(relative);
  return report;
}
