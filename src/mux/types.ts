/**
 * The terminal multiplexer seen by the handoff transaction.
 *
 * Invariants:
 * - Nothing here steals focus except `focus()`.
 * - Every method has a bounded duration (each outside call carries a timeout).
 * - Failures are values (`{ ok: false, code, message }`), never thrown, so the transaction can
 *   record them; `message` is one sentence a user can act on.
 */
import type { MuxKind, MuxLocation } from "../manifest/schema.ts";
import type { DescribedProcess } from "../process/facts.ts";
import type { Failed } from "../outcome.ts";

export type MuxResult<T> = ({ ok: true } & T) | MuxFailure;
/**
 * A stable snake_case code, e.g. `timeout`, `pane_not_found`, `server_not_running`: an open set,
 * since a Herdr failure carries Herdr's own code (herdr/client.ts).
 */
export type MuxFailureCode = string;
export type MuxFailure = Failed<
  MuxFailureCode,
  {
    /** Whatever was created before the failure (partial success), so it can be recorded. */
    partial?: { location?: MuxLocation; worktreePath?: string; commandStarted?: boolean };
  }
>;

export interface CreateWorkspaceRequest {
  /** The repository's main (non-linked) checkout. */
  mainCheckout: string;
  branch: string;
  baseSha: string;
  /** Where the worktree goes (absolute, canonical). */
  worktreePath: string;
  /** Short label for the window/workspace. */
  label: string;
  /**
   * `--existing`: `branch` exists already and is checked out as it is (it must point at `baseSha`,
   * the commit the caller found it at); otherwise it is created at `baseSha`.
   */
  existingBranch?: boolean;
  /**
   * What the new pane runs instead of a bare shell, where the backend can start a command (tmux):
   * the handoff's launcher. The backend appends the user's own shell to it, as an argv, so the pane
   * goes on as that shell once the command is done. A backend that cannot ignores it.
   */
  command?: readonly string[];
}

export interface CreatedWorkspace {
  location: MuxLocation;
  /** The worktree path as the backend reports it. */
  worktreePath: string;
  /** The pane runs the request's `command` (else it runs a shell and the command must be typed). */
  commandStarted?: boolean;
}

export interface Multiplexer {
  readonly kind: MuxKind;
  /**
   * The worktree is made exactly at the request's path (git makes it), so what needs only that
   * path (the child session) can be written while it is made; absent: the backend may report
   * another path (Herdr reports its own).
   */
  readonly createsAtRequestedPath?: boolean;
  /**
   * The server a workspace would be made on (tmux: its socket and session), recorded in the
   * manifest before anything is created so that recovery asks the right server; optional.
   */
  serverLocation?(): MuxLocation;
  /** Create the worktree (or have the backend create it) and a workspace/pane for it, unfocused. */
  createWorkspace(request: CreateWorkspaceRequest): Promise<MuxResult<CreatedWorkspace>>;
  /** Resolve once the pane's shell owns the terminal foreground. */
  waitForShell(location: MuxLocation, options: { timeoutMs: number }): Promise<MuxResult<object>>;
  /** Type one command line plus Enter into the pane. */
  run(location: MuxLocation, commandLine: string): Promise<MuxResult<object>>;
  /** Processes running under the pane (its shell's descendants). */
  probe(location: MuxLocation): Promise<MuxResult<{ processes: DescribedProcess[] }>>;
  /** Bring the workspace/window to the front. */
  focus(location: MuxLocation): Promise<MuxResult<object>>;
  /** Whether the pane/window still exists. */
  exists(location: MuxLocation): Promise<boolean>;
  /**
   * Tells the multiplexer which session the confirmed child writes, so its own restore resumes
   * that session (Herdr: `pane report-agent-session`). Optional; a failure changes nothing.
   */
  reportChildSession?(location: MuxLocation, sessionFile: string): Promise<MuxResult<object>>;
  /**
   * The keys that bring the parent's window (`back`) and the child's (`goTo`) to the front, as a
   * person presses them where a Pi holds the terminal (tmux: the prefix, then the window's number).
   * Optional; each absent where the terminal has no such key or could not say. Never throws.
   */
  switchKeys?(child: MuxLocation): Promise<SwitchKeys>;
}

/** Keys that switch windows, as a person reads them (`Ctrl-b 0`). */
export interface SwitchKeys {
  back?: string;
  goTo?: string;
}

export interface ReopenWorkspaceRequest {
  mainCheckout: string;
  worktreePath: string;
  branch: string;
  label: string;
  /** Where the workspace was before it was closed (socket, session), to reopen it in the same place. */
  previous: MuxLocation;
  /** As `CreateWorkspaceRequest.command`. */
  command?: readonly string[];
}

/**
 * What the multiplexer itself says runs in a pane (Herdr's `agent_status` / `agent_session`; tmux
 * has no such notion and never reports one). Optional facts for recovery and status displays.
 */
export interface PaneAgent {
  /** Herdr's `agent_status`: `idle`, `working`, `blocked`, `done`, or `unknown` (no agent detected). */
  status: string;
  /**
   * Herdr's `agent`: the agent it sees in the pane (by its hooks, or its process detection), also
   * while it cannot tell that agent's state (`status` unknown, as for a Pi it resumed itself).
   */
  label?: string;
  /** The session file the pane's agent reported (for Pi: the session Herdr resumes on restore). */
  sessionFile?: string;
  /** The pane's foreground processes while an agent is seen there, to name the writer by pid. */
  pids?: number[];
}

/**
 * What recovery knows about a recorded pane/window: there, gone, or the backend could not be asked.
 * `location` is set when the pane answers under new ids (a moved Herdr pane): record it, the old
 * ids are only an alias.
 */
/** Whose a recorded workspace must be to count as the handoff's: ids can name another one later. */
export interface WorkspaceOwner {
  /** The handoff's worktree (a workspace of another checkout under the same id is not its). */
  worktreePath: string;
}

export type WorkspaceState =
  | { code: "open"; location?: MuxLocation; agent?: PaneAgent }
  | { code: "closed" }
  | { code: "unknown"; message: string };

/**
 * What recovery needs on top of the handoff's operations. Both backends implement it with the same
 * meaning, so `pi-handoff` and `/handoffs` do not care which one made a handoff.
 */
export interface RecoverableMultiplexer extends Multiplexer {
  /**
   * Like `exists`, but telling "gone" from "could not ask" (a server that does not answer, a
   * missing binary), so an inventory never reports a window closed that it could not see.
   */
  workspaceState(location: MuxLocation, owner?: WorkspaceOwner): Promise<WorkspaceState>;
  /** A new workspace/window (unfocused) for a worktree whose old one was closed. */
  reopenWorkspace(
    request: ReopenWorkspaceRequest,
  ): Promise<MuxResult<{ location: MuxLocation; commandStarted?: boolean }>>;
  /**
   * Close the workspace/window (if still open) and remove the worktree checkout. Never deletes
   * the branch. Without `force`, a checkout with uncommitted changes is refused, not removed.
   */
  removeWorktree(
    location: MuxLocation,
    options: { mainCheckout: string; worktreePath: string; force: boolean },
  ): Promise<MuxResult<object>>;
  /**
   * What would stop `removeWorktree` whatever `force` says (a workspace the backend would have to
   * open but may not), found without changing anything: a removal's plan asks it, so its dry run
   * and its real run are refused alike, before anything is said or done. Optional: a backend
   * without it has no such refusal (uncommitted files and a locked checkout are judged by the plan).
   */
  removalBlocker?(
    location: MuxLocation,
    options: { mainCheckout: string; worktreePath: string },
  ): Promise<MuxResult<object>>;
  /**
   * Close the workspace/window of a worktree that is gone (`prune` retires such a handoff): only
   * while it still shows that worktree's path, as `removeWorktree` does; `closed: false` when it
   * was gone already or shows something else now. Optional: a backend without it says why not.
   */
  closeWorkspace?(location: MuxLocation, worktreePath: string): Promise<MuxResult<{ closed: boolean }>>;
  /**
   * A window on `location`'s server that a handoff made for `worktreePath` under `label` (the name
   * as the backend shows it, `muxLabel` applied) but never
   * recorded (its process was killed between creating it and recording it): named `label`, with a
   * pane in the worktree. Read-only. Optional: a backend without it finds nothing.
   */
  findUnrecordedWindow?(
    location: MuxLocation,
    query: { label: string; worktreePath: string },
  ): Promise<UnrecordedWindow>;
}

export type UnrecordedWindow =
  | { code: "found"; location: MuxLocation }
  | { code: "none" }
  | { code: "unknown"; message: string };
