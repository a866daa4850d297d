/**
 * The Herdr backend: Herdr itself creates the worktree and its workspace (`herdr worktree create`),
 * and the workspace's root pane runs the child Pi.
 *
 * Invariants:
 * - Only this module runs `herdr`: argument arrays (never a shell string), a timeout on every call
 *   (the CLI has none of its own), and the server's socket passed explicitly (`HERDR_SOCKET_PATH`)
 *   whenever it is known. The binary is `$HERDR_BIN_PATH` when set, else `herdr` from PATH.
 * - Every output is decoded by the zod schemas of `herdr-protocol.ts`, from whichever stream
 *   carries JSON. A failure is a value `{ ok: false, code, message }`: Herdr's own error code, or
 *   `timeout`, `usage_error` (exit 2), `malformed_output`, `herdr_not_found`, `herdr_failed`.
 *   `message` is one sentence a user can act on.
 * - `--json` is never passed: it is an unknown option on pane and workspace commands.
 * - Nothing steals focus except `focus()`: creating and reopening pass `--no-focus`.
 * - A create whose answer was lost (partial success, timeout, unreadable output) is reconciled
 *   through `herdr worktree list` before it is called a failure, and whatever exists is reported
 *   in `partial` so the transaction records it.
 * - Paths are compared by realpath: Herdr does not canonicalize the paths it reports.
 * - Any id Herdr prints is used as it is (legacy hex ids included, see herdr-protocol.ts).
 * - `--trust-repository` goes on every worktree command when this Herdr has it (probed once).
 * - A workspace Herdr names for a worktree is used only when it is that worktree's own linked
 *   workspace, never this process's own workspace or the repository's (Herdr #4293): nothing is
 *   typed into, focused as the child, or closed in it.
 * - A moved pane answers under new ids (`pane get <old>`): it is open, and the new ids are reported.
 * - Polls give each call at least MIN_POLL_TIMEOUT_MS, and a failed wait names the last real
 *   failure Herdr answered, not the timeout of its last poll. `pane_not_found` is final only after
 *   PANE_RESTART_GRACE_MS of answering so (a restarted server answers it for ~750 ms), and a pane
 *   that `pane get` still shows is then `pane_not_started`, never "closed".
 * - A `worktree create` whose answer was lost may still complete in the server: it is reconciled
 *   through `worktree list` for up to `lateCompletionMs` (the bounds are listed in docs/herdr.md).
 * - `findUnrecordedWindow` only reads: a workspace counts as a handoff's only when it carries the
 *   label the handoff recorded AND its checkout is the handoff's worktree.
 * - Git itself runs only where Herdr cannot act (a registered worktree whose directory is gone and
 *   whose workspace is closed: Herdr opens no workspace for it, so it cannot remove it), and only
 *   through the git port it was given (`git/` owns git).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { existsSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { execa } from "execa";
import { z } from "zod";
import type { RecoveryGitPort } from "../git/types.ts";
import type { HerdrLocation, MuxLocation } from "../manifest/schema.ts";
import {
  decodeHerdrOutput,
  isHerdrId,
  LIVE_AGENT_STATUSES,
  PI_AGENT_LABEL,
  PI_AGENT_SOURCE,
  PaneInfoResultSchema,
  PaneListSchema,
  PaneProcessInfoSchema,
  WorkspaceInfoResultSchema,
  WorkspaceListSchema,
  WorktreeCreatedSchema,
  WorktreeListSchema,
  WorktreeOpenedSchema,
  WorktreeRemovedSchema,
  type HerdrPaneInfo,
  type HerdrWorktreeInfo,
} from "./herdr-protocol.ts";
import { muxLabel } from "./label.ts";
import { processFacts } from "../process/facts.ts";
import type {
  CreatedWorkspace,
  CreateWorkspaceRequest,
  MuxFailure,
  MuxResult,
  PaneAgent,
  PaneProcess,
  RecoverableMultiplexer,
  ReopenWorkspaceRequest,
  UnrecordedWindow,
  WorkspaceState,
} from "./types.ts";
import { describePaneProcesses } from "../process/pane-process.ts";
import { errorClause } from "../errors.ts";
import { formatWait, hasControlCharacter, oneLine, stripPeriod } from "../text.ts";
import { backoff } from "./backoff.ts";
import { WAIT_DEFAULTS } from "../config/waits.ts";

/** How long a create whose answer was lost may still complete in Herdr's server thread. */
const DEFAULT_LATE_COMPLETION_MS = 20_000;
const SHELL_STABLE_SAMPLES = 3;
/**
 * After a restart (the pane answered pane_not_found first) Herdr may type `pi --session <path>` into
 * the shell as soon as its terminal runs again (src/app/agent_resume.rs): the shell must then hold
 * the foreground this long before it counts as ready, so a launch never types beside Herdr's resume.
 */
export const SHELL_SETTLE_AFTER_RESTART_MS = 1_500;
/** The least time one poll is given: a poll squeezed into the last milliseconds proves nothing. */
export const MIN_POLL_TIMEOUT_MS = 1_000;
/** A restarted server answers `pane_not_found` for ~750 ms (src/app/mod.rs PENDING_AGENT_RESUME_THEME_WAIT). */
export const PANE_RESTART_GRACE_MS = 2_000;
const PANE_RETRY_INTERVAL_MS = 100;
const RECONCILE_INTERVAL_MS = 250;
/** Failures after which polling a pane again cannot help (`pane_not_found` only after the restart grace). */
const FINAL_POLL_FAILURES = new Set(["workspace_not_found", "server_not_running", "herdr_not_found", "usage_error"]);
/** Failures of `worktree create` after which the checkout (and maybe its workspace) may exist anyway. */
const UNCERTAIN_CREATE_FAILURES = new Set(["worktree_open_failed", "timeout", "malformed_output", "worktree_operation_in_progress"]);
/** Of those, the ones after which Herdr's server may still be working on it (so list more than once). */
const STILL_RUNNING_CREATE_FAILURES = new Set(["timeout", "worktree_operation_in_progress"]);

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
  git?: Pick<RecoveryGitPort, "removeWorktree">;
}

type CallResult<T> = { ok: true; result: T } | CallFailure;

interface CallOptions {
  timeoutMs?: number;
  socketPath?: string | undefined;
}

export class HerdrMultiplexer implements RecoverableMultiplexer {
  readonly kind = "herdr" as const;
  readonly herdrBin: string;
  readonly socketPath: string | undefined;
  readonly #env: NodeJS.ProcessEnv;
  readonly #timeoutMs: number;
  readonly #worktreeTimeoutMs: number;
  readonly #lateCompletionMs: number;
  readonly #git: Pick<RecoveryGitPort, "removeWorktree"> | undefined;
  #trustFlagProbe: Promise<boolean> | undefined;
  #ownWorkspaces: Promise<Set<string>> | undefined;

  constructor(options: HerdrMultiplexerOptions) {
    this.herdrBin = options.herdrBin;
    this.socketPath = options.socketPath;
    this.#env = { ...(options.env ?? process.env) };
    this.#timeoutMs = options.timeoutMs ?? WAIT_DEFAULTS.muxCallMs;
    // `worktree create/open/remove` block while the server runs git on a whole checkout.
    this.#worktreeTimeoutMs = options.worktreeTimeoutMs ?? WAIT_DEFAULTS.herdrWorktreeMs;
    this.#lateCompletionMs = options.lateCompletionMs ?? DEFAULT_LATE_COMPLETION_MS;
    this.#git = options.git;
  }

  /**
   * The backend for the Herdr this process runs in (or the default server when called from
   * outside): `$HERDR_BIN_PATH` names the running binary and beats a PATH lookup; the socket comes
   * from `$HERDR_SOCKET_PATH`.
   */
  static fromEnvironment(
    env: Readonly<Record<string, string | undefined>>,
    options: { timeoutMs?: number; worktreeTimeoutMs?: number; lateCompletionMs?: number; git?: Pick<RecoveryGitPort, "removeWorktree"> } = {},
  ): HerdrMultiplexer {
    const binPath = env.HERDR_BIN_PATH;
    const herdrBin = binPath !== undefined && isAbsolute(binPath) && existsSync(binPath) ? binPath : "herdr";
    const socketPath = env.HERDR_SOCKET_PATH !== undefined && env.HERDR_SOCKET_PATH !== "" ? resolve(env.HERDR_SOCKET_PATH) : undefined;
    return new HerdrMultiplexer({
      herdrBin,
      ...(socketPath !== undefined ? { socketPath } : {}),
      env: { ...env },
      ...options,
    });
  }

  /** A cheap call that proves the server answers (`herdr workspace list`). */
  async ping(options: { timeoutMs?: number } = {}): Promise<MuxResult<object>> {
    const listed = await this.#call(["workspace", "list"], WorkspaceListSchema, "workspace list", options);
    return listed.ok ? { ok: true } : publicFailure(listed);
  }

  async createWorkspace(request: CreateWorkspaceRequest): Promise<MuxResult<CreatedWorkspace>> {
    const trust = await this.#trustArgs();
    void this.#ownWorkspaceIds();
    const created = await this.#call(
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
      { timeoutMs: this.#worktreeTimeoutMs },
    );
    if (created.ok) {
      const { result } = created;
      return {
        ok: true,
        location: this.#location(this.socketPath, result.workspace.workspace_id, result.tab.tab_id, result.root_pane.pane_id),
        worktreePath: await canonicalPath(result.worktree.path),
      };
    }
    if (UNCERTAIN_CREATE_FAILURES.has(created.code)) return this.#reconcileCreate(request, created, trust);
    return { ok: false, code: created.code, message: describeCreateFailure(request, created) };
  }

  async waitForShell(location: MuxLocation, options: { timeoutMs: number }): Promise<MuxResult<object>> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return pane;
    const deadline = Date.now() + options.timeoutMs;
    const notFound = new PaneNotFoundGrace();
    // Back off while the shell is not ready (a slow server is not loaded by the wait), and sample
    // closely once it looks ready, so the stable samples come quickly.
    const delays = backoff(deadline);
    let stableSamples = 0;
    let sampled = false;
    let restarted = false;
    let stableSince = 0;
    // The last thing Herdr really answered that was not a sample: a poll's own timeout never hides
    // it. A poll the deadline cut short that timed out after Herdr had answered does not make the
    // outcome Herdr's timeout (the samples said "not ready"), but the message still says it.
    let lastFailure: CallFailure | undefined;
    let lastTimeout: CallFailure | undefined;
    let cutShortMs: number | undefined;
    for (;;) {
      const budgetMs = pollTimeout(deadline, this.#timeoutMs);
      const info = await this.#call(["pane", "process-info", "--pane", pane.paneId], PaneProcessInfoSchema, "pane process-info", {
        timeoutMs: budgetMs,
        socketPath: pane.socketPath,
      });
      if (!info.ok) {
        if (FINAL_POLL_FAILURES.has(info.code)) return publicFailure(info);
        if (notFound.isFinal(info)) return publicFailure(await this.#explainPaneNotFound(pane.paneId, pane.socketPath, info));
        if (info.code === "pane_not_found") restarted = true;
        stableSamples = 0;
        if (info.code !== "timeout") lastFailure = info;
        else if (budgetMs >= this.#timeoutMs || !sampled) lastTimeout = info;
        else cutShortMs = budgetMs;
      } else {
        notFound.reset();
        sampled = true;
        lastFailure = undefined;
        lastTimeout = undefined;
        cutShortMs = undefined;
        const { shell_pid: shellPid, foreground_process_group_id: foreground } = info.result.process_info;
        // The shell owns the terminal once its own process group is the foreground group; several
        // consecutive samples skip the moment a start-up job hands the terminal back and forth.
        stableSamples = shellPid !== undefined && shellPid === foreground ? stableSamples + 1 : 0;
        if (stableSamples === 1) stableSince = Date.now();
        const settled = !restarted || Date.now() - stableSince >= SHELL_SETTLE_AFTER_RESTART_MS;
        if (stableSamples >= SHELL_STABLE_SAMPLES && settled) return { ok: true };
      }
      if (stableSamples > 0) delays.reset();
      const delay = delays.next(Date.now());
      if (delay === undefined) break;
      await sleep(delay);
    }
    const waited = `The shell in Herdr pane ${pane.paneId} did not become ready within ${formatWait(options.timeoutMs)}`;
    const cause = lastFailure ?? lastTimeout;
    if (cause !== undefined) {
      const since = sampled ? "; its last poll failed" : "";
      return { ok: false, code: cause.code, message: `${waited}${since}: ${stripPeriod(cause.message)}.` };
    }
    const lastPoll = cutShortMs === undefined ? "" : `; Herdr did not answer its last poll in the ${formatWait(cutShortMs)} left`;
    return { ok: false, code: "shell_not_ready", message: `${waited}${lastPoll}.` };
  }

  async run(location: MuxLocation, commandLine: string): Promise<MuxResult<object>> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return pane;
    // Herdr types the text literally; a control character would be a keystroke (a newline runs half a line).
    if (hasControlCharacter(commandLine) || commandLine === "") {
      return {
        ok: false,
        code: "invalid_command_line",
        message: "The command line is empty or contains a control character (such as a newline) and was not typed.",
      };
    }
    const typed = await this.#send(["pane", "run", pane.paneId, commandLine], "pane run", { socketPath: pane.socketPath });
    return typed.ok ? { ok: true } : publicFailure(typed);
  }

  async probe(location: MuxLocation): Promise<MuxResult<{ processes: PaneProcess[] }>> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return pane;
    const info = await this.#processInfo(pane.paneId, pane.socketPath);
    if (!info.ok) return publicFailure(info);
    const facts = info.result.process_info;
    const processes = new Map<number, PaneProcess>();
    // Herdr's own view of the foreground first: its per-process cwd belongs to that exact pid.
    const read = new Map((await describePaneProcesses(facts.foreground_processes.map((foreground) => foreground.pid))).map((p) => [p.pid, p]));
    for (const foreground of facts.foreground_processes) {
      const handoffId = read.get(foreground.pid)?.handoffId;
      const cwd = foreground.cwd !== undefined ? await canonicalPath(foreground.cwd) : read.get(foreground.pid)?.cwd;
      processes.set(foreground.pid, {
        pid: foreground.pid,
        name: foreground.name,
        ...(cwd !== undefined ? { cwd } : {}),
        ...(handoffId !== undefined ? { handoffId } : {}),
      });
    }
    // Then everything else under the shell (a child that is not in the foreground group).
    if (facts.shell_pid !== undefined) {
      const others = (await processFacts().descendants(facts.shell_pid)).filter((pid) => !processes.has(pid));
      for (const described of await describePaneProcesses(others)) processes.set(described.pid, described);
    }
    return { ok: true, processes: [...processes.values()] };
  }

  async focus(location: MuxLocation): Promise<MuxResult<object>> {
    const herdr = asHerdrLocation(location);
    if (!herdr.ok) return herdr;
    const workspaceId = herdr.location.workspaceId;
    if (!isHerdrId(workspaceId)) {
      return invalidLocation("The Herdr location has no valid workspace id to focus.");
    }
    if (await this.#isOwnWorkspace(workspaceId, herdr.location.socketPath ?? this.socketPath)) return ownWorkspace(workspaceId);
    const focused = await this.#call(["workspace", "focus", workspaceId], WorkspaceInfoResultSchema, "workspace focus", {
      socketPath: herdr.location.socketPath ?? this.socketPath,
    });
    if (!focused.ok) return focused.code === "workspace_not_found" ? workspaceNotFound(workspaceId) : publicFailure(focused);
    return { ok: true };
  }

  async exists(location: MuxLocation): Promise<boolean> {
    return (await this.workspaceState(location)).code === "open";
  }

  async workspaceState(location: MuxLocation): Promise<WorkspaceState> {
    const herdr = asHerdrLocation(location);
    if (!herdr.ok) return { code: "unknown", message: herdr.message };
    const socketPath = herdr.location.socketPath ?? this.socketPath;
    const { paneId, workspaceId } = herdr.location;
    if (isHerdrId(paneId)) {
      const shown = await this.#call(["pane", "get", paneId], PaneInfoResultSchema, "pane get", { socketPath });
      if (shown.ok) {
        const pane = shown.result.pane;
        const agent = await this.#paneAgent(pane, socketPath);
        // A moved pane answers under its new ids (the old one is an alias): open, and where it is now.
        const moved = pane.pane_id !== paneId || pane.workspace_id !== workspaceId || pane.tab_id !== herdr.location.tabId;
        return {
          code: "open",
          ...(moved ? { location: this.#location(socketPath, pane.workspace_id, pane.tab_id, pane.pane_id) } : {}),
          ...(agent !== undefined ? { agent } : {}),
        };
      }
      // A server that is down may restore the pane when it restarts: that is not "closed".
      return shown.code === "pane_not_found" ? { code: "closed" } : { code: "unknown", message: shown.message };
    }
    if (isHerdrId(workspaceId)) {
      const shown = await this.#call(["workspace", "get", workspaceId], WorkspaceInfoResultSchema, "workspace get", { socketPath });
      if (shown.ok) return shown.result.workspace.workspace_id === workspaceId ? { code: "open" } : { code: "closed" };
      return shown.code === "workspace_not_found" ? { code: "closed" } : { code: "unknown", message: shown.message };
    }
    return { code: "closed" };
  }

  /**
   * Herdr's view of the agent in a pane: its status, the session it reported, and (while an agent
   * is detected) the foreground pids, so recovery can name a writer even where process facts cannot be read.
   */
  async #paneAgent(pane: HerdrPaneInfo, socketPath: string | undefined): Promise<PaneAgent | undefined> {
    const session = pane.agent_session;
    const sessionFile = session !== undefined && session.kind === "path" && session.agent === PI_AGENT_LABEL ? session.value : undefined;
    if (pane.agent_status === "unknown" && sessionFile === undefined) return undefined;
    let pids: number[] | undefined;
    if (LIVE_AGENT_STATUSES.has(pane.agent_status)) {
      const info = await this.#processInfo(pane.pane_id, socketPath);
      if (info.ok) pids = info.result.process_info.foreground_processes.map((process) => process.pid);
    }
    return { status: pane.agent_status, ...(sessionFile !== undefined ? { sessionFile } : {}), ...(pids !== undefined ? { pids } : {}) };
  }

  async reportChildSession(location: MuxLocation, sessionFile: string): Promise<MuxResult<object>> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return pane;
    if (!isAbsolute(sessionFile) || /\p{Cc}/u.test(sessionFile)) {
      return { ok: false, code: "invalid_session_file", message: `The session file ${JSON.stringify(sessionFile)} cannot be reported to Herdr.` };
    }
    const reported = await this.#send(
      ["pane", "report-agent-session", pane.paneId, "--source", PI_AGENT_SOURCE, "--agent", PI_AGENT_LABEL, "--agent-session-path", sessionFile],
      "pane report-agent-session",
      { socketPath: pane.socketPath },
    );
    return reported.ok ? { ok: true } : publicFailure(reported);
  }

  serverLocation(): HerdrLocation {
    return { kind: "herdr", ...socketOf(this.socketPath) };
  }

  /**
   * Herdr's `agent_status` of every pane on this server, by pane id (one `pane list`), for a
   * parent's cheap refresh of its children. Read-only; a server that does not answer is a failure
   * the caller shows as "not known".
   */
  async paneAgentStatuses(): Promise<MuxResult<{ statuses: ReadonlyMap<string, string> }>> {
    const listed = await this.#call(["pane", "list"], PaneListSchema, "pane list", { socketPath: this.socketPath });
    if (!listed.ok) return publicFailure(listed);
    return { ok: true, statuses: new Map(listed.result.panes.map((pane) => [pane.pane_id, pane.agent_status])) };
  }

  /** A workspace on the recorded server labelled `label` whose checkout is the worktree, with its root pane. Read-only. */
  async findUnrecordedWindow(location: MuxLocation, query: { label: string; worktreePath: string }): Promise<UnrecordedWindow> {
    const socketPath = (location.kind === "herdr" ? location.socketPath : undefined) ?? this.socketPath;
    const listed = await this.#call(["workspace", "list"], WorkspaceListSchema, "workspace list", { socketPath });
    // A server that does not answer may still hold it (and restore it when it starts): unknown, not none.
    if (!listed.ok) return { code: "unknown", message: listed.message };
    const wanted = await canonicalPath(query.worktreePath);
    for (const workspace of listed.result.workspaces) {
      const checkout = workspace.worktree?.checkout_path;
      if (workspace.label !== query.label || checkout === undefined || (await canonicalPath(checkout)) !== wanted) continue;
      const panes = await this.#call(["pane", "list", "--workspace", workspace.workspace_id], PaneListSchema, "pane list", { socketPath });
      if (!panes.ok) return { code: "unknown", message: panes.message };
      const root = panes.result.panes.find((pane) => pane.workspace_id === workspace.workspace_id);
      if (root === undefined) continue;
      return { code: "found", location: this.#location(socketPath, workspace.workspace_id, root.tab_id, root.pane_id) };
    }
    return { code: "none" };
  }

  async reopenWorkspace(request: ReopenWorkspaceRequest): Promise<MuxResult<{ location: MuxLocation }>> {
    const socketPath = (request.previous.kind === "herdr" ? request.previous.socketPath : undefined) ?? this.socketPath;
    const opened = await this.#openWorktree(request.mainCheckout, request.worktreePath, request.label, socketPath);
    if (!opened.ok) return publicFailure(opened);
    if (opened.alreadyOpen) {
      // An open workspace is typed into next: its root pane must be a shell at its prompt, not a
      // program (an editor, another Pi) that would take the typed line as input.
      const paneId = opened.location.paneId ?? "";
      const info = await this.#processInfo(paneId, socketPath);
      if (!info.ok) return publicFailure(info);
      const { shell_pid: shellPid, foreground_process_group_id: foreground } = info.result.process_info;
      if (shellPid === undefined || shellPid !== foreground) {
        const running = info.result.process_info.foreground_processes.map((process) => process.name).join(", ") || "another program";
        return {
          ok: false,
          code: "workspace_busy",
          message: `Herdr workspace ${opened.location.workspaceId ?? "?"} for ${request.worktreePath} is open and its root pane runs ${running}, not a shell, so nothing was typed into it.`,
        };
      }
    }
    return { ok: true, location: opened.location };
  }

  async removeWorktree(
    location: MuxLocation,
    options: { mainCheckout: string; worktreePath: string; force: boolean },
  ): Promise<MuxResult<object>> {
    const herdr = asHerdrLocation(location);
    if (!herdr.ok) return herdr;
    const socketPath = herdr.location.socketPath ?? this.socketPath;
    const wanted = await canonicalPath(options.worktreePath);
    const recorded = await this.#recordedWorkspace(herdr.location.workspaceId, wanted, socketPath);
    if (!recorded.ok) return recorded;
    const trust = await this.#trustArgs();
    const target: RemovalTarget =
      recorded.workspaceId !== undefined
        ? { kind: "workspace", workspaceId: recorded.workspaceId, reopened: false }
        : await this.#listedWorkspace(options, wanted, socketPath, trust);
    if (target.kind === "done") return target.result;
    const { workspaceId, reopened } = target;

    const removed = await this.#call(
      ["worktree", "remove", "--workspace", workspaceId, ...(options.force ? ["--force"] : []), ...trust],
      WorktreeRemovedSchema,
      "worktree remove",
      { timeoutMs: this.#worktreeTimeoutMs, socketPath },
    );
    if (removed.ok) return { ok: true };
    if (reopened) {
      // Leave Herdr as it was: the workspace opened only to ask for the removal goes again.
      await this.#send(["workspace", "close", workspaceId], "workspace close", { socketPath });
    }
    if (removed.code === "dirty_worktree_requires_force") {
      return {
        ok: false,
        code: "dirty_worktree",
        message: `The worktree at ${options.worktreePath} has uncommitted or untracked changes, so it was not removed; commit or discard them, or remove it with force.`,
      };
    }
    return publicFailure(removed);
  }

  /**
   * The recorded workspace, when it still shows this checkout: Herdr removes a worktree only
   * through its live workspace, and a recorded id may be stale (closed, or reused by another
   * workspace after a server restart).
   */
  async #recordedWorkspace(recorded: string | undefined, wanted: string, socketPath: string | undefined): Promise<{ ok: true; workspaceId?: string } | MuxFailure> {
    if (!isHerdrId(recorded) || (await this.#isOwnWorkspace(recorded, socketPath))) return { ok: true };
    const shown = await this.#call(["workspace", "get", recorded], WorkspaceInfoResultSchema, "workspace get", { socketPath });
    if (shown.ok) {
      const checkout = shown.result.workspace.worktree?.checkout_path;
      return checkout !== undefined && (await canonicalPath(checkout)) === wanted ? { ok: true, workspaceId: recorded } : { ok: true };
    }
    return shown.code === "workspace_not_found" ? { ok: true } : publicFailure(shown);
  }

  /**
   * The workspace to remove the worktree through, found by `worktree list` (and opened when
   * closed), or the removal's whole outcome when there is none to go through.
   */
  async #listedWorkspace(
    options: { mainCheckout: string; worktreePath: string; force: boolean },
    wanted: string,
    socketPath: string | undefined,
    trust: readonly string[],
  ): Promise<RemovalTarget> {
    const listed = await this.#call(["worktree", "list", "--cwd", options.mainCheckout, ...trust], WorktreeListSchema, "worktree list", { socketPath });
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
    if (listedId !== undefined && (await this.#childWorkspace(listedId, wanted, socketPath)).ok) {
      return { kind: "workspace", workspaceId: listedId, reopened: false };
    }
    if (entry.is_prunable || !existsSync(wanted)) {
      // The checkout is gone and no workspace shows it: Herdr cannot open (so cannot remove) it,
      // and there is nothing left to lose in it; git alone drops its entry.
      return { kind: "done", result: await this.#unregisterWithGit(options) };
    }
    // Herdr cannot remove a worktree whose workspace is closed (upstream #4317): reopen it first.
    const opened = await this.#openWorktree(options.mainCheckout, wanted, undefined, socketPath);
    if (!opened.ok) return { kind: "done", result: publicFailure(opened) };
    const workspaceId = opened.location.workspaceId;
    if (workspaceId === undefined) return { kind: "done", result: invalidLocation(`Herdr reported no workspace for ${options.worktreePath}.`) };
    return { kind: "workspace", workspaceId, reopened: !opened.alreadyOpen };
  }

  /** `git worktree remove` for a registered checkout whose directory is gone (see `removeWorktree`). */
  async #unregisterWithGit(options: { mainCheckout: string; worktreePath: string; force: boolean }): Promise<MuxResult<object>> {
    if (this.#git === undefined) {
      return {
        ok: false,
        code: "unsupported",
        message: `The worktree ${options.worktreePath} is gone and Herdr cannot open it; drop git's entry with: git worktree prune.`,
      };
    }
    try {
      await this.#git.removeWorktree(options.mainCheckout, options.worktreePath, { force: options.force });
    } catch (error) {
      const detail = errorClause(error);
      return { ok: false, code: "worktree_remove_failed", message: `Could not drop git's entry for ${options.worktreePath}: ${detail}.` };
    }
    return { ok: true };
  }

  /** `worktree open --path`, unfocused: the workspace for an existing checkout (a new id if it was closed). */
  async #openWorktree(
    mainCheckout: string,
    worktreePath: string,
    label: string | undefined,
    socketPath: string | undefined,
  ): Promise<{ ok: true; location: HerdrLocation; alreadyOpen: boolean } | CallFailure> {
    const opened = await this.#call(
      [
        "worktree",
        "open",
        "--cwd",
        mainCheckout,
        "--path",
        worktreePath,
        ...(label !== undefined ? ["--label", muxLabel(label)] : []),
        "--no-focus",
        ...(await this.#trustArgs()),
      ],
      WorktreeOpenedSchema,
      "worktree open",
      { timeoutMs: this.#worktreeTimeoutMs, socketPath },
    );
    if (!opened.ok) return opened;
    const { result } = opened;
    // Herdr #4293: the answer may name the repository's own workspace (its root pane sits in the checkout).
    const checked = await this.#childWorkspace(result.workspace.workspace_id, await canonicalPath(worktreePath), socketPath);
    if (!checked.ok) return checked;
    return {
      ok: true,
      location: this.#location(socketPath, result.workspace.workspace_id, result.tab.tab_id, result.root_pane.pane_id),
      alreadyOpen: result.already_open,
    };
  }

  /**
   * After a lost answer: what does `worktree list` say exists? A unique entry at the planned path (or
   * on the branch) with its own open workspace and a pane is the created workspace; a checkout
   * without a workspace is a partial success, reported as such. After a timeout (or while Herdr
   * says the operation is in progress) the server may still finish the create in its thread and
   * open the workspace then, so the list is watched for up to `lateCompletionMs`.
   */
  async #reconcileCreate(request: CreateWorkspaceRequest, failure: CallFailure, trust: readonly string[]): Promise<MuxResult<CreatedWorkspace>> {
    const base = describeCreateFailure(request, failure);
    const deadline = Date.now() + (STILL_RUNNING_CREATE_FAILURES.has(failure.code) ? this.#lateCompletionMs : 0);
    const wanted = await canonicalPath(request.worktreePath);
    for (;;) {
      const seen = await this.#lookForCreated(request, wanted, failure, base, trust);
      if (seen.final || Date.now() + RECONCILE_INTERVAL_MS >= deadline) return seen.outcome;
      await sleep(RECONCILE_INTERVAL_MS);
    }
  }

  /** One look at `worktree list` for a create whose answer was lost; `final` when waiting cannot change it. */
  async #lookForCreated(
    request: CreateWorkspaceRequest,
    wanted: string,
    failure: CallFailure,
    base: string,
    trust: readonly string[],
  ): Promise<{ final: boolean; outcome: MuxResult<CreatedWorkspace> }> {
    // Each look gets the whole quick-call timeout: the watch ends at the deadline, not a look.
    const listed = await this.#call(["worktree", "list", "--cwd", request.mainCheckout, ...trust], WorktreeListSchema, "worktree list");
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
      const message = failure.code === "worktree_operation_in_progress" ? base : `${stripPeriod(base)}, and no worktree was created.`;
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
    return this.#adoptListed(entry, failure, base);
  }

  /** The one worktree `worktree list` shows for a lost create: taken when its own workspace and root pane are there. */
  async #adoptListed(entry: HerdrWorktreeInfo, failure: CallFailure, base: string): Promise<{ final: boolean; outcome: MuxResult<CreatedWorkspace> }> {
    const worktreePath = await canonicalPath(entry.path);
    const workspaceId = entry.open_workspace_id;
    const own = workspaceId !== undefined ? await this.#childWorkspace(workspaceId, worktreePath, this.socketPath) : undefined;
    if (workspaceId !== undefined && own?.ok === true) {
      const panes = await this.#call(["pane", "list", "--workspace", workspaceId], PaneListSchema, "pane list");
      const root = panes.ok ? panes.result.panes.find((pane) => pane.workspace_id === workspaceId) : undefined;
      if (root !== undefined) {
        return { final: true, outcome: { ok: true, location: this.#location(this.socketPath, workspaceId, root.tab_id, root.pane_id), worktreePath } };
      }
      return {
        final: false,
        outcome: {
          ok: false,
          code: failure.code,
          message: `${stripPeriod(base)}; the worktree at ${worktreePath} and Herdr workspace ${workspaceId} exist, but no pane of it was found.`,
          partial: { worktreePath, location: { kind: "herdr", ...socketOf(this.socketPath), workspaceId } },
        },
      };
    }
    return {
      final: false,
      outcome: {
        ok: false,
        code: failure.code,
        // worktree_open_failed already says the checkout exists; a lost answer does not.
        message: failure.code === "worktree_open_failed" ? base : `${stripPeriod(base)}; the worktree at ${worktreePath} exists, but Herdr opened no workspace for it.`,
        partial: { worktreePath, location: { kind: "herdr", ...socketOf(this.socketPath) } },
      },
    };
  }

  /**
   * Whether `workspaceId` is the worktree's own linked workspace: never this process's own, and its
   * membership (as `workspace get` shows it, or `info` when already at hand) is this checkout as a
   * linked worktree. Herdr #4293 names the repository's workspace when its root pane sits there.
   */
  async #childWorkspace(workspaceId: string, wanted: string, socketPath: string | undefined): Promise<{ ok: true } | CallFailure> {
    const named = (whose: string): string =>
      `Herdr named workspace ${workspaceId} for the worktree ${wanted}, but it is ${whose}, so it was left alone; a shell of that workspace in the worktree makes Herdr name it (Herdr #4293): cd out of the worktree there and try again.`;
    if (await this.#isOwnWorkspace(workspaceId, socketPath)) return callFailure("own_workspace", named("the workspace this Pi runs in"));
    const shown = await this.#call(["workspace", "get", workspaceId], WorkspaceInfoResultSchema, "workspace get", { socketPath });
    if (!shown.ok) return shown;
    const membership = shown.result.workspace.worktree;
    if (membership !== undefined && membership.is_linked_worktree && (await canonicalPath(membership.checkout_path)) === wanted) return { ok: true };
    return callFailure("not_worktree_workspace", named("the repository's own workspace, not the worktree's"));
  }

  /**
   * This process's own workspace, on the same server: `HERDR_WORKSPACE_ID` of the Pi that runs this,
   * and where its pane (`HERDR_PANE_ID`) is now, since a process keeps its launch-time ids when its
   * pane is moved (`pane get` follows the alias). Asked once per backend.
   */
  async #isOwnWorkspace(workspaceId: string, socketPath: string | undefined): Promise<boolean> {
    const ownSocket = this.#env.HERDR_SOCKET_PATH !== undefined && this.#env.HERDR_SOCKET_PATH !== "" ? resolve(this.#env.HERDR_SOCKET_PATH) : this.socketPath;
    if (socketPath !== undefined && ownSocket !== undefined && resolve(socketPath) !== ownSocket) return false;
    return (await this.#ownWorkspaceIds()).has(workspaceId);
  }

  /** See `#isOwnWorkspace`; started early by `createWorkspace` so the focus after a handoff waits for nothing. */
  #ownWorkspaceIds(): Promise<Set<string>> {
    this.#ownWorkspaces ??= (async () => {
      const own = new Set<string>();
      const { HERDR_WORKSPACE_ID: launchWorkspace, HERDR_PANE_ID: ownPane, HERDR_SOCKET_PATH: ownSocket } = this.#env;
      if (isHerdrId(launchWorkspace)) own.add(launchWorkspace);
      if (isHerdrId(ownPane)) {
        const socketPath = ownSocket !== undefined && ownSocket !== "" ? resolve(ownSocket) : this.socketPath;
        const shown = await this.#call(["pane", "get", ownPane], PaneInfoResultSchema, "pane get", { socketPath });
        if (shown.ok) own.add(shown.result.pane.workspace_id);
      }
      return own;
    })();
    return this.#ownWorkspaces;
  }

  /** `pane process-info` for one pane, `pane_not_found` retried through a restarted server's grace. */
  async #processInfo(paneId: string, socketPath: string | undefined): Promise<CallResult<z.infer<typeof PaneProcessInfoSchema>>> {
    const notFound = new PaneNotFoundGrace();
    for (;;) {
      const info = await this.#call(["pane", "process-info", "--pane", paneId], PaneProcessInfoSchema, "pane process-info", { socketPath });
      if (info.ok || info.code !== "pane_not_found") return info;
      if (notFound.isFinal(info)) return this.#explainPaneNotFound(paneId, socketPath, info);
      await sleep(PANE_RETRY_INTERVAL_MS);
    }
  }

  /**
   * A lasting `pane_not_found` from process-info for a pane that `pane get` still shows: after a
   * restart Herdr starts such a pane's terminal only when it resumes the agent there, and it waits
   * for a client to be attached first (src/app/agent_resume.rs), so the pane is not gone.
   */
  async #explainPaneNotFound(paneId: string, socketPath: string | undefined, failure: CallFailure): Promise<CallFailure> {
    const shown = await this.#call(["pane", "get", paneId], PaneInfoResultSchema, "pane get", { socketPath });
    if (!shown.ok) return failure;
    return callFailure(
      "pane_not_started",
      `Herdr pane ${paneId} exists but its terminal is not running yet (after a restart Herdr starts it when it resumes the agent there, once a Herdr client is attached); try again then.`,
    );
  }

  /** `--trust-repository` for every worktree command when this Herdr has it. */
  async #trustArgs(): Promise<string[]> {
    return (await this.#supportsTrustRepository()) ? ["--trust-repository"] : [];
  }

  /**
   * Whether this Herdr's `worktree create` accepts `--trust-repository` (0.9 added it, a later
   * version replaces it): its help decides, else its version. Probed once per backend.
   */
  #supportsTrustRepository(): Promise<boolean> {
    this.#trustFlagProbe ??= (async () => {
      const help = await this.#exec(["worktree", "create", "--help"], { timeoutMs: this.#timeoutMs });
      if (help.ok && help.exitCode === 0 && /usage/i.test(help.stdout + help.stderr)) {
        return (help.stdout + help.stderr).includes("--trust-repository");
      }
      const version = await this.#exec(["--version"], { timeoutMs: this.#timeoutMs });
      const match = version.ok ? /(\d+)\.(\d+)\.(\d+)/.exec(version.stdout) : null;
      if (match === null) return false;
      const [major, minor] = [Number(match[1]), Number(match[2])];
      return major > 0 || minor >= 9;
    })();
    return this.#trustFlagProbe;
  }

  #location(socketPath: string | undefined, workspaceId: string, tabId: string, paneId: string): HerdrLocation {
    return { kind: "herdr", ...socketOf(socketPath), workspaceId, tabId, paneId };
  }

  async #exec(
    args: readonly string[],
    options: CallOptions,
  ): Promise<{ ok: true; exitCode: number; stdout: string; stderr: string } | CallFailure> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const socketPath = options.socketPath ?? this.socketPath;
    const env = socketPath !== undefined ? { ...this.#env, HERDR_SOCKET_PATH: socketPath } : this.#env;
    const result = await execa(this.herdrBin, args, {
      env,
      extendEnv: false,
      timeout: timeoutMs,
      forceKillAfterDelay: 1_000,
      reject: false,
      stdin: "ignore",
      stripFinalNewline: false,
    });
    const operation = `herdr ${args.slice(0, 2).join(" ")}`;
    if (result.timedOut) {
      return callFailure("timeout", `${operation} did not answer within ${formatWait(timeoutMs)}.`);
    }
    if (result.code === "ENOENT") {
      return callFailure("herdr_not_found", `The herdr executable (${this.herdrBin}) was not found; install Herdr or set HERDR_BIN_PATH.`);
    }
    if (result.exitCode === undefined) {
      const detail = oneLine(result.shortMessage ?? "") || "no exit code";
      return callFailure("herdr_failed", `${operation} could not run: ${stripPeriod(detail)}.`);
    }
    return { ok: true, exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
  }

  /** One `herdr` call that must print a success envelope whose result matches `schema`. */
  async #call<T>(args: readonly string[], schema: z.ZodType<T>, operation: string, options: CallOptions = {}): Promise<CallResult<T>> {
    const ran = await this.#exec(args, options);
    if (!ran.ok) return ran;
    if (ran.exitCode === 2) return usageFailure(operation, ran.stderr);
    const decoded = decodeHerdrOutput({ stdout: ran.stdout, stderr: ran.stderr }, schema);
    if (decoded.kind === "error") return herdrError(operation, decoded.code, decoded.message);
    if (decoded.kind === "malformed") {
      return callFailure("malformed_output", `herdr ${operation} printed output this package cannot read: ${stripPeriod(decoded.detail)}.`);
    }
    if (ran.exitCode !== 0) return exitFailure(operation, ran.exitCode, ran.stderr);
    if (decoded.kind === "silent") {
      return callFailure("malformed_output", `herdr ${operation} printed nothing where a JSON answer was expected.`);
    }
    return { ok: true, result: decoded.result };
  }

  /** A fire-and-forget call (`pane run`, `workspace close` when its answer does not matter): only an error counts. */
  async #send(args: readonly string[], operation: string, options: CallOptions = {}): Promise<{ ok: true } | CallFailure> {
    const ran = await this.#exec(args, options);
    if (!ran.ok) return ran;
    if (ran.exitCode === 2) return usageFailure(operation, ran.stderr);
    const decoded = decodeHerdrOutput({ stdout: ran.stdout, stderr: ran.stderr }, z.unknown());
    if (decoded.kind === "error") return herdrError(operation, decoded.code, decoded.message);
    if (ran.exitCode !== 0) return exitFailure(operation, ran.exitCode, ran.stderr);
    return { ok: true };
  }
}

/** A failure from one call: `detail` is Herdr's own message, for callers that phrase their own sentence. */
type CallFailure = MuxFailure & { detail: string };

/** What a removal goes through: a workspace of the worktree (`reopened` when opened for it), or nothing, its outcome known. */
type RemovalTarget = { kind: "workspace"; workspaceId: string; reopened: boolean } | { kind: "done"; result: MuxResult<object> };

function callFailure(code: string, message: string, detail = message): CallFailure {
  return { ok: false, code, message, detail };
}

/** The public shape of a failure (without the call's `detail`). */
function publicFailure(failure: MuxFailure): MuxFailure {
  return {
    ok: false,
    code: failure.code,
    message: failure.message,
    ...(failure.partial !== undefined ? { partial: failure.partial } : {}),
  };
}

function usageFailure(operation: string, stderr: string): CallFailure {
  const detail = oneLine(stderr).slice(0, 200) || "no message";
  return callFailure(
    "usage_error",
    `herdr ${operation} rejected its arguments (${stripPeriod(detail)}); this Herdr version may not support what this package passes.`,
    detail,
  );
}

function exitFailure(operation: string, exitCode: number, stderr: string): CallFailure {
  const detail = oneLine(stderr).slice(0, 200) || "no message";
  return callFailure("herdr_failed", `herdr ${operation} failed with exit code ${exitCode}: ${stripPeriod(detail)}.`, detail);
}

/** A Herdr error code as a failure; a few get a sentence that says what to do. */
function herdrError(operation: string, code: string, herdrMessage: string): CallFailure {
  const detail = stripPeriod(oneLine(herdrMessage)) || code;
  switch (code) {
    case "server_not_running":
      return callFailure(code, `The Herdr server is not running: ${detail}.`, detail);
    case "pane_not_found":
      return callFailure(code, `Herdr could not find the pane (${detail}); it was closed.`, detail);
    case "workspace_not_found":
      return callFailure(code, `Herdr could not find the workspace (${detail}); it was closed.`, detail);
    default:
      return callFailure(code, `herdr ${operation} failed (${code}): ${detail}.`, detail);
  }
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

async function findByPath(entries: readonly HerdrWorktreeInfo[], wanted: string): Promise<HerdrWorktreeInfo | undefined> {
  for (const entry of entries) {
    if ((await canonicalPath(entry.path)) === wanted) return entry;
  }
  return undefined;
}

/** The realpath of `path` when it exists, else the path made absolute. */
async function canonicalPath(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return resolve(path);
  }
}

function socketOf(socketPath: string | undefined): { socketPath?: string } {
  return socketPath !== undefined ? { socketPath } : {};
}

function asHerdrLocation(location: MuxLocation): { ok: true; location: HerdrLocation } | MuxFailure {
  if (location.kind !== "herdr") return invalidLocation(`A ${location.kind} location was given to the Herdr backend.`);
  return { ok: true, location };
}

/** The pane a location names, with the socket of its server. */
function paneOf(location: MuxLocation, defaultSocketPath: string | undefined): { ok: true; paneId: string; socketPath: string | undefined } | MuxFailure {
  const herdr = asHerdrLocation(location);
  if (!herdr.ok) return herdr;
  const { paneId, socketPath = defaultSocketPath } = herdr.location;
  if (!isHerdrId(paneId)) return invalidLocation("The Herdr location has no valid pane id.");
  return { ok: true, paneId, socketPath };
}

/**
 * `pane_not_found` is final only once it has been the answer for PANE_RESTART_GRACE_MS: a restarted
 * server answers it for its panes for ~750 ms before their terminals run again.
 */
class PaneNotFoundGrace {
  #since: number | undefined;

  isFinal(failure: MuxFailure): boolean {
    if (failure.code !== "pane_not_found") return false;
    this.#since ??= Date.now();
    return Date.now() - this.#since >= PANE_RESTART_GRACE_MS;
  }

  reset(): void {
    this.#since = undefined;
  }
}

/** One poll's timeout: what is left before the deadline, but never less than MIN_POLL_TIMEOUT_MS. */
function pollTimeout(deadline: number, maxMs: number): number {
  return Math.min(maxMs, Math.max(MIN_POLL_TIMEOUT_MS, deadline - Date.now()));
}

function ownWorkspace(workspaceId: string): MuxFailure {
  return {
    ok: false,
    code: "own_workspace",
    message: `Herdr workspace ${workspaceId} is the workspace this Pi runs in, not a handoff's, so it was left alone.`,
  };
}

function invalidLocation(message: string): MuxFailure {
  return { ok: false, code: "invalid_location", message };
}

function workspaceNotFound(workspaceId: string): MuxFailure {
  return { ok: false, code: "workspace_not_found", message: `Herdr workspace ${workspaceId} no longer exists.` };
}


