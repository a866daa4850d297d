/**
 * Whose a Herdr workspace is: this process's own (the workspace its Pi runs in), a worktree's own
 * linked workspace, or a stranger's. Every part of the backend that types into, focuses, closes or
 * removes through a workspace asks here first.
 *
 * Invariants:
 * - This process's own workspace is never a handoff's: `HERDR_WORKSPACE_ID` of the Pi that runs
 *   this, and where its pane (`HERDR_PANE_ID`) is now (a moved pane keeps its launch-time ids;
 *   `pane get` follows the alias). Asked once per backend, and only on the same server.
 * - A workspace Herdr names for a worktree counts as the worktree's only when its membership is
 *   that checkout as a linked worktree (never the repository's own: Herdr #4293).
 * - Paths are compared by realpath (paths.ts). Only reads: nothing here changes Herdr.
 */
import { resolve } from "node:path";
import { callFailure, type CallFailure, type HerdrClient } from "./client.ts";
import { canonicalPath, isWithin } from "./paths.ts";
import { isHerdrId, PaneInfoResultSchema, WorkspaceInfoResultSchema, type HerdrPaneInfo } from "./protocol.ts";

export class HerdrMembership {
  readonly #client: HerdrClient;
  #ownWorkspaces: Promise<Set<string>> | undefined;

  constructor(client: HerdrClient) {
    this.#client = client;
  }

  /**
   * Whether `workspaceId` on `socketPath`'s server is this process's own workspace (see
   * `ownWorkspaceIds`); a workspace on another server never is.
   */
  async isOwnWorkspace(workspaceId: string, socketPath: string | undefined): Promise<boolean> {
    const env = this.#client.env;
    const ownSocket =
      env.HERDR_SOCKET_PATH !== undefined && env.HERDR_SOCKET_PATH !== ""
        ? resolve(env.HERDR_SOCKET_PATH)
        : this.#client.socketPath;
    if (socketPath !== undefined && ownSocket !== undefined && resolve(socketPath) !== ownSocket) return false;
    return (await this.ownWorkspaceIds()).has(workspaceId);
  }

  /**
   * This process's own workspace, on the same server: `HERDR_WORKSPACE_ID` of the Pi that runs this,
   * and where its pane (`HERDR_PANE_ID`) is now, since a process keeps its launch-time ids when its
   * pane is moved (`pane get` follows the alias). Asked once per backend; started early by
   * `createWorkspace` so the focus after a handoff waits for nothing.
   */
  ownWorkspaceIds(): Promise<Set<string>> {
    this.#ownWorkspaces ??= (async () => {
      const own = new Set<string>();
      const {
        HERDR_WORKSPACE_ID: launchWorkspace,
        HERDR_PANE_ID: ownPane,
        HERDR_SOCKET_PATH: ownSocket,
      } = this.#client.env;
      if (isHerdrId(launchWorkspace)) own.add(launchWorkspace);
      if (isHerdrId(ownPane)) {
        const socketPath = ownSocket !== undefined && ownSocket !== "" ? resolve(ownSocket) : this.#client.socketPath;
        const shown = await this.#client.call(["pane", "get", ownPane], PaneInfoResultSchema, "pane get", {
          socketPath,
        });
        if (shown.ok) own.add(shown.result.pane.workspace_id);
      }
      return own;
    })();
    return this.#ownWorkspaces;
  }

  /**
   * Whether `workspaceId` is the worktree's own linked workspace: never this process's own, and its
   * membership (as `workspace get` shows it) is this checkout as a linked worktree. Herdr #4293
   * names the repository's workspace when its root pane sits there.
   */
  async childWorkspace(
    workspaceId: string,
    wanted: string,
    socketPath: string | undefined,
  ): Promise<{ ok: true } | CallFailure> {
    const named = (whose: string): string =>
      `Herdr named workspace ${workspaceId} for the worktree ${wanted}, but it is ${whose}, so it was left alone; a shell of that workspace in the worktree makes Herdr name it (Herdr #4293): cd out of the worktree there and try again.`;
    if (await this.isOwnWorkspace(workspaceId, socketPath))
      return callFailure("own_workspace", named("the workspace this Pi runs in"));
    const shown = await this.#client.call(
      ["workspace", "get", workspaceId],
      WorkspaceInfoResultSchema,
      "workspace get",
      {
        socketPath,
      },
    );
    if (!shown.ok) return shown;
    const membership = shown.result.workspace.worktree;
    if (
      membership !== undefined &&
      membership.is_linked_worktree &&
      (await canonicalPath(membership.checkout_path)) === wanted
    )
      return { ok: true };
    return callFailure("not_worktree_workspace", named("the repository's own workspace, not the worktree's"));
  }

  /**
   * Whether a pane Herdr shows under a recorded id is the handoff's: its workspace is the worktree's
   * linked workspace, or (a workspace without a worktree membership, as a moved pane gets) its shell
   * or foreground sits in the worktree. `unknown` when Herdr could not be asked.
   */
  async paneBelongsTo(
    pane: HerdrPaneInfo,
    worktreePath: string,
    socketPath: string | undefined,
  ): Promise<boolean | { code: "unknown"; message: string }> {
    const wanted = await canonicalPath(worktreePath);
    const shown = await this.#client.call(
      ["workspace", "get", pane.workspace_id],
      WorkspaceInfoResultSchema,
      "workspace get",
      {
        socketPath,
      },
    );
    if (!shown.ok) return shown.code === "workspace_not_found" ? false : { code: "unknown", message: shown.message };
    const membership = shown.result.workspace.worktree;
    if (membership !== undefined)
      return membership.is_linked_worktree && (await canonicalPath(membership.checkout_path)) === wanted;
    for (const cwd of [pane.cwd, pane.foreground_cwd]) {
      if (cwd !== undefined && isWithin(await canonicalPath(cwd), wanted)) return true;
    }
    return false;
  }
}
