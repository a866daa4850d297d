/**
 * A worktree's Herdr workspace made or opened: `worktree create` for a handoff (Herdr itself
 * creates the checkout), `worktree open --path` for recovery's reopen and for a removal that needs
 * a live workspace, and what is done when a create's answer was lost.
 *
 * Invariants:
 * - Nothing steals focus: creating and opening pass `--no-focus`.
 * - A create whose answer was lost (partial success, timeout, unreadable output) is reconciled
 *   through `herdr worktree list` before it is called a failure, for up to `lateCompletionMs`
 *   while the server may still finish it (the bounds are listed in docs/herdr.md), and whatever
 *   exists is reported in `partial` so the transaction records it.
 * - A workspace Herdr names for a worktree is used only when it is that worktree's own linked
 *   workspace, never this process's own workspace or the repository's (Herdr #4293).
 * - `worktree open` is never asked while Herdr would take over a stranger's workspace sitting in
 *   the checkout (`strangerHerdrWouldAdopt`); an open workspace is typed into only when its root
 *   pane shows a shell at its prompt.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { MuxLocation } from "../../manifest/schema.ts";
import type {
  CreatedWorkspace,
  CreateWorkspaceRequest,
  MuxFailure,
  MuxResult,
  ReopenWorkspaceRequest,
} from "../types.ts";
import { muxLabel } from "../label.ts";
import { stripPeriod } from "../../text.ts";
import { FINAL_POLL_FAILURES, publicFailure, type CallFailure, type HerdrClient } from "./client.ts";
import type { HerdrLocation } from "../../manifest/locations.ts";
import type { HerdrMembership } from "./membership.ts";
import { canonicalPath, isWithin, socketOf } from "./paths.ts";
import {
  PaneListSchema,
  WorkspaceListSchema,
  WorktreeCreatedSchema,
  WorktreeListSchema,
  WorktreeOpenedSchema,
  type HerdrWorkspaceInfo,
  type HerdrWorktreeInfo,
} from "./protocol.ts";

const RECONCILE_INTERVAL_MS = 250;
/** Failures of `worktree create` after which the checkout (and maybe its workspace) may exist anyway. */
const UNCERTAIN_CREATE_FAILURES = new Set([
  "worktree_open_failed",
  "timeout",
  "malformed_output",
  "worktree_operation_in_progress",
]);
/** Of those, the ones after which Herdr's server may still be working on it (so list more than once). */
const STILL_RUNNING_CREATE_FAILURES = new Set(["timeout", "worktree_operation_in_progress"]);

/** What creating and opening need: Herdr, whose workspaces are whose, and how long a lost create is watched. */
export interface HerdrCreateParts {
  client: HerdrClient;
  membership: HerdrMembership;
  lateCompletionMs: number;
}

export async function createWorkspace(
  parts: HerdrCreateParts,
  request: CreateWorkspaceRequest,
): Promise<MuxResult<CreatedWorkspace>> {
  const { client } = parts;
  const trust = await client.trustArgs();
  void parts.membership.ownWorkspaceIds();
  const created = await client.call(
    [
      "worktree",
      "create",
      "--cwd",
      request.mainCheckout,
      "--branch",
      request.branch,
      // For an existing branch (`--existing`) Herdr checks it out as it is and ignores --base:
      // exactly what is asked; the transaction then checks that HEAD is the branch's commit.
      "--base",
      request.baseSha,
      "--path",
      request.worktreePath,
      "--label",
      muxLabel(request.label),
      "--no-focus",
      ...trust,
    ],
    WorktreeCreatedSchema,
    "worktree create",
    { timeoutMs: client.worktreeTimeoutMs },
  );
  if (created.ok) {
    const { result } = created;
    return {
      ok: true,
      location: client.location(
        client.socketPath,
        result.workspace.workspace_id,
        result.tab.tab_id,
        result.root_pane.pane_id,
      ),
      worktreePath: await canonicalPath(result.worktree.path),
    };
  }
  if (UNCERTAIN_CREATE_FAILURES.has(created.code)) return reconcileCreate(parts, request, created, trust);
  return { ok: false, code: created.code, message: describeCreateFailure(request, created) };
}

export async function reopenWorkspace(
  parts: HerdrCreateParts,
  request: ReopenWorkspaceRequest,
): Promise<MuxResult<{ location: MuxLocation }>> {
  const { client } = parts;
  const socketPath = (request.previous.kind === "herdr" ? request.previous.socketPath : undefined) ?? client.socketPath;
  const wanted = await canonicalPath(request.worktreePath);
  // `worktree open` takes over any workspace sitting in the checkout: only the handoff's own may be there.
  const label = muxLabel(request.label);
  const stranger = await strangerHerdrWouldAdopt(parts, wanted, socketPath, (workspace) => workspace.label === label);
  if (stranger !== undefined) return stranger;
  const opened = await openWorktree(parts, request.mainCheckout, request.worktreePath, request.label, socketPath);
  if (!opened.ok) return publicFailure(opened);
  if (opened.alreadyOpen) {
    // An open workspace is typed into next: its root pane must be a shell at its prompt, not a
    // program (an editor, another Pi) that would take the typed line as input.
    const paneId = opened.location.paneId ?? "";
    const info = await client.processInfo(paneId, socketPath);
    if (!info.ok) return publicFailure(info);
    const { shell_pid: shellPid, foreground_process_group_id: foreground } = info.result.process_info;
    if (shellPid === undefined || shellPid !== foreground) {
      const running =
        info.result.process_info.foreground_processes.map((process) => process.name).join(", ") || "another program";
      return {
        ok: false,
        code: "workspace_busy",
        message: `Herdr workspace ${opened.location.workspaceId ?? "?"} for ${request.worktreePath} is open and its root pane runs ${running}, not a shell, so nothing was typed into it.`,
      };
    }
  }
  return { ok: true, location: opened.location };
}

/** `worktree open --path`, unfocused: the workspace for an existing checkout (a new id if it was closed). */
export async function openWorktree(
  parts: HerdrCreateParts,
  mainCheckout: string,
  worktreePath: string,
  label: string | undefined,
  socketPath: string | undefined,
): Promise<{ ok: true; location: HerdrLocation; alreadyOpen: boolean } | CallFailure> {
  const { client } = parts;
  const opened = await client.call(
    [
      "worktree",
      "open",
      "--cwd",
      mainCheckout,
      "--path",
      worktreePath,
      ...(label !== undefined ? ["--label", muxLabel(label)] : []),
      "--no-focus",
      ...(await client.trustArgs()),
    ],
    WorktreeOpenedSchema,
    "worktree open",
    { timeoutMs: client.worktreeTimeoutMs, socketPath },
  );
  if (!opened.ok) return opened;
  const { result } = opened;
  // Herdr #4293: the answer may name the repository's own workspace (its root pane sits in the checkout).
  const checked = await parts.membership.childWorkspace(
    result.workspace.workspace_id,
    await canonicalPath(worktreePath),
    socketPath,
  );
  if (!checked.ok) return checked;
  return {
    ok: true,
    location: client.location(socketPath, result.workspace.workspace_id, result.tab.tab_id, result.root_pane.pane_id),
    alreadyOpen: result.already_open,
  };
}

/**
 * A refusal when Herdr, asked to open the worktree at `wanted`, would take over a workspace that
 * is not the handoff's: `worktree open` adopts the first workspace whose membership is the checkout
 * or whose root pane sits anywhere in it (a subdirectory too), rewriting its membership and label
 * (src/app/api/worktrees.rs `open_workspace_idx_for_checkout`). Checked before acting: afterwards
 * the adopted workspace looks like the worktree's own. Any pane in the checkout counts, not only
 * the root pane Herdr looks at, so nothing Herdr might adopt is missed.
 */
export async function strangerHerdrWouldAdopt(
  parts: Pick<HerdrCreateParts, "client" | "membership">,
  wanted: string,
  socketPath: string | undefined,
  isOwn: (workspace: HerdrWorkspaceInfo) => boolean,
): Promise<MuxFailure | undefined> {
  const { client } = parts;
  const [listed, panes] = await Promise.all([
    client.call(["workspace", "list"], WorkspaceListSchema, "workspace list", { socketPath }),
    client.call(["pane", "list"], PaneListSchema, "pane list", { socketPath }),
  ]);
  if (!listed.ok) return publicFailure(listed);
  if (!panes.ok) return publicFailure(panes);
  // Each workspace's panes that sit in the checkout, to name what runs there.
  const sittingInCheckout = new Map<string, string[]>();
  for (const pane of panes.result.panes) {
    for (const cwd of [pane.cwd, pane.foreground_cwd]) {
      if (cwd === undefined || !isWithin(await canonicalPath(cwd), wanted)) continue;
      const sitting = sittingInCheckout.get(pane.workspace_id) ?? [];
      if (!sitting.includes(pane.pane_id)) sitting.push(pane.pane_id);
      sittingInCheckout.set(pane.workspace_id, sitting);
    }
  }
  for (const workspace of listed.result.workspaces) {
    const membership = workspace.worktree;
    const member =
      membership !== undefined &&
      membership.is_linked_worktree &&
      (await canonicalPath(membership.checkout_path)) === wanted;
    if (member && isOwn(workspace)) continue;
    if (!member && !sittingInCheckout.has(workspace.workspace_id)) continue;
    const whose = (await parts.membership.isOwnWorkspace(workspace.workspace_id, socketPath))
      ? "the workspace this Pi runs in"
      : `workspace ${JSON.stringify(workspace.label)}`;
    const running = await foregroundIn(client, sittingInCheckout.get(workspace.workspace_id) ?? [], socketPath);
    const what = running.length > 0 ? `${running.join(", ")} running` : "a shell";
    return {
      ok: false,
      code: "workspace_in_worktree",
      message: `Herdr workspace ${workspace.workspace_id}, ${whose}, has ${what} in the worktree ${wanted}, and Herdr would take that workspace over for the worktree if asked to open it, so nothing was opened; ${running.length > 0 ? "quit it, " : ""}close it or cd its panes out of the worktree, then try again.`,
    };
  }
  return undefined;
}

/**
 * The programs holding the foreground of `paneIds` other than their shell (`cat`, `vim`), by name,
 * each once; empty when each pane's shell holds it (or Herdr cannot say: then "a shell" is the most
 * that is known).
 */
async function foregroundIn(
  client: HerdrClient,
  paneIds: readonly string[],
  socketPath: string | undefined,
): Promise<string[]> {
  const names: string[] = [];
  for (const paneId of paneIds) {
    const info = await client.processInfo(paneId, socketPath);
    if (!info.ok) continue;
    const { shell_pid: shellPid, foreground_process_group_id: foreground } = info.result.process_info;
    if (shellPid !== undefined && shellPid === foreground) continue;
    for (const process of info.result.process_info.foreground_processes)
      if (process.pid !== shellPid && !names.includes(process.name)) names.push(process.name);
  }
  return names;
}

/**
 * After a lost answer: what does `worktree list` say exists? A unique entry at the planned path (or
 * on the branch) with its own open workspace and a pane is the created workspace; a checkout
 * without a workspace is a partial success, reported as such. After a timeout (or while Herdr
 * says the operation is in progress) the server may still finish the create in its thread and
 * open the workspace then, so the list is watched for up to `lateCompletionMs`.
 */
async function reconcileCreate(
  parts: HerdrCreateParts,
  request: CreateWorkspaceRequest,
  failure: CallFailure,
  trust: readonly string[],
): Promise<MuxResult<CreatedWorkspace>> {
  const base = describeCreateFailure(request, failure);
  const deadline = Date.now() + (STILL_RUNNING_CREATE_FAILURES.has(failure.code) ? parts.lateCompletionMs : 0);
  const wanted = await canonicalPath(request.worktreePath);
  for (;;) {
    const seen = await lookForCreated(parts, request, wanted, failure, base, trust);
    if (seen.final || Date.now() + RECONCILE_INTERVAL_MS >= deadline) return seen.outcome;
    await sleep(RECONCILE_INTERVAL_MS);
  }
}

/** One look at `worktree list` for a create whose answer was lost; `final` when waiting cannot change it. */
async function lookForCreated(
  parts: HerdrCreateParts,
  request: CreateWorkspaceRequest,
  wanted: string,
  failure: CallFailure,
  base: string,
  trust: readonly string[],
): Promise<{ final: boolean; outcome: MuxResult<CreatedWorkspace> }> {
  // Each look gets the whole quick-call timeout: the watch ends at the deadline, not a look.
  const listed = await parts.client.call(
    ["worktree", "list", "--cwd", request.mainCheckout, ...trust],
    WorktreeListSchema,
    "worktree list",
  );
  if (!listed.ok) {
    return {
      final: FINAL_POLL_FAILURES.has(listed.code),
      outcome: {
        ok: false,
        code: failure.code,
        message: `${stripPeriod(base)}, and herdr worktree list could not show what exists (${stripPeriod(listed.message)}).`,
        // Herdr said the checkout exists; record where, so it is not lost.
        ...(failure.code === "worktree_open_failed" ? { partial: { worktreePath: request.worktreePath } } : {}),
      },
    };
  }
  const matches: HerdrWorktreeInfo[] = [];
  for (const entry of listed.result.worktrees) {
    if ((await canonicalPath(entry.path)) === wanted || entry.branch === request.branch) matches.push(entry);
  }
  if (matches.length === 0) {
    // "In progress" already says the checkout is not there yet; the other failures did not say.
    const message =
      failure.code === "worktree_operation_in_progress" ? base : `${stripPeriod(base)}, and no worktree was created.`;
    return { final: false, outcome: { ok: false, code: failure.code, message } };
  }
  const entry = matches[0];
  if (matches.length > 1 || entry === undefined) {
    return {
      final: true,
      outcome: {
        ok: false,
        code: failure.code,
        message: `${stripPeriod(base)}, and herdr worktree list shows ${matches.length} worktrees at ${request.worktreePath} or on branch ${request.branch}, so none is taken as this handoff's.`,
      },
    };
  }
  return adoptListed(parts, entry, failure, base);
}

/** The one worktree `worktree list` shows for a lost create: taken when its own workspace and root pane are there. */
async function adoptListed(
  parts: HerdrCreateParts,
  entry: HerdrWorktreeInfo,
  failure: CallFailure,
  base: string,
): Promise<{ final: boolean; outcome: MuxResult<CreatedWorkspace> }> {
  const { client } = parts;
  const worktreePath = await canonicalPath(entry.path);
  const workspaceId = entry.open_workspace_id;
  const own =
    workspaceId !== undefined
      ? await parts.membership.childWorkspace(workspaceId, worktreePath, client.socketPath)
      : undefined;
  if (workspaceId !== undefined && own?.ok === true) {
    const panes = await client.call(["pane", "list", "--workspace", workspaceId], PaneListSchema, "pane list");
    const root = panes.ok ? panes.result.panes.find((pane) => pane.workspace_id === workspaceId) : undefined;
    if (root !== undefined) {
      return {
        final: true,
        outcome: {
          ok: true,
          location: client.location(client.socketPath, workspaceId, root.tab_id, root.pane_id),
          worktreePath,
        },
      };
    }
    return {
      final: false,
      outcome: {
        ok: false,
        code: failure.code,
        message: `${stripPeriod(base)}; the worktree at ${worktreePath} and Herdr workspace ${workspaceId} exist, but no pane of it was found.`,
        partial: { worktreePath, location: { kind: "herdr", ...socketOf(client.socketPath), workspaceId } },
      },
    };
  }
  return {
    final: false,
    outcome: {
      ok: false,
      code: failure.code,
      // worktree_open_failed already says the checkout exists; a lost answer does not.
      message:
        failure.code === "worktree_open_failed"
          ? base
          : `${stripPeriod(base)}; the worktree at ${worktreePath} exists, but Herdr opened no workspace for it.`,
      partial: { worktreePath, location: { kind: "herdr", ...socketOf(client.socketPath) } },
    },
  };
}

function describeCreateFailure(request: CreateWorkspaceRequest, failure: CallFailure): string {
  const detail = stripPeriod(failure.detail);
  switch (failure.code) {
    case "linked_worktree_source":
      return `Herdr refused to create the worktree because ${request.mainCheckout} is a linked worktree, not the repository's main checkout.`;
    case "not_git_worktree":
      return `Herdr refused to create the worktree because ${request.mainCheckout} is not inside a git work tree.`;
    case "worktree_create_failed":
      return `Herdr could not create the worktree at ${request.worktreePath}: ${detail}.`;
    case "worktree_operation_in_progress":
      return `Another Herdr worktree operation is using ${request.worktreePath}; wait for it to finish, then hand off again.`;
    case "stale_worktree_operation":
      return `Herdr reports a stale worktree operation for ${request.worktreePath}; restart Herdr's server, then hand off again.`;
    case "worktree_open_failed":
      return `Herdr created the worktree at ${request.worktreePath} but could not open a workspace for it (${detail}).`;
    default:
      return `${stripPeriod(failure.message)}.`;
  }
}
