/**
 * The tmux backend: git (through `GitPort`) creates the worktree, tmux gives it a window.
 *
 * Invariants:
 * - Every tmux call addresses one server explicitly (`-S <socket>`), uses an argument array (never a
 *   shell string) and carries a timeout.
 * - This module never runs git; the worktree is created through the injected `GitPort`.
 * - Only `focus()` changes the active window; windows are created with `-d`.
 * - Failures are returned as values with a stable code and one sentence, never thrown.
 * - `run()` types the command line literally (`send-keys -l`), so tmux never interprets key names in it.
 * - Arguments tmux expands as formats (the window name, the start directory) go through
 *   `muxLabel`/`tmuxLiteral` (label.ts), so no `#(...)` in a branch or a path ever runs.
 * - Recovery (`reopenWorkspace`, `removeWorktree`) closes only a window that still shows the
 *   handoff's pane in its worktree (ids restart with a tmux server, so an id alone could name
 *   someone else's window), and refuses uncommitted changes before it closes anything.
 * - `findUnrecordedWindow` only reads: a window counts as the handoff's only when it carries the
 *   name the handoff gave it AND one of its panes is in the handoff's worktree.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { existsSync } from "node:fs";
import { execa } from "execa";
import type { GitPort, RecoveryGitPort } from "../git/types.ts";
import type { MuxLocation, TmuxLocation } from "../manifest/schema.ts";
import { muxLabel, tmuxLiteral } from "./label.ts";
import { processFacts } from "../process/facts.ts";
import type {
  CreatedWorkspace,
  CreateWorkspaceRequest,
  MuxFailure,
  MuxResult,
  PaneProcess,
  RecoverableMultiplexer,
  ReopenWorkspaceRequest,
  UnrecordedWindow,
  WorkspaceState,
} from "./types.ts";
import { describePaneProcesses } from "../process/pane-process.ts";
import { isDirectory } from "../fs/probe.ts";
import { errorClause } from "../errors.ts";
import { formatWait, hasControlCharacter, oneLine, stripPeriod } from "../text.ts";
import { backoff } from "./backoff.ts";
import { WAIT_DEFAULTS } from "../config/waits.ts";

const SHELL_SAMPLE_INTERVAL_MS = 20;
const SHELL_STABLE_SAMPLES = 3;

export interface TmuxMultiplexerOptions {
  /** The server socket of the parent's tmux (first field of `$TMUX`). */
  socketPath: string;
  /** The session to create windows in (e.g. `$3`); wins over `originPaneId`. */
  targetSession?: string;
  /** The pane the parent runs in (`$TMUX_PANE`); new windows go into the session that contains it. */
  originPaneId?: string;
  git: TmuxGitPort;
  /** Upper bound for each tmux call. */
  timeoutMs?: number;
  tmuxBin?: string;
}

/**
 * The git operations this backend runs through: creating a worktree for a handoff, and for
 * recovery's `removeWorktree` (optional, so a backend built only to hand off needs no more) the
 * status check and the removal.
 */
export type TmuxGitPort = Pick<GitPort, "addWorktree"> & Partial<Pick<RecoveryGitPort, "removeWorktree" | "worktreeStatus">>;

type TmuxCallResult = { ok: true; stdout: string } | MuxFailure;

export class TmuxMultiplexer implements RecoverableMultiplexer {
  readonly kind = "tmux" as const;
  readonly socketPath: string;
  readonly #targetSession: string | undefined;
  readonly #originPaneId: string | undefined;
  readonly #git: TmuxGitPort;
  readonly #timeoutMs: number;
  readonly #tmuxBin: string;

  constructor(options: TmuxMultiplexerOptions) {
    this.socketPath = options.socketPath;
    this.#targetSession = options.targetSession;
    this.#originPaneId = options.originPaneId;
    this.#git = options.git;
    this.#timeoutMs = options.timeoutMs ?? WAIT_DEFAULTS.muxCallMs;
    this.#tmuxBin = options.tmuxBin ?? "tmux";
  }

  /**
   * The backend for the tmux the current process runs inside, or undefined outside tmux.
   * `$TMUX` is `<socket path>,<server pid>,<session id number>`; the socket path may contain commas.
   */
  static fromEnvironment(
    env: Readonly<Record<string, string | undefined>>,
    git: TmuxGitPort,
    options: { timeoutMs?: number; tmuxBin?: string } = {},
  ): TmuxMultiplexer | undefined {
    const match = /^(.+),(\d+),(\d+)$/.exec(env.TMUX ?? "");
    const socketPath = match?.[1];
    if (socketPath === undefined || socketPath === "") return undefined;
    const originPaneId = env.TMUX_PANE !== undefined && /^%\d+$/.test(env.TMUX_PANE) ? env.TMUX_PANE : undefined;
    return new TmuxMultiplexer({
      socketPath,
      // Without a pane, fall back to the session recorded in $TMUX.
      ...(originPaneId === undefined ? { targetSession: `$${match?.[3] ?? "0"}` } : { originPaneId }),
      git,
      ...options,
    });
  }

  serverLocation(): TmuxLocation {
    return { kind: "tmux", socketPath: this.socketPath };
  }

  async findUnrecordedWindow(location: MuxLocation, query: { label: string; worktreePath: string }): Promise<UnrecordedWindow> {
    const tmuxLocation = asTmuxLocation(location);
    if (!tmuxLocation.ok) return { code: "unknown", message: tmuxLocation.message };
    const socketPath = tmuxLocation.location.socketPath ?? this.socketPath;
    if (!existsSync(socketPath)) return { code: "none" };
    // The name last: the rest are ids and a path, tab-separated.
    const listed = await this.#tmux(socketPath, ["list-panes", "-a", "-F", "#{session_id}\t#{window_id}\t#{pane_id}\t#{pane_current_path}\t#{window_name}"]);
    if (!listed.ok) return listed.code === "server_not_running" ? { code: "none" } : { code: "unknown", message: listed.message };
    // The intent holds the name as tmux shows it (muxLabel applied once, as `#newWindow` does).
    const name = query.label;
    for (const line of listed.stdout.split("\n")) {
      const [sessionId, windowId, paneId, path, windowName] = line.split("\t");
      if (windowName !== name || path === undefined || !isInside(path, query.worktreePath)) continue;
      if (!isId(sessionId, "$") || !isId(windowId, "@") || !isId(paneId, "%")) continue;
      return { code: "found", location: { kind: "tmux", socketPath, sessionId, windowId, paneId } };
    }
    return { code: "none" };
  }

  async createWorkspace(request: CreateWorkspaceRequest): Promise<MuxResult<CreatedWorkspace>> {
    // Resolve the session before creating anything, so an unreachable server leaves nothing behind.
    const session = await this.#resolveTargetSession();
    if (!session.ok) return session;

    try {
      await this.#git.addWorktree(request.mainCheckout, {
        path: request.worktreePath,
        branch: request.branch,
        sha: request.baseSha,
        // `--existing`: git checks the branch out as it is (`git worktree add <path> <branch>`).
        ...(request.existingBranch === true ? { existing: true } : {}),
      });
    } catch (error) {
      return {
        ok: false,
        code: "worktree_create_failed",
        message: `Could not create the worktree at ${request.worktreePath}: ${errorClause(error)}.`,
      };
    }

    const partial = { worktreePath: request.worktreePath };
    const created = await this.#newWindow(this.socketPath, session.sessionId, request.worktreePath, request.label, request.command);
    if (!created.ok) {
      return {
        ok: false,
        code: "window_create_failed",
        message: `Created the worktree at ${request.worktreePath} but could not open a tmux window for it: ${stripPeriod(created.message)}.`,
        partial,
      };
    }
    return { ok: true, location: created.location, worktreePath: request.worktreePath, ...(created.commandStarted ? { commandStarted: true } : {}) };
  }

  /**
   * A new window (unfocused) for an existing worktree: in the tmux session the old window was in
   * when that session still exists, otherwise in the session this backend targets (the tmux the
   * caller runs in).
   */
  async reopenWorkspace(request: ReopenWorkspaceRequest): Promise<MuxResult<{ location: TmuxLocation; commandStarted?: boolean }>> {
    const previous = asTmuxLocation(request.previous);
    if (!previous.ok) return previous;
    if (!(await isDirectory(request.worktreePath))) {
      return { ok: false, code: "worktree_missing", message: `The worktree ${request.worktreePath} no longer exists, so there is nothing to open a window in.` };
    }
    const candidates: Array<{ socketPath: string; target: string }> = [];
    if (previous.location.sessionId !== undefined) {
      candidates.push({ socketPath: previous.location.socketPath ?? this.socketPath, target: previous.location.sessionId });
    }
    const own = this.#targetSession ?? this.#originPaneId;
    if (own !== undefined) candidates.push({ socketPath: this.socketPath, target: own });
    let lastFailure: MuxFailure | undefined;
    for (const candidate of candidates) {
      const session = await this.#sessionOf(candidate.socketPath, candidate.target);
      if (!session.ok) {
        lastFailure = session;
        continue;
      }
      const created = await this.#newWindow(candidate.socketPath, session.sessionId, request.worktreePath, request.label, request.command);
      if (!created.ok) return created;
      return { ok: true, location: created.location, ...(created.commandStarted ? { commandStarted: true } : {}) };
    }
    return {
      ok: false,
      code: "no_session",
      message:
        lastFailure === undefined
          ? "There is no tmux session to open the window in; run this inside tmux."
          : `Could not find a tmux session to open the window in (${stripPeriod(lastFailure.message)}); run this inside tmux.`,
    };
  }

  /**
   * Closes the handoff's window (when it still shows the handoff's pane in the worktree), then has
   * git remove the worktree. Never deletes the branch. Without `force`, uncommitted or untracked
   * files refuse the removal before anything is closed.
   */
  async removeWorktree(
    location: MuxLocation,
    options: { mainCheckout: string; worktreePath: string; force: boolean },
  ): Promise<MuxResult<object>> {
    const tmuxLocation = asTmuxLocation(location);
    if (!tmuxLocation.ok) return tmuxLocation;
    const { removeWorktree, worktreeStatus } = this.#git;
    if (removeWorktree === undefined || worktreeStatus === undefined) {
      return { ok: false, code: "unsupported", message: "This tmux backend was built without the git operations needed to remove a worktree." };
    }
    const present = await isDirectory(options.worktreePath);
    if (present && !options.force) {
      let status: Awaited<ReturnType<typeof worktreeStatus>>;
      try {
        status = await worktreeStatus.call(this.#git, options.worktreePath);
      } catch (error) {
        return { ok: false, code: "worktree_remove_failed", message: `Could not read the state of ${options.worktreePath}: ${errorClause(error)}.` };
      }
      const changed = status.dirtyFiles.length + status.untrackedFiles.length;
      if (changed > 0) {
        return {
          ok: false,
          code: "dirty_worktree_requires_force",
          message: `The worktree ${options.worktreePath} has ${changed} uncommitted or untracked file(s); nothing was removed.`,
        };
      }
    }
    const closed = await this.#closeHandoffWindow(tmuxLocation.location, options.worktreePath);
    if (!closed.ok) return closed;
    try {
      await removeWorktree.call(this.#git, options.mainCheckout, options.worktreePath, { force: options.force });
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

  /** Kills the window only if its recorded pane is still there and still in the worktree. */
  async #closeHandoffWindow(location: TmuxLocation, worktreePath: string): Promise<MuxResult<object>> {
    const { windowId, paneId } = location;
    if (windowId === undefined || paneId === undefined) return { ok: true };
    const socketPath = location.socketPath ?? this.socketPath;
    const shown = await this.#tmux(socketPath, ["display-message", "-p", "-t", paneId, "#{pane_id}\t#{window_id}\t#{pane_current_path}"]);
    if (!shown.ok) {
      // No server or no such pane: the window is already gone.
      if (shown.code === "server_not_running" || shown.code === "pane_not_found") return { ok: true };
      return shown;
    }
    const [shownPane, shownWindow, currentPath = ""] = shown.stdout.replace(/\n$/, "").split("\t");
    if (shownPane !== paneId || shownWindow !== windowId || !isInside(currentPath, worktreePath)) return { ok: true };
    const killed = await this.#tmux(socketPath, ["kill-window", "-t", windowId]);
    if (!killed.ok && killed.code !== "pane_not_found" && killed.code !== "server_not_running") return killed;
    return { ok: true };
  }

  /**
   * A window (unfocused); with `command`, the window runs it followed by the shell tmux would have
   * started there (`default-command` through `default-shell`, else `default-shell` as a login
   * shell), so the pane goes on as the user's shell. tmux expands no format in a command's words.
   */
  async #newWindow(
    socketPath: string,
    sessionId: string,
    cwd: string,
    label: string,
    command?: readonly string[],
  ): Promise<{ ok: true; location: TmuxLocation; commandStarted: boolean } | MuxFailure> {
    let windowCommand: string[] = [];
    if (command !== undefined && command.length > 0) {
      const shell = await this.#userShell(socketPath, sessionId);
      if (!shell.ok) return shell;
      windowCommand = ["--", ...command, ...shell.argv];
    }
    const created = await this.#tmux(socketPath, [
      "new-window",
      "-d",
      "-t",
      `${sessionId}:`,
      // tmux expands formats in both: `#(...)` in a path or a branch name would run a command.
      "-c",
      tmuxLiteral(cwd),
      "-n",
      muxLabel(label),
      "-P",
      "-F",
      "#{session_id} #{window_id} #{pane_id}",
      ...windowCommand,
    ]);
    if (!created.ok) return created;
    const [shownSession, windowId, paneId] = created.stdout.trim().split(" ");
    if (!isId(shownSession, "$") || !isId(windowId, "@") || !isId(paneId, "%")) {
      return {
        ok: false,
        code: "window_create_failed",
        message: `tmux reported an unexpected window description: ${JSON.stringify(created.stdout)}.`,
      };
    }
    return { ok: true, location: { kind: "tmux", socketPath, sessionId: shownSession, windowId, paneId }, commandStarted: windowCommand.length > 0 };
  }

  /** The argv of the shell tmux starts in a new window of `sessionId` (see `#newWindow`). */
  async #userShell(socketPath: string, sessionId: string): Promise<{ ok: true; argv: string[] } | MuxFailure> {
    const shown = await this.#tmux(socketPath, ["display-message", "-p", "-t", `${sessionId}:`, "#{default-shell}\n#{default-command}"]);
    if (!shown.ok) return shown;
    const [shell = "", ...rest] = shown.stdout.split("\n");
    const defaultCommand = rest.join("\n").trim();
    const program = shell.trim() !== "" ? shell.trim() : "/bin/sh";
    return { ok: true, argv: defaultCommand !== "" ? [program, "-c", defaultCommand] : [program, "-l"] };
  }

  async waitForShell(location: MuxLocation, options: { timeoutMs: number }): Promise<MuxResult<object>> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return pane;
    const deadline = Date.now() + options.timeoutMs;
    const remaining = (): number => Math.max(1, deadline - Date.now());

    // Back off while the shell is not ready; sample closely once it looks ready (see backoff.ts).
    const delays = backoff(deadline);
    let stableSamples = 0;
    const pause = async (): Promise<boolean> => {
      const delay = stableSamples > 0 ? Math.min(SHELL_SAMPLE_INTERVAL_MS, deadline - Date.now()) : delays.next(Date.now());
      if (delay === undefined || delay <= 0) return false;
      await sleep(delay);
      return true;
    };
    let panePid = await this.#panePid(pane.socketPath, pane.paneId, remaining());
    for (;;) {
      if (!panePid.ok) {
        if (panePid.code === "timeout") break;
        return panePid;
      }
      const stat = await processFacts().status(panePid.pid);
      if (stat === undefined) {
        // The pane's process is gone: the pane was closed or respawned; ask tmux again.
        stableSamples = 0;
        if (!(await pause())) break;
        panePid = await this.#panePid(pane.socketPath, pane.paneId, remaining());
        continue;
      }
      // The shell owns the terminal once its own process group is the foreground group; a few
      // consecutive samples skip the moment between fork and exec of a startup command.
      stableSamples = stat.tpgid === stat.pid ? stableSamples + 1 : 0;
      if (stableSamples >= SHELL_STABLE_SAMPLES) return { ok: true };
      if (!(await pause())) break;
    }
    return {
      ok: false,
      code: "shell_not_ready",
      message: `The shell in tmux pane ${pane.paneId} did not become ready within ${formatWait(options.timeoutMs)}.`,
    };
  }

  async run(location: MuxLocation, commandLine: string): Promise<MuxResult<object>> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return pane;
    // A control character would be a keystroke (a newline runs half a line, a tab completes).
    if (hasControlCharacter(commandLine)) {
      return {
        ok: false,
        code: "invalid_command_line",
        message: "The command line contains a control character (such as a newline) and was not typed.",
      };
    }
    const typed = await this.#tmux(pane.socketPath, ["send-keys", "-t", pane.paneId, "-l", "--", commandLine]);
    if (!typed.ok) return this.#paneFailure(pane, typed);
    const entered = await this.#tmux(pane.socketPath, ["send-keys", "-t", pane.paneId, "Enter"]);
    if (!entered.ok) return this.#paneFailure(pane, entered);
    return { ok: true };
  }

  async probe(location: MuxLocation): Promise<MuxResult<{ processes: PaneProcess[] }>> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return pane;
    const panePid = await this.#panePid(pane.socketPath, pane.paneId, this.#timeoutMs);
    if (!panePid.ok) return panePid;
    const pids = await processFacts().descendants(panePid.pid);
    return { ok: true, processes: await describePaneProcesses(pids) };
  }

  async focus(location: MuxLocation): Promise<MuxResult<object>> {
    const tmuxLocation = asTmuxLocation(location);
    if (!tmuxLocation.ok) return tmuxLocation;
    const windowId = tmuxLocation.location.windowId;
    if (windowId === undefined) return invalidLocation("The tmux location has no window id to focus.");
    const socketPath = tmuxLocation.location.socketPath ?? this.socketPath;
    const selected = await this.#tmux(socketPath, ["select-window", "-t", windowId]);
    return selected.ok ? { ok: true } : selected;
  }

  async exists(location: MuxLocation): Promise<boolean> {
    return (await this.workspaceState(location)).code === "open";
  }

  async workspaceState(location: MuxLocation): Promise<WorkspaceState> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return { code: "unknown", message: pane.message };
    // No socket file, no server: closed, without starting a tmux client to find that out.
    if (!existsSync(pane.socketPath)) return { code: "closed" };
    // tmux 3.3 prints an empty line (exit 0) for an unknown pane, so compare the echoed id.
    const shown = await this.#tmux(pane.socketPath, ["display-message", "-p", "-t", pane.paneId, "#{pane_id}"]);
    if (shown.ok) return shown.stdout.trim() === pane.paneId ? { code: "open" } : { code: "closed" };
    // tmux restores nothing: with its server gone, the window is gone for good.
    if (shown.code === "pane_not_found" || shown.code === "server_not_running") return { code: "closed" };
    return { code: "unknown", message: shown.message };
  }

  async #resolveTargetSession(): Promise<{ ok: true; sessionId: string } | MuxFailure> {
    const target = this.#targetSession ?? this.#originPaneId;
    if (target === undefined) {
      return invalidLocation("No tmux session to open the window in: give a target session or the parent's pane.");
    }
    return this.#sessionOf(this.socketPath, target);
  }

  /** The id of the session `target` (a session or pane id) names on the server at `socketPath`. */
  async #sessionOf(socketPath: string, target: string): Promise<{ ok: true; sessionId: string } | MuxFailure> {
    const shown = await this.#tmux(socketPath, ["display-message", "-p", "-t", target, "#{session_id}"]);
    if (!shown.ok) return shown;
    const sessionId = shown.stdout.trim();
    if (!isId(sessionId, "$")) {
      return { ok: false, code: "pane_not_found", message: `tmux has no session or pane ${target}.` };
    }
    return { ok: true, sessionId };
  }

  async #panePid(
    socketPath: string,
    paneId: string,
    timeoutMs: number,
  ): Promise<{ ok: true; pid: number } | MuxFailure> {
    const shown = await this.#tmux(socketPath, ["display-message", "-p", "-t", paneId, "#{pane_id} #{pane_pid}"], {
      timeoutMs: Math.min(timeoutMs, this.#timeoutMs),
    });
    if (!shown.ok) return this.#paneFailure({ paneId }, shown);
    const [shownPane, pidText] = shown.stdout.trim().split(" ");
    const pid = Number(pidText);
    if (shownPane !== paneId || !Number.isInteger(pid) || pid <= 0) return paneNotFound(paneId);
    return { ok: true, pid };
  }

  #paneFailure(pane: { paneId: string }, failure: MuxFailure): MuxFailure {
    return failure.code === "pane_not_found" ? paneNotFound(pane.paneId) : failure;
  }

  async #tmux(socketPath: string, args: string[], options: { timeoutMs?: number } = {}): Promise<TmuxCallResult> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const result = await execa(this.#tmuxBin, ["-S", socketPath, ...args], {
      timeout: timeoutMs,
      reject: false,
      stdin: "ignore",
    });
    if (!result.failed) return { ok: true, stdout: result.stdout };
    const stderr = oneLine(result.stderr);
    if (result.timedOut) {
      return { ok: false, code: "timeout", message: `tmux ${args[0]} did not answer within ${formatWait(timeoutMs)}.` };
    }
    if (result.code === "ENOENT") {
      return { ok: false, code: "tmux_failed", message: `The tmux executable ${this.#tmuxBin} was not found.` };
    }
    // A server that is shutting down answers "server exited unexpectedly" (or "lost server" mid-call).
    if (/^no server running on |^error connecting to |^server exited unexpectedly|^lost server/.test(stderr)) {
      return { ok: false, code: "server_not_running", message: `No tmux server is running on ${socketPath}.` };
    }
    if (/^can't find (pane|window|session)/.test(stderr)) {
      return { ok: false, code: "pane_not_found", message: `tmux ${stripPeriod(stderr)}.` };
    }
    const detail = stderr || oneLine(result.shortMessage ?? "") || `exit code ${String(result.exitCode)}`;
    return { ok: false, code: "tmux_failed", message: `tmux ${args[0]} failed: ${stripPeriod(detail)}.` };
  }
}

function asTmuxLocation(location: MuxLocation): { ok: true; location: TmuxLocation } | MuxFailure {
  if (location.kind !== "tmux") return invalidLocation(`A ${location.kind} location was given to the tmux backend.`);
  return { ok: true, location };
}

/** The pane a location names, on the location's own server (the backend's when it records none). */
function paneOf(
  location: MuxLocation,
  defaultSocketPath: string,
): { ok: true; socketPath: string; paneId: string } | MuxFailure {
  const tmuxLocation = asTmuxLocation(location);
  if (!tmuxLocation.ok) return tmuxLocation;
  const { socketPath = defaultSocketPath, paneId } = tmuxLocation.location;
  if (paneId === undefined) return invalidLocation("The tmux location has no pane id.");
  return { ok: true, socketPath, paneId };
}

function invalidLocation(message: string): MuxFailure {
  return { ok: false, code: "invalid_location", message };
}

function paneNotFound(paneId: string): MuxFailure {
  return { ok: false, code: "pane_not_found", message: `tmux pane ${paneId} no longer exists.` };
}

function isId(value: string | undefined, sigil: "$" | "@" | "%"): value is string {
  return value !== undefined && value.startsWith(sigil) && /^\d+$/.test(value.slice(1));
}

/** Whether `path` (as tmux shows a pane's cwd; a deleted one gets " (deleted)") is `dir` or inside it. */
function isInside(path: string, dir: string): boolean {
  const shown = path.replace(/ \(deleted\)$/, "");
  return shown === dir || shown.startsWith(`${dir}/`);
}

