/**
 * CheckoutBackup: what a checkout held at the paths a git command is about to rewrite, kept so the
 * checkout can be put back exactly if that command is stopped half-way (a timeout while a slow
 * smudge filter, as git-lfs is, writes the files).
 *
 * Invariants:
 * - Taking a backup changes nothing a person or git can see: each existing file at a path is
 *   copied (a copy-on-write clone where the file system offers one) into a directory inside the
 *   checkout's git dir, a symlink's target is noted. Never a hard link: linking changes the file's
 *   ctime, which git's index compares, so every backed-up path would then read as modified to the
 *   plumbing (`read-tree -m -u` refuses with "not uptodate") and to the user's next `git status`.
 * - `restore` touches only the given paths: a file that differs from its backup (or is gone) gets
 *   its backup back by rename (a file git re-made with the same bytes and mode is left as it is);
 *   a file changed in place (its inode kept, held open since the backup so no new file can reuse its
 *   number: git never writes in place) is someone's edit made while the command ran, so it is kept
 *   and named as not put back, never overwritten. `discard` closes what it held; a path that held nothing before and holds a file now (one the
 *   stopped command made) is unlinked, with the directories it alone needed. It says how many paths
 *   it put back and which it could not.
 * - The backup directory is this module's own (`<git dir>/pi-handoff-backup-<tag>`), emptied before
 *   use and removed by `discard`.
 */
import { type BigIntStats, constants } from "node:fs";
import {
  copyFile,
  type FileHandle,
  lstat,
  open,
  readFile,
  mkdir,
  readlink,
  rename,
  rm,
  rmdir,
  symlink,
  unlink,
} from "node:fs/promises";
import path from "node:path";
import { errorCode } from "../fs/probe.ts";

/** How many originals a backup holds open (below any usual limit on open files); past it, bytes alone decide. */
const MAX_HELD_FILES = 256;

type Saved =
  | { kind: "absent"; missingDirs: string[] }
  | {
      kind: "file";
      stamp: string;
      inode: string;
      /** Whether the original inode is held open, so no file made meanwhile can take its number. */
      held: boolean;
      mode: number;
      size: number;
      backup: string;
    }
  | { kind: "symlink"; target: string }
  | { kind: "other" };

export interface RestoreResult {
  /** Paths whose content was put back (or a file the stopped command made, removed). */
  restored: string[];
  /** Paths that could not be put back, with why. */
  failed: { path: string; reason: string }[];
}

export class CheckoutBackup {
  private readonly checkout: string;
  private readonly dir: string;
  private readonly saved = new Map<string, Saved>();
  private readonly handles: FileHandle[] = [];

  private constructor(checkout: string, dir: string) {
    this.checkout = checkout;
    this.dir = dir;
  }

  /** Keeps what `checkout` holds at each of `paths` (relative, `/`-separated) in `gitDir`. */
  static async take(checkout: string, gitDir: string, tag: string, paths: readonly string[]): Promise<CheckoutBackup> {
    const dir = path.join(gitDir, `pi-handoff-backup-${tag.replace(/[^A-Za-z0-9._-]/g, "-")}`);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const backup = new CheckoutBackup(checkout, dir);
    try {
      let index = 0;
      for (const relative of paths) {
        const full = path.join(checkout, relative);
        const stat = await lstatIfThere(full);
        if (stat === undefined) {
          backup.saved.set(relative, { kind: "absent", missingDirs: await missingDirectories(checkout, relative) });
        } else if (stat.isSymbolicLink()) {
          backup.saved.set(relative, { kind: "symlink", target: await readlink(full) });
        } else if (stat.isFile()) {
          const kept = path.join(dir, String((index += 1)));
          await copyFile(full, kept, constants.COPYFILE_FICLONE);
          // An open handle keeps the inode allocated after git unlinks the path (reading changes no
          // time git compares), so a file with the original's inode number is the original itself.
          const handle =
            backup.handles.length < MAX_HELD_FILES ? await open(full, "r").catch(() => undefined) : undefined;
          if (handle !== undefined) backup.handles.push(handle);
          backup.saved.set(relative, {
            kind: "file",
            stamp: stampOf(stat),
            inode: inodeOf(stat),
            held: handle !== undefined,
            mode: Number(stat.mode),
            size: Number(stat.size),
            backup: kept,
          });
        } else {
          backup.saved.set(relative, { kind: "other" });
        }
      }
    } catch (error) {
      // Nothing is kept open, nor left in the git dir, by a backup that could not be taken.
      await backup.discard();
      throw error;
    }
    return backup;
  }

  /** Puts every backed-up path back as it was (see the header). */
  async restore(): Promise<RestoreResult> {
    const result: RestoreResult = { restored: [], failed: [] };
    for (const [relative, saved] of this.saved) {
      const full = path.join(this.checkout, relative);
      try {
        const now = await lstatIfThere(full);
        switch (saved.kind) {
          case "absent":
            if (now === undefined) break;
            if (now.isDirectory()) throw new Error("a directory is there now");
            await unlink(full);
            for (const dir of saved.missingDirs) await rmdir(path.join(this.checkout, dir)).catch(() => undefined);
            result.restored.push(relative);
            break;
          case "file":
            if (now !== undefined && now.isFile() && (await holdsTheSame(full, now, saved))) break;
            if (now?.isDirectory() === true) throw new Error("a directory is there now");
            // git replaces a file it writes (a new inode); the same one changed is someone's edit meanwhile.
            if (saved.held && now?.isFile() === true && inodeOf(now) === saved.inode)
              throw new Error("it was changed in place while the command ran, so it is kept as it is");
            await mkdir(path.dirname(full), { recursive: true });
            await rename(saved.backup, full);
            result.restored.push(relative);
            break;
          case "symlink": {
            if (now?.isSymbolicLink() === true && (await readlink(full)) === saved.target) break;
            if (now?.isDirectory() === true) throw new Error("a directory is there now");
            if (now !== undefined) await unlink(full);
            await mkdir(path.dirname(full), { recursive: true });
            await symlink(saved.target, full);
            result.restored.push(relative);
            break;
          }
          case "other":
            break;
        }
      } catch (error) {
        result.failed.push({ path: relative, reason: error instanceof Error ? error.message : String(error) });
      }
    }
    return result;
  }

  /** Removes the backup directory (what it holds is the old bytes of files now replaced). */
  async discard(): Promise<void> {
    for (const handle of this.handles.splice(0)) await handle.close().catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * Whether the file at `full` is still what was backed up. Its stat stamp first (inode, ctime, size:
 * any write, rename or link moves the ctime); a file the stamp cannot vouch for (git made a new one,
 * which may even reuse the freed inode) is compared byte for byte with the backup, with its mode.
 */
async function holdsTheSame(full: string, now: BigIntStats, saved: Extract<Saved, { kind: "file" }>): Promise<boolean> {
  if (stampOf(now) === saved.stamp) return true;
  if (Number(now.size) !== saved.size || Number(now.mode) !== saved.mode) return false;
  const [current, kept] = await Promise.all([readFile(full), readFile(saved.backup)]);
  return current.equals(kept);
}

function inodeOf(stat: BigIntStats): string {
  return `${stat.dev}:${stat.ino}`;
}

function stampOf(stat: BigIntStats): string {
  return `${stat.dev}:${stat.ino}:${stat.ctimeNs}:${stat.mtimeNs}:${stat.size}:${stat.mode}`;
}

async function lstatIfThere(full: string): Promise<BigIntStats | undefined> {
  return lstat(full, { bigint: true }).catch((error: unknown) => {
    if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR") return undefined;
    throw error;
  });
}

/** The directories on the way to `relative` that do not exist yet, deepest first. */
async function missingDirectories(checkout: string, relative: string): Promise<string[]> {
  const missing: string[] = [];
  for (let dir = path.posix.dirname(relative); dir !== "." && dir !== "/"; dir = path.posix.dirname(dir)) {
    const exists = await lstat(path.join(checkout, dir)).then(
      () => true,
      () => false,
    );
    if (exists) break;
    missing.push(dir);
  }
  return missing;
}
