/**
 * The claim: a directory made with an exclusive mkdir, so of two processes wanting one path exactly
 * one gets it (the worktree path a handoff checks out into, git/handoff-git.ts `addWorktree`); and the
 * private directory of this user (the launcher's short links, child/launcher-file.ts).
 *
 * Invariants:
 * - A claim records no holder: the directory must stay empty for git to check out into it. Its
 *   holder is the handoff whose manifest names the path, and that handoff's owner is judged by the
 *   liveness rule (manifest/owner.ts, locks/liveness.ts); an empty claim left by a killed process
 *   is found and given back by recovery (inventory/classify.ts: `claimed`).
 * - A claim is given back only while it is empty (rmdir removes nothing else).
 * - A private directory is used only when it is a real directory of this user with no access for
 *   anyone else; someone else's directory (or a link to one) is refused, never used.
 */
import { lstat, mkdir, rmdir } from "node:fs/promises";
import { dirname } from "node:path";
import { errorCode } from "../fs/probe.ts";

export type Claim = { ok: true } | { ok: false; code: "exists" };

/** Claims `path` with an exclusive mkdir (its parent made as needed); `exists` when it is there already. */
export async function claimDirectory(path: string): Promise<Claim> {
  await mkdir(dirname(path), { recursive: true });
  try {
    await mkdir(path);
    return { ok: true };
  } catch (error) {
    if (errorCode(error) === "EEXIST") return { ok: false, code: "exists" };
    throw error;
  }
}

/** Gives a claim back while it is still empty; whatever was put in it stays, and so does it. */
export async function releaseClaim(path: string): Promise<void> {
  await rmdir(path).catch(() => undefined);
}

/**
 * `dir`, made if missing (mode 0700), once it is checked to be this user's own and private;
 * otherwise an error saying so and what cannot be done (`refused`, e.g. "the launcher cannot be linked there").
 */
export async function privateDirectory(dir: string, refused: string): Promise<void> {
  const uid = process.getuid?.();
  await mkdir(dir, { mode: 0o700 }).catch((error: unknown) => {
    if (errorCode(error) !== "EEXIST") throw error;
  });
  // Someone else's directory (or a link to one) must not decide what this user's pane runs.
  const info = await lstat(dir);
  if (!info.isDirectory() || (uid !== undefined && info.uid !== uid) || (info.mode & 0o077) !== 0) {
    throw new Error(`${dir} is not a private directory of this user, so ${refused}.`);
  }
}
