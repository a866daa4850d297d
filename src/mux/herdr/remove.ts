/**
 * Recovery's removal of a handoff's worktree on Herdr: find the live workspace to remove it through
 * (the recorded one, else the one `worktree list` names, else one opened for it), check what git
 * says first, then `worktree remove --workspace`. `removalBlocker` is the same look, changing
 * nothing, so a dry run and a real run are refused for the same reason before anything is said.
 *
 * Invariants:
 * - Herdr removes a worktree only through a live workspace of it: a recorded id is used only while
 *   it still shows the checkout (ids are reused after a restart), a listed one only when it is the
 *   worktree's own (Herdr #4293), and a closed one is reopened first, never while Herdr would take
 *   over a stranger's workspace for it (create.ts). A workspace opened only for the removal is
 *   closed again when the removal fails.
 * - Before Herdr acts, git is asked (through the git port it was given; `git/` owns git): a locked
 *   checkout is refused (a forced remove stops its processes before git refuses), and without
 *   force a dirty one (Herdr tells git's refusal only in English).
 * - Git itself runs only where Herdr cannot act (a registered worktree whose directory is gone and
 *   whose workspace is closed: Herdr opens no workspace for it), and there is nothing left to lose.
 * - A removal never steals the focus: the workspace focused before is focused again (Herdr 0.8.2
 *   moves it to the repository's workspace when a background workspace goes).
 */
import { existsSync } from "node:fs";
import type { RecoveryGitPort } from "../../git/types.ts";
import type { MuxLocation } from "../../manifest/schema.ts";
import { errorClause } from "../../errors.ts";
import type { MuxFailure, MuxResult } from "../types.ts";
import { worktreeLocked } from "../git-worktree.ts";
import { publicFailure } from "./client.ts";
import { openWorktree, strangerHerdrWouldAdopt, type HerdrCreateParts } from "./create.ts";
import { asHerdrLocation, canonicalPath, findByPath, invalidLocation } from "./paths.ts";
import {
  isHerdrId,
  WorkspaceInfoResultSchema,
  WorkspaceListSchema,
  WorktreeListSchema,
  WorktreeRemovedSchema,
} from "./protocol.ts";

/**
 * What the backend asks git itself, before asking Herdr for something Herdr does irreversibly or
 * words in the server's language: whether a checkout is locked (a forced `worktree remove` stops the
 * workspace's processes before git runs), whether it is dirty (Herdr recognises git's refusal only in
 * English), and dropping the entry of a vanished checkout.
 */
export type HerdrGitPort = Pick<RecoveryGitPort, "removeWorktree" | "listWorktrees" | "worktreeStatus">;

/** What a removal needs: what opening needs, and git's port (none: nothing is checked, a vanished checkout is `unsupported`). */
export interface HerdrRemoveParts extends HerdrCreateParts {
  git: HerdrGitPort | undefined;
}

export interface RemoveOptions {
  mainCheckout: string;
  worktreePath: string;
  force: boolean;
}

/** What a removal goes through: a workspace of the worktree (`reopened` when opened for it), or nothing, its outcome known. */
type RemovalTarget =
  | { kind: "workspace"; workspaceId: string; reopened: boolean }
  | { kind: "done"; result: MuxResult<object> };

/**
 * Where a removal would go, found without changing Herdr: as `RemovalTarget`, a closed workspace
 * to open first, or git alone (a vanished checkout no workspace shows).
 */
type FoundTarget = RemovalTarget | { kind: "open" } | { kind: "unregister" };

/**
 * What would stop `removeWorktree` whatever `force` says, found without changing anything: the
 * same look for the workspace to remove through (recorded, listed, or one to open, never while
 * Herdr would take a stranger's workspace over for it), stopping where the removal would act.
 * The dry run and the real run of a removal both ask it before anything is said or done.
 */
export async function removalBlocker(
  parts: HerdrRemoveParts,
  location: MuxLocation,
  options: Omit<RemoveOptions, "force">,
): Promise<MuxResult<object>> {
  const herdr = asHerdrLocation(location);
  if (!herdr.ok) return herdr;
  const socketPath = herdr.location.socketPath ?? parts.client.socketPath;
  const wanted = await canonicalPath(options.worktreePath);
  const found = await findTarget(parts, herdr.location.workspaceId, options, wanted, socketPath);
  return found.kind === "done" && !found.result.ok ? found.result : { ok: true };
}

export async function removeWorktree(
  parts: HerdrRemoveParts,
  location: MuxLocation,
  options: RemoveOptions,
): Promise<MuxResult<object>> {
  const { client } = parts;
  const herdr = asHerdrLocation(location);
  if (!herdr.ok) return herdr;
  const socketPath = herdr.location.socketPath ?? client.socketPath;
  const wanted = await canonicalPath(options.worktreePath);
  const guarded = await gitAllowsRemoval(parts.git, options, wanted);
  if (!guarded.ok) return guarded;
  const found = await findTarget(parts, herdr.location.workspaceId, options, wanted, socketPath);
  if (found.kind === "unregister") return unregisterWithGit(parts.git, options);
  const trust = await client.trustArgs();
  const focusedBefore = await focusedWorkspace(parts, socketPath);
  const target: RemovalTarget =
    found.kind === "open" ? await openForRemoval(parts, options, wanted, socketPath) : found;
  if (target.kind === "done") return target.result;
  const { workspaceId, reopened } = target;

  const removed = await client.call(
    ["worktree", "remove", "--workspace", workspaceId, ...(options.force ? ["--force"] : []), ...trust],
    WorktreeRemovedSchema,
    "worktree remove",
    { timeoutMs: client.worktreeTimeoutMs, socketPath },
  );
  if (!removed.ok && reopened) {
    // Leave Herdr as it was: the workspace opened only to ask for the removal goes again.
    await client.send(["workspace", "close", workspaceId], "workspace close", { socketPath });
  }
  // Herdr 0.8.2 moves the focus to the repository's workspace when a background workspace goes
  // (fixed after the tag, #3099): a removal never steals the focus.
  await restoreFocus(parts, focusedBefore, workspaceId, socketPath);
  if (removed.ok) return { ok: true };
  if (removed.code === "dirty_worktree_requires_force") return dirtyWorktree(options.worktreePath);
  return publicFailure(removed);
}

/**
 * The recorded workspace, when it still shows this checkout: Herdr removes a worktree only
 * through its live workspace, and a recorded id may be stale (closed, or reused by another
 * workspace after a server restart).
 */
async function recordedWorkspace(
  parts: HerdrRemoveParts,
  recorded: string | undefined,
  wanted: string,
  socketPath: string | undefined,
): Promise<{ ok: true; workspaceId?: string } | MuxFailure> {
  if (!isHerdrId(recorded) || (await parts.membership.isOwnWorkspace(recorded, socketPath))) return { ok: true };
  const shown = await parts.client.call(["workspace", "get", recorded], WorkspaceInfoResultSchema, "workspace get", {
    socketPath,
  });
  if (shown.ok) {
    const checkout = shown.result.workspace.worktree?.checkout_path;
    return checkout !== undefined && (await canonicalPath(checkout)) === wanted
      ? { ok: true, workspaceId: recorded }
      : { ok: true };
  }
  return shown.code === "workspace_not_found" ? { ok: true } : publicFailure(shown);
}

/**
 * The workspace to remove the worktree through (the recorded one, else the one `worktree list`
 * names), a closed one to open first, or the removal's whole outcome when there is none to go
 * through. Changes nothing.
 */
async function findTarget(
  parts: HerdrRemoveParts,
  recordedId: string | undefined,
  options: Omit<RemoveOptions, "force">,
  wanted: string,
  socketPath: string | undefined,
): Promise<FoundTarget> {
  const recorded = await recordedWorkspace(parts, recordedId, wanted, socketPath);
  if (!recorded.ok) return { kind: "done", result: recorded };
  if (recorded.workspaceId !== undefined)
    return { kind: "workspace", workspaceId: recorded.workspaceId, reopened: false };
  const trust = await parts.client.trustArgs();
  const listed = await parts.client.call(
    ["worktree", "list", "--cwd", options.mainCheckout, ...trust],
    WorktreeListSchema,
    "worktree list",
    { socketPath },
  );
  if (!listed.ok) return { kind: "done", result: publicFailure(listed) };
  const entry = await findByPath(listed.result.worktrees, wanted);
  if (entry === undefined) {
    if (!existsSync(wanted)) return { kind: "done", result: { ok: true } };
    return {
      kind: "done",
      result: {
        ok: false,
        code: "not_linked_worktree",
        message: `${options.worktreePath} exists but is not a worktree of ${options.mainCheckout}, so it was not removed.`,
      },
    };
  }
  // The workspace the list names may be the repository's own (Herdr #4293): only a verified one counts.
  const listedId = entry.open_workspace_id;
  if (listedId !== undefined && (await parts.membership.childWorkspace(listedId, wanted, socketPath)).ok) {
    return { kind: "workspace", workspaceId: listedId, reopened: false };
  }
  if (entry.is_prunable || !existsSync(wanted)) {
    // The checkout is gone and no workspace shows it: Herdr cannot open (so cannot remove) it,
    // and there is nothing left to lose in it; git alone drops its entry.
    return { kind: "unregister" };
  }
  // Herdr cannot remove a worktree whose workspace is closed (upstream #4317): reopen it first,
  // unless Herdr would take over another workspace sitting in the checkout for it.
  const stranger = await strangerHerdrWouldAdopt(parts, wanted, socketPath, () => false);
  if (stranger !== undefined) return { kind: "done", result: stranger };
  return { kind: "open" };
}

/** Opens the closed workspace of the worktree to remove it through (`reopened`: closed again if the removal fails). */
async function openForRemoval(
  parts: HerdrRemoveParts,
  options: RemoveOptions,
  wanted: string,
  socketPath: string | undefined,
): Promise<RemovalTarget> {
  const opened = await openWorktree(parts, options.mainCheckout, wanted, undefined, socketPath);
  if (!opened.ok) return { kind: "done", result: publicFailure(opened) };
  const workspaceId = opened.location.workspaceId;
  if (workspaceId === undefined)
    return { kind: "done", result: invalidLocation(`Herdr reported no workspace for ${options.worktreePath}.`) };
  return { kind: "workspace", workspaceId, reopened: !opened.alreadyOpen };
}

/**
 * What git itself says before Herdr is asked to remove: a locked checkout is refused here, since a
 * forced `worktree remove` stops the workspace's processes before git runs
 * (src/app/api/worktrees/deferred.rs) and git then refuses anyway; without force a dirty checkout
 * is refused here, since Herdr tells git's refusal only in English. Without a git port, nothing is
 * checked.
 */
async function gitAllowsRemoval(
  git: HerdrGitPort | undefined,
  options: RemoveOptions,
  wanted: string,
): Promise<MuxResult<object>> {
  if (git === undefined) return { ok: true };
  let entries: Awaited<ReturnType<HerdrGitPort["listWorktrees"]>>;
  try {
    entries = await git.listWorktrees(options.mainCheckout);
  } catch (error) {
    return {
      ok: false,
      code: "git_failed",
      message: `Could not list the worktrees of ${options.mainCheckout}: ${errorClause(error)}.`,
    };
  }
  let entry: (typeof entries)[number] | undefined;
  for (const candidate of entries) if ((await canonicalPath(candidate.path)) === wanted) entry = candidate;
  if (entry?.locked === true) return worktreeLocked(options.worktreePath);
  if (options.force || entry === undefined || !existsSync(wanted)) return { ok: true };
  try {
    const status = await git.worktreeStatus(wanted);
    if (status.dirtyFiles.length === 0 && status.untrackedFiles.length === 0) return { ok: true };
  } catch (error) {
    return {
      ok: false,
      code: "git_failed",
      message: `Could not read the changes in ${options.worktreePath}: ${errorClause(error)}.`,
    };
  }
  return dirtyWorktree(options.worktreePath);
}

/** The focused workspace (one `workspace list`), or undefined when Herdr cannot say. */
async function focusedWorkspace(parts: HerdrRemoveParts, socketPath: string | undefined): Promise<string | undefined> {
  const listed = await parts.client.call(["workspace", "list"], WorkspaceListSchema, "workspace list", { socketPath });
  return listed.ok ? listed.result.workspaces.find((workspace) => workspace.focused)?.workspace_id : undefined;
}

/** Focuses `before` again when it still exists and something else took the focus; best effort. */
async function restoreFocus(
  parts: HerdrRemoveParts,
  before: string | undefined,
  removed: string,
  socketPath: string | undefined,
): Promise<void> {
  if (before === undefined || before === removed) return;
  const { client } = parts;
  const listed = await client.call(["workspace", "list"], WorkspaceListSchema, "workspace list", { socketPath });
  if (!listed.ok) return;
  const focused = listed.result.workspaces.find((workspace) => workspace.focused)?.workspace_id;
  if (focused === before || !listed.result.workspaces.some((workspace) => workspace.workspace_id === before)) return;
  await client.call(["workspace", "focus", before], WorkspaceInfoResultSchema, "workspace focus", { socketPath });
}

/** `git worktree remove` for a registered checkout whose directory is gone (see `removeWorktree`). */
async function unregisterWithGit(git: HerdrGitPort | undefined, options: RemoveOptions): Promise<MuxResult<object>> {
  if (git === undefined) {
    return {
      ok: false,
      code: "unsupported",
      message: `The worktree ${options.worktreePath} is gone and Herdr cannot open it; drop git's entry with: git worktree prune.`,
    };
  }
  try {
    await git.removeWorktree(options.mainCheckout, options.worktreePath, { force: options.force });
  } catch (error) {
    const detail = errorClause(error);
    return {
      ok: false,
      code: "worktree_remove_failed",
      message: `Could not drop git's entry for ${options.worktreePath}: ${detail}.`,
    };
  }
  return { ok: true };
}

function dirtyWorktree(worktreePath: string): MuxFailure {
  return {
    ok: false,
    code: "dirty_worktree",
    message: `The worktree at ${worktreePath} has uncommitted or untracked changes, so it was not removed; commit or discard them, or remove it with force.`,
  };
}
