/**
 * The Herdr backend: Herdr itself creates the worktree and its workspace (`herdr worktree create`),
 * and the workspace's root pane runs the child Pi. This class is the `RecoverableMultiplexer` the
 * rest of the package sees; each job lives in its own file beside it: the transport (client.ts),
 * whose workspace is whose (membership.ts), creating and opening (create.ts), removing
 * (remove.ts), a workspace's state and the focus (workspaces.ts), the pane's shell (shell.ts), and
 * what is reported to Herdr and read back about agents (reports.ts).
 *
 * Invariants:
 * - Only the Herdr backend runs `herdr`, always through one `HerdrClient` per backend (client.ts:
 *   argument arrays, a timeout on every call, the socket passed explicitly, every answer decoded
 *   by protocol.ts). The binary is `$HERDR_BIN_PATH` when set, else `herdr` from PATH.
 * - A failure is a value `{ ok: false, code, message }`, never a throw; `message` is one sentence
 *   a user can act on.
 * - Nothing steals focus except `focus()`: creating and reopening pass `--no-focus`.
 * - A workspace Herdr names for a worktree is used only when it is that worktree's own linked
 *   workspace, never this process's own workspace or the repository's (Herdr #4293): nothing is
 *   typed into, focused as the child, or closed in it.
 * - Git itself runs only where Herdr cannot act, and only through the git port it was given
 *   (`git/` owns git; remove.ts).
 * - The backend holds no state but its options and what it probes once (the trust flag, its own
 *   workspace): every call asks Herdr again.
 */
import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import type { MuxLocation } from "../../manifest/schema.ts";
import type { DescribedProcess } from "../../process/facts.ts";
import { WAIT_DEFAULTS } from "../../config/waits.ts";
import type {
  CreatedWorkspace,
  CreateWorkspaceRequest,
  MuxResult,
  RecoverableMultiplexer,
  ReopenWorkspaceRequest,
  UnrecordedWindow,
  WorkspaceOwner,
  WorkspaceState,
} from "../types.ts";
import { HerdrClient, publicFailure } from "./client.ts";
import { createWorkspace, reopenWorkspace } from "./create.ts";
import type { HerdrLocation } from "../../manifest/locations.ts";
import { HerdrMembership } from "./membership.ts";
import { socketOf } from "./paths.ts";
import { WorkspaceListSchema } from "./protocol.ts";
import { removalBlocker, removeWorktree, type HerdrGitPort, type HerdrRemoveParts } from "./remove.ts";
import {
  paneAgentStatuses,
  reportAgentSessionStart,
  reportAgentState,
  reportChildSession,
  type HerdrAgentState,
} from "./reports.ts";
import { probePane, typeLine, waitForShell } from "./shell.ts";
import { findUnrecordedWindow, focusWorkspace, workspaceState } from "./workspaces.ts";

export { herdrPiIntegrationInstalled, type HerdrAgentState } from "./reports.ts";
export type { HerdrGitPort } from "./remove.ts";

/** How long a create whose answer was lost may still complete in Herdr's server thread. */
const DEFAULT_LATE_COMPLETION_MS = 20_000;

export interface HerdrMultiplexerOptions {
  /** The `herdr` executable: `$HERDR_BIN_PATH` inside Herdr, else a PATH lookup of `herdr`. */
  herdrBin: string;
  /** The server's socket (`$HERDR_SOCKET_PATH` inside Herdr); without it Herdr resolves its default. */
  socketPath?: string;
  /** The environment every `herdr` call runs with (default: `process.env` at construction). */
  env?: NodeJS.ProcessEnv;
  /** Upper bound for each quick call (pane, workspace, list). */
  timeoutMs?: number;
  /** Upper bound for `worktree create/open/remove`. */
  worktreeTimeoutMs?: number;
  /** After a create's answer was lost: how long `worktree list` is watched for its late completion. */
  lateCompletionMs?: number;
  /**
   * For recovery's `removeWorktree` only: drops git's entry for a vanished checkout Herdr can no
   * longer open. Without it, such a removal fails with `unsupported`.
   */
  git?: HerdrGitPort;
}

export class HerdrMultiplexer implements RecoverableMultiplexer {
  readonly kind = "herdr" as const;
  readonly herdrBin: string;
  readonly socketPath: string | undefined;
  readonly #client: HerdrClient;
  readonly #parts: HerdrRemoveParts;

  constructor(options: HerdrMultiplexerOptions) {
    this.herdrBin = options.herdrBin;
    this.socketPath = options.socketPath;
    this.#client = new HerdrClient({
      herdrBin: options.herdrBin,
      socketPath: options.socketPath,
      env: { ...(options.env ?? process.env) },
      timeoutMs: options.timeoutMs ?? WAIT_DEFAULTS.muxCallMs,
      // `worktree create/open/remove` block while the server runs git on a whole checkout.
      worktreeTimeoutMs: options.worktreeTimeoutMs ?? WAIT_DEFAULTS.herdrWorktreeMs,
    });
    this.#parts = {
      client: this.#client,
      membership: new HerdrMembership(this.#client),
      lateCompletionMs: options.lateCompletionMs ?? DEFAULT_LATE_COMPLETION_MS,
      git: options.git,
    };
  }

  /**
   * The backend for the Herdr this process runs in (or the default server when called from
   * outside): `$HERDR_BIN_PATH` names the running binary and beats a PATH lookup; the socket comes
   * from `$HERDR_SOCKET_PATH`.
   */
  static fromEnvironment(
    env: Readonly<Record<string, string | undefined>>,
    options: {
      timeoutMs?: number;
      worktreeTimeoutMs?: number;
      lateCompletionMs?: number;
      git?: HerdrGitPort;
    } = {},
  ): HerdrMultiplexer {
    const binPath = env.HERDR_BIN_PATH;
    const herdrBin = binPath !== undefined && isAbsolute(binPath) && existsSync(binPath) ? binPath : "herdr";
    const socketPath =
      env.HERDR_SOCKET_PATH !== undefined && env.HERDR_SOCKET_PATH !== "" ? resolve(env.HERDR_SOCKET_PATH) : undefined;
    return new HerdrMultiplexer({
      herdrBin,
      ...(socketPath !== undefined ? { socketPath } : {}),
      env: { ...env },
      ...options,
    });
  }

  /** A cheap call that proves the server answers (`herdr workspace list`). */
  async ping(options: { timeoutMs?: number } = {}): Promise<MuxResult<object>> {
    const listed = await this.#client.call(["workspace", "list"], WorkspaceListSchema, "workspace list", options);
    return listed.ok ? { ok: true } : publicFailure(listed);
  }

  createWorkspace(request: CreateWorkspaceRequest): Promise<MuxResult<CreatedWorkspace>> {
    return createWorkspace(this.#parts, request);
  }

  waitForShell(location: MuxLocation, options: { timeoutMs: number }): Promise<MuxResult<object>> {
    return waitForShell(this.#client, location, options);
  }

  run(location: MuxLocation, commandLine: string): Promise<MuxResult<object>> {
    return typeLine(this.#client, location, commandLine);
  }

  probe(location: MuxLocation): Promise<MuxResult<{ processes: DescribedProcess[] }>> {
    return probePane(this.#client, location);
  }

  focus(location: MuxLocation): Promise<MuxResult<object>> {
    return focusWorkspace(this.#client, this.#parts.membership, location);
  }

  async exists(location: MuxLocation): Promise<boolean> {
    return (await this.workspaceState(location)).code === "open";
  }

  workspaceState(location: MuxLocation, owner?: WorkspaceOwner): Promise<WorkspaceState> {
    return workspaceState(this.#client, this.#parts.membership, location, owner);
  }

  reportChildSession(location: MuxLocation, sessionFile: string): Promise<MuxResult<object>> {
    return reportChildSession(this.#client, location, sessionFile);
  }

  /**
   * This pane's agent state for Herdr's sidebar, sent as Herdr's own Pi integration sends it
   * (reports.ts). Only for a child whose Pi runs without Herdr's own integration.
   */
  reportAgentState(
    paneId: string,
    report: { state: HerdrAgentState; seq: number; sessionFile?: string },
  ): Promise<MuxResult<object>> {
    return reportAgentState(this.#client, paneId, report);
  }

  /** The session this pane's Pi started on, with why and a sequence number (reports.ts). */
  reportAgentSessionStart(
    paneId: string,
    report: { seq: number; sessionFile: string; startSource?: string },
  ): Promise<MuxResult<object>> {
    return reportAgentSessionStart(this.#client, paneId, report);
  }

  serverLocation(): HerdrLocation {
    return { kind: "herdr", ...socketOf(this.socketPath) };
  }

  /** Herdr's `agent_status` of every pane on this server, by pane id (one `pane list`). Read-only. */
  paneAgentStatuses(): Promise<MuxResult<{ statuses: ReadonlyMap<string, string> }>> {
    return paneAgentStatuses(this.#client);
  }

  /** A workspace on the recorded server labelled `label` whose checkout is the worktree, with its root pane. Read-only. */
  findUnrecordedWindow(
    location: MuxLocation,
    query: { label: string; worktreePath: string },
  ): Promise<UnrecordedWindow> {
    return findUnrecordedWindow(this.#client, location, query);
  }

  reopenWorkspace(request: ReopenWorkspaceRequest): Promise<MuxResult<{ location: MuxLocation }>> {
    return reopenWorkspace(this.#parts, request);
  }

  removeWorktree(
    location: MuxLocation,
    options: { mainCheckout: string; worktreePath: string; force: boolean },
  ): Promise<MuxResult<object>> {
    return removeWorktree(this.#parts, location, options);
  }

  removalBlocker(
    location: MuxLocation,
    options: { mainCheckout: string; worktreePath: string },
  ): Promise<MuxResult<object>> {
    return removalBlocker(this.#parts, location, options);
  }
}
