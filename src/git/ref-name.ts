/**
 * Limits that `git check-ref-format` does not check but the file system enforces: git keeps each
 * branch as files (`refs/heads/<name>`, its reflog `logs/refs/heads/<name>`, and `<name>.lock`
 * while it updates them), so each `/`-separated part of a name is a file name and the whole is a path.
 *
 * Invariant: pure. A name that passes here and `check-ref-format` can be created by `git worktree add
 * -b` on Linux and macOS file systems (ext4, xfs, btrfs, tmpfs, APFS: 255 bytes per name, 4096 per
 * path); a name that fails would make git fail at the worktree step with "File name too long".
 */
import { join } from "node:path";

/** NAME_MAX: bytes in one file name. */
const NAME_MAX_BYTES = 255;
/** PATH_MAX, including the terminating NUL. */
const PATH_MAX_BYTES = 4096;
/** git locks a ref by creating `<ref>.lock` beside it. */
const LOCK_SUFFIX = ".lock";
export const MAX_BRANCH_PART_BYTES = NAME_MAX_BYTES - LOCK_SUFFIX.length;

/** One sentence saying why `branch` cannot be stored in the repository whose common dir is `commonDir`, or undefined. */
export function branchNameLengthProblem(branch: string, commonDir: string): string | undefined {
  const longest = Math.max(...branch.split("/").map((part) => Buffer.byteLength(part, "utf8")));
  if (longest > MAX_BRANCH_PART_BYTES) {
    return `The branch name ${shorten(branch)} has a part of ${longest} bytes, but git stores each part between slashes as a file name of at most ${MAX_BRANCH_PART_BYTES} bytes; pick a shorter name.`;
  }
  // The longest file git writes for a new branch: the lock beside its reflog.
  const longestPath = join(commonDir, "logs", "refs", "heads", `${branch}${LOCK_SUFFIX}`);
  if (Buffer.byteLength(longestPath, "utf8") >= PATH_MAX_BYTES) {
    return `The branch name ${shorten(branch)} is too long for git to store under ${commonDir} (the path would exceed ${PATH_MAX_BYTES - 1} bytes); pick a shorter name.`;
  }
  return undefined;
}

/** A long name quoted by its start, so the sentence stays readable. */
function shorten(name: string): string {
  const chars = Array.from(name);
  return chars.length <= 40
    ? JSON.stringify(name)
    : `${JSON.stringify(chars.slice(0, 40).join(""))}... (${chars.length} characters)`;
}
