/**
 * A handoff's Herdr workspace as recovery and the focus see it: whether it is still open (and still
 * the handoff's), where a moved pane went, a workspace the manifest never recorded, and the focus.
 *
 * Invariants:
 * - Herdr numbers workspaces anew after a restart: with an owner given, a recorded id counts as
 *   open only while it still names the worktree's own pane or workspace (membership.ts); a
 *   stranger's under a reused id is `closed` for the handoff, never typed into or closed.
 * - A server that does not answer is `unknown`, never `closed`: it may restore the pane when it
 *   restarts. A moved pane answers under new ids (`pane get <old>`): it is open, and the new ids
 *   are reported.
 * - `findUnrecordedWindow` only reads: a workspace counts as a handoff's only when it carries the
 *   label the handoff recorded AND its checkout is the handoff's worktree.
 * - `focus` never focuses this process's own workspace as a child's.
 */
import type { MuxLocation } from "../../manifest/schema.ts";
import type { MuxFailure, MuxResult, UnrecordedWindow, WorkspaceOwner, WorkspaceState } from "../types.ts";
import { publicFailure, type HerdrClient } from "./client.ts";
import type { HerdrMembership } from "./membership.ts";
import { asHerdrLocation, canonicalPath, invalidLocation } from "./paths.ts";
import {
  isHerdrId,
  PaneInfoResultSchema,
  PaneListSchema,
  WorkspaceInfoResultSchema,
  WorkspaceListSchema,
} from "./protocol.ts";
import { paneAgent } from "./reports.ts";

export async function focusWorkspace(
  client: HerdrClient,
  membership: HerdrMembership,
  location: MuxLocation,
): Promise<MuxResult<object>> {
  const herdr = asHerdrLocation(location);
  if (!herdr.ok) return herdr;
  const workspaceId = herdr.location.workspaceId;
  if (!isHerdrId(workspaceId)) {
    return invalidLocation("The Herdr location has no valid workspace id to focus.");
  }
  if (await membership.isOwnWorkspace(workspaceId, herdr.location.socketPath ?? client.socketPath))
    return ownWorkspace(workspaceId);
  const focused = await client.call(["workspace", "focus", workspaceId], WorkspaceInfoResultSchema, "workspace focus", {
    socketPath: herdr.location.socketPath ?? client.socketPath,
  });
  if (!focused.ok)
    return focused.code === "workspace_not_found" ? workspaceNotFound(workspaceId) : publicFailure(focused);
  return { ok: true };
}

export async function workspaceState(
  client: HerdrClient,
  membership: HerdrMembership,
  location: MuxLocation,
  owner?: WorkspaceOwner,
): Promise<WorkspaceState> {
  const herdr = asHerdrLocation(location);
  if (!herdr.ok) return { code: "unknown", message: herdr.message };
  const socketPath = herdr.location.socketPath ?? client.socketPath;
  const { paneId, workspaceId } = herdr.location;
  if (isHerdrId(paneId)) {
    const shown = await client.call(["pane", "get", paneId], PaneInfoResultSchema, "pane get", { socketPath });
    if (shown.ok) {
      const pane = shown.result.pane;
      // Herdr numbers workspaces anew after a restart (from the highest restored id + 1, or w1):
      // a recorded id may name a stranger's pane now. Only the worktree's own pane is the handoff's.
      if (owner !== undefined) {
        const belongs = await membership.paneBelongsTo(pane, owner.worktreePath, socketPath);
        if (belongs !== true) return belongs === false ? { code: "closed" } : belongs;
      }
      const agent = await paneAgent(client, pane, socketPath);
      // A moved pane answers under its new ids (the old one is an alias): open, and where it is now.
      const moved =
        pane.pane_id !== paneId || pane.workspace_id !== workspaceId || pane.tab_id !== herdr.location.tabId;
      return {
        code: "open",
        ...(moved ? { location: client.location(socketPath, pane.workspace_id, pane.tab_id, pane.pane_id) } : {}),
        ...(agent !== undefined ? { agent } : {}),
      };
    }
    // A server that is down may restore the pane when it restarts: that is not "closed".
    return shown.code === "pane_not_found" ? { code: "closed" } : { code: "unknown", message: shown.message };
  }
  if (isHerdrId(workspaceId)) {
    const shown = await client.call(["workspace", "get", workspaceId], WorkspaceInfoResultSchema, "workspace get", {
      socketPath,
    });
    if (!shown.ok)
      return shown.code === "workspace_not_found" ? { code: "closed" } : { code: "unknown", message: shown.message };
    if (shown.result.workspace.workspace_id !== workspaceId) return { code: "closed" };
    if (owner === undefined) return { code: "open" };
    const worktree = shown.result.workspace.worktree;
    const own =
      worktree !== undefined &&
      worktree.is_linked_worktree &&
      (await canonicalPath(worktree.checkout_path)) === (await canonicalPath(owner.worktreePath));
    return own ? { code: "open" } : { code: "closed" };
  }
  return { code: "closed" };
}

/** A workspace on the recorded server labelled `label` whose checkout is the worktree, with its root pane. Read-only. */
export async function findUnrecordedWindow(
  client: HerdrClient,
  location: MuxLocation,
  query: { label: string; worktreePath: string },
): Promise<UnrecordedWindow> {
  const socketPath = (location.kind === "herdr" ? location.socketPath : undefined) ?? client.socketPath;
  const listed = await client.call(["workspace", "list"], WorkspaceListSchema, "workspace list", { socketPath });
  // A server that does not answer may still hold it (and restore it when it starts): unknown, not none.
  if (!listed.ok) return { code: "unknown", message: listed.message };
  const wanted = await canonicalPath(query.worktreePath);
  for (const workspace of listed.result.workspaces) {
    const checkout = workspace.worktree?.checkout_path;
    if (workspace.label !== query.label || checkout === undefined || (await canonicalPath(checkout)) !== wanted)
      continue;
    const panes = await client.call(
      ["pane", "list", "--workspace", workspace.workspace_id],
      PaneListSchema,
      "pane list",
      { socketPath },
    );
    if (!panes.ok) return { code: "unknown", message: panes.message };
    const root = panes.result.panes.find((pane) => pane.workspace_id === workspace.workspace_id);
    if (root === undefined) continue;
    return { code: "found", location: client.location(socketPath, workspace.workspace_id, root.tab_id, root.pane_id) };
  }
  return { code: "none" };
}

function ownWorkspace(workspaceId: string): MuxFailure {
  return {
    ok: false,
    code: "own_workspace",
    message: `Herdr workspace ${workspaceId} is the workspace this Pi runs in, not a handoff's, so it was left alone.`,
  };
}

function workspaceNotFound(workspaceId: string): MuxFailure {
  return { ok: false, code: "workspace_not_found", message: `Herdr workspace ${workspaceId} no longer exists.` };
}
