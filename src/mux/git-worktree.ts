/**
 * The lifecycle every terminal without worktrees of its own shares (tmux, zellij): git makes the
 * checkout while the terminal opens a window in its directory; on removal, uncommitted work is
 * refused before anything is closed, the window is closed, then git removes the checkout.
 *
 * Invariants:
 * - Git runs only through the port it is given (`src/git/` owns git); the terminal acts only
 *   through the callbacks the backend passes.
 * - The window opens once git has claimed the worktree's directory (made it, empty), so what it
 *   runs (the launcher, and the warm start it makes) starts while git checks out; a port that
 *   does not say it claimed has the window opened after the checkout.
 * - Either failure leaves what the other made, reported in `partial`, so the transaction records
 *   it: a failed window leaves the checkout, a failed checkout the window. Nothing is deleted on
 *   the way; git's failure is said first.
 * - Without `force`, a checkout with uncommitted or untracked files is refused before its window is
 *   touched. The branch is never deleted.
 * - Failures are values with a code and one sentence, never thrown.
 */
import { realpath } from "node:fs/promises";
import { resolve } from "node:path";
import type { GitPort, RecoveryGitPort } from "../git/types.ts";
import type { MuxLocation } from "../manifest/locations.ts";
import { isDirectory } from "../fs/probe.ts";
import { errorClause } from "../errors.ts";
import { counted, stripPeriod } from "../text.ts";
import type { CreatedWorkspace, CreateWorkspaceRequest, MuxFailure, MuxResult } from "./types.ts";

/**
 * The git operations a git-made worktree needs: creating it for a handoff, and for recovery's removal
 * (optional, so a backend built only to hand off needs no more) the status check and the removal.
 */
export type GitWorktreePort = Pick<GitPort, "addWorktree"> &
  Partial<Pick<RecoveryGitPort, "removeWorktree" | "worktreeStatus" | "listWorktrees">>;

/**
 * git's own refusal, said before anything is closed or stopped: a locked checkout (git worktree
 * lock) is never removed, and a forced removal would close its window, or have Herdr stop what runs
 * in it, only for git to refuse then. Undefined: not locked, or nothing to ask (no `listWorktrees`).
 */
export async function lockedWorktreeRefusal(
  git: Partial<Pick<RecoveryGitPort, "listWorktrees">>,
  mainCheckout: string,
  worktreePath: string,
): Promise<MuxFailure | undefined> {
  if (git.listWorktrees === undefined) return undefined;
  let entries: Awaited<ReturnType<RecoveryGitPort["listWorktrees"]>>;
  try {
    entries = await git.listWorktrees.call(git, mainCheckout);
  } catch (error) {
    return {
      ok: false,
      code: "git_failed",
      message: `Could not list the worktrees of ${mainCheckout}: ${errorClause(error)}.`,
    };
  }
  const wanted = await canonical(worktreePath);
  for (const entry of entries) {
    if (entry.locked === true && (await canonical(entry.path)) === wanted) return worktreeLocked(worktreePath);
  }
  return undefined;
}

/** The refusal of a locked checkout, in the one wording every terminal uses. */
export function worktreeLocked(worktreePath: string): MuxFailure {
  return {
    ok: false,
    code: "worktree_locked",
    message: `The worktree at ${worktreePath} is locked (git worktree lock), so it was not removed and nothing running in it was stopped; unlock it with git worktree unlock ${worktreePath} first.`,
  };
}

async function canonical(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return resolve(path);
  }
}

/** A window the terminal opened for a checkout. */
export type OpenedWindow = { ok: true; location: MuxLocation; commandStarted: boolean } | MuxFailure;

/**
 * git makes the checkout while `openWindow` (called `window`, e.g. "a tmux window") opens its
 * window, once git has claimed the directory (after the checkout where the port does not say).
 */
export async function createWithGit(
  git: GitWorktreePort,
  request: CreateWorkspaceRequest,
  window: string,
  openWindow: () => Promise<OpenedWindow>,
): Promise<MuxResult<CreatedWorkspace>> {
  let opening: Promise<OpenedWindow> | undefined;
  const open = (): Promise<OpenedWindow> =>
    (opening ??= openWindow().catch(
      (error: unknown): OpenedWindow => ({ ok: false, code: "window_create_failed", message: errorClause(error) }),
    ));
  try {
    await git.addWorktree(request.mainCheckout, {
      path: request.worktreePath,
      branch: request.branch,
      sha: request.baseSha,
      // `--existing`: git checks the branch out as it is (`git worktree add <path> <branch>`).
      ...(request.existingBranch === true ? { existing: true } : {}),
      onClaimed: () => open(),
    });
  } catch (error) {
    const opened = opening === undefined ? undefined : await opening;
    return {
      ok: false,
      code: "worktree_create_failed",
      message: `Could not create the worktree at ${request.worktreePath}: ${errorClause(error)}.`,
      ...(opened?.ok === true
        ? { partial: { location: opened.location, ...(opened.commandStarted ? { commandStarted: true } : {}) } }
        : {}),
    };
  }
  const opened = await open();
  if (!opened.ok) {
    return {
      ok: false,
      code: "window_create_failed",
      message: `Created the worktree at ${request.worktreePath} but could not open ${window} for it: ${stripPeriod(opened.message)}.`,
      partial: { worktreePath: request.worktreePath },
    };
  }
  return {
    ok: true,
    location: opened.location,
    worktreePath: request.worktreePath,
    ...(opened.commandStarted ? { commandStarted: true } : {}),
  };
}

/**
 * Refuses uncommitted work (unless forced) and a locked checkout before anything is closed, closes the handoff's window
 * (`closeWindow` decides whether the recorded one is still the handoff's), then has git remove the
 * checkout. `backend` names the terminal for the one refusal that says how it was built.
 */
export async function removeWithGit(
  git: GitWorktreePort,
  backend: string,
  options: { mainCheckout: string; worktreePath: string; force: boolean },
  closeWindow: () => Promise<MuxResult<object>>,
): Promise<MuxResult<object>> {
  const { removeWorktree, worktreeStatus } = git;
  if (removeWorktree === undefined || worktreeStatus === undefined) {
    return {
      ok: false,
      code: "unsupported",
      message: `This ${backend} backend was built without the git operations needed to remove a worktree.`,
    };
  }
  if (!options.force && (await isDirectory(options.worktreePath))) {
    let status: Awaited<ReturnType<typeof worktreeStatus>>;
    try {
      status = await worktreeStatus.call(git, options.worktreePath);
    } catch (error) {
      return {
        ok: false,
        code: "worktree_remove_failed",
        message: `Could not read the state of ${options.worktreePath}: ${errorClause(error)}.`,
      };
    }
    const changed = status.dirtyFiles.length + status.untrackedFiles.length;
    if (changed > 0) {
      return {
        ok: false,
        code: "dirty_worktree_requires_force",
        message: `The worktree ${options.worktreePath} has ${counted(changed, "uncommitted or untracked file")}; nothing was removed.`,
      };
    }
  }
  const locked = await lockedWorktreeRefusal(git, options.mainCheckout, options.worktreePath);
  if (locked !== undefined) return locked;
  const closed = await closeWindow();
  if (!closed.ok) return closed;
  try {
    await removeWorktree.call(git, options.mainCheckout, options.worktreePath, { force: options.force });
  } catch (error) {
    // The window is already closed here; say so, since the handoff is otherwise left as it was.
    return {
      ok: false,
      code: "worktree_remove_failed",
      message: `Could not remove the worktree ${options.worktreePath} (its window was closed first): ${errorClause(error)}.`,
    };
  }
  return { ok: true };
}
