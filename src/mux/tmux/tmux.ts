/**
 * The tmux backend: git (through `GitPort`) creates the worktree, tmux gives it a window.
 *
 * Invariants:
 * - Every tmux call addresses one server explicitly (`-S <socket>`), uses an argument array (never a
 *   shell string) and carries a timeout.
 * - This module never runs git; the worktree is created through the injected `GitPort`.
 * - Only `focus()` changes the active window; windows are created with `-d`.
 * - `switchKeys` reads the prefix each window's session uses and the window's index (`Ctrl-b 0`):
 *   a key is offered only for an index 0-9 (tmux's default `prefix <digit>` binding), else none.
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
import { existsSync } from "node:fs";
import type { DescribedProcess } from "../../process/facts.ts";
import type { MuxLocation } from "../../manifest/schema.ts";
import type { TmuxLocation } from "../../manifest/locations.ts";
import { processFacts } from "../../process/facts.ts";
import type {
  CreatedWorkspace,
  CreateWorkspaceRequest,
  MuxFailure,
  MuxResult,
  RecoverableMultiplexer,
  ReopenWorkspaceRequest,
  SwitchKeys,
  UnrecordedWindow,
  WorkspaceState,
} from "../types.ts";
import { describePaneProcesses } from "../../process/pane-process.ts";
import { isDirectory } from "../../fs/probe.ts";
import { formatWait, hasControlCharacter, stripPeriod } from "../../text.ts";
import { waitForForegroundShell, type ShellSample } from "../shell-wait.ts";
import { createWithGit, removeWithGit, type GitWorktreePort } from "../git-worktree.ts";
import { WAIT_DEFAULTS } from "../../config/waits.ts";
import { newWindow, sessionAndShell } from "./windows.ts";
import type { AskOnce } from "../terminal.ts";
import {
  asTmuxLocation,
  invalidLocation,
  isId,
  isInside,
  paneNotFound,
  paneOf,
  runTmux,
  SERVER_FORMAT,
  serverNotRunning,
  SERVER_PATTERN,
  type TmuxCallResult,
} from "./client.ts";

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
  /** Shared answers of one inventory: each server's panes are listed once (`workspaceState`). */
  askOnce?: AskOnce;
}

/**
 * The git operations this backend runs through: creating a worktree for a handoff, and for
 * recovery's `removeWorktree` (optional, so a backend built only to hand off needs no more) the
 * status check and the removal.
 */
export type TmuxGitPort = GitWorktreePort;

export class TmuxMultiplexer implements RecoverableMultiplexer {
  readonly kind = "tmux" as const;
  // createWithGit makes the worktree at the requested path.
  readonly createsAtRequestedPath = true;
  readonly socketPath: string;
  readonly #targetSession: string | undefined;
  readonly #originPaneId: string | undefined;
  readonly #git: TmuxGitPort;
  readonly #timeoutMs: number;
  readonly #tmuxBin: string;
  readonly #askOnce: AskOnce | undefined;
  readonly #run = (socketPath: string, args: string[]): Promise<TmuxCallResult> => this.#tmux(socketPath, args);

  constructor(options: TmuxMultiplexerOptions) {
    this.socketPath = options.socketPath;
    this.#targetSession = options.targetSession;
    this.#originPaneId = options.originPaneId;
    this.#git = options.git;
    this.#timeoutMs = options.timeoutMs ?? WAIT_DEFAULTS.muxCallMs;
    this.#tmuxBin = options.tmuxBin ?? "tmux";
    this.#askOnce = options.askOnce;
  }

  /**
   * The backend for the tmux the current process runs inside, or undefined outside tmux.
   * `$TMUX` is `<socket path>,<server pid>,<session id number>`; the socket path may contain commas.
   */
  static fromEnvironment(
    env: Readonly<Record<string, string | undefined>>,
    git: TmuxGitPort,
    options: { timeoutMs?: number; tmuxBin?: string; askOnce?: AskOnce } = {},
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

  /**
   * Whether the server in `$TMUX` answers and knows the pane (or session) windows would open
   * beside: asked before a handoff writes anything (mux/registry.ts).
   */
  async ping(): Promise<MuxResult<object>> {
    const session = await this.#resolveTargetSession();
    return session.ok ? { ok: true } : session;
  }

  serverLocation(): TmuxLocation {
    return { kind: "tmux", socketPath: this.socketPath };
  }

  async findUnrecordedWindow(
    location: MuxLocation,
    query: { label: string; worktreePath: string },
  ): Promise<UnrecordedWindow> {
    const tmuxLocation = asTmuxLocation(location);
    if (!tmuxLocation.ok) return { code: "unknown", message: tmuxLocation.message };
    const socketPath = tmuxLocation.location.socketPath ?? this.socketPath;
    if (!existsSync(socketPath)) return { code: "none" };
    // The name last: the rest are ids and a path, tab-separated.
    const listed = await this.#tmux(socketPath, [
      "list-panes",
      "-a",
      "-F",
      `#{session_id}\t#{window_id}\t#{pane_id}\t${SERVER_FORMAT}\t#{pane_current_path}\t#{window_name}`,
    ]);
    if (!listed.ok)
      return listed.code === "server_not_running" ? { code: "none" } : { code: "unknown", message: listed.message };
    // The intent holds the name as tmux shows it (muxLabel applied once, as `#newWindow` does).
    const name = query.label;
    for (const line of listed.stdout.split("\n")) {
      const [sessionId, windowId, paneId, server = "", path, windowName] = line.split("\t");
      if (windowName !== name || path === undefined || !isInside(path, query.worktreePath)) continue;
      if (!isId(sessionId, "$") || !isId(windowId, "@") || !isId(paneId, "%")) continue;
      return {
        code: "found",
        location: {
          kind: "tmux",
          socketPath,
          sessionId,
          windowId,
          paneId,
          ...(SERVER_PATTERN.test(server) ? { server } : {}),
        },
      };
    }
    return { code: "none" };
  }

  async createWorkspace(request: CreateWorkspaceRequest): Promise<MuxResult<CreatedWorkspace>> {
    // Resolve the session before creating anything, so an unreachable server leaves nothing behind;
    // for a window that runs a command, the shell tmux starts there comes with it (one call).
    const session = await this.#resolveTargetSession(request.command !== undefined && request.command.length > 0);
    if (!session.ok) return session;
    const shell = session.shell === undefined ? undefined : Promise.resolve({ ok: true as const, argv: session.shell });
    return createWithGit(this.#git, request, "a tmux window", () =>
      newWindow(
        this.#run,
        this.socketPath,
        session.sessionId,
        request.worktreePath,
        request.label,
        request.command,
        shell,
      ),
    );
  }

  /**
   * A new window (unfocused) for an existing worktree: in the tmux session the old window was in
   * when that session still exists, otherwise in the session this backend targets (the tmux the
   * caller runs in).
   */
  async reopenWorkspace(
    request: ReopenWorkspaceRequest,
  ): Promise<MuxResult<{ location: TmuxLocation; commandStarted?: boolean }>> {
    const previous = asTmuxLocation(request.previous);
    if (!previous.ok) return previous;
    if (!(await isDirectory(request.worktreePath))) {
      return {
        ok: false,
        code: "worktree_missing",
        message: `The worktree ${request.worktreePath} no longer exists, so there is nothing to open a window in.`,
      };
    }
    const candidates: Array<{ socketPath: string; target: string }> = [];
    if (previous.location.sessionId !== undefined) {
      candidates.push({
        socketPath: previous.location.socketPath ?? this.socketPath,
        target: previous.location.sessionId,
      });
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
      const created = await newWindow(
        this.#run,
        candidate.socketPath,
        session.sessionId,
        request.worktreePath,
        request.label,
        request.command,
      );
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
    return removeWithGit(this.#git, "tmux", options, () =>
      this.#closeHandoffWindow(tmuxLocation.location, options.worktreePath),
    );
  }

  /** Closes the window of a worktree that is gone (prune), only while it still shows that worktree. */
  async closeWorkspace(location: MuxLocation, worktreePath: string): Promise<MuxResult<{ closed: boolean }>> {
    const tmuxLocation = asTmuxLocation(location);
    if (!tmuxLocation.ok) return tmuxLocation;
    return this.#closeHandoffWindow(tmuxLocation.location, worktreePath);
  }

  /** Kills the window only if its recorded pane is still there and still in the worktree. */
  async #closeHandoffWindow(location: TmuxLocation, worktreePath: string): Promise<MuxResult<{ closed: boolean }>> {
    const { windowId, paneId } = location;
    if (windowId === undefined || paneId === undefined) return { ok: true, closed: false };
    const socketPath = location.socketPath ?? this.socketPath;
    const shown = await this.#tmux(socketPath, [
      "display-message",
      "-p",
      "-t",
      paneId,
      "#{pane_id}\t#{window_id}\t#{pane_current_path}",
    ]);
    if (!shown.ok) {
      // No server or no such pane: the window is already gone.
      if (shown.code === "server_not_running" || shown.code === "pane_not_found") return { ok: true, closed: false };
      return shown;
    }
    const [shownPane, shownWindow, currentPath = ""] = shown.stdout.replace(/\n$/, "").split("\t");
    if (shownPane !== paneId || shownWindow !== windowId || !isInside(currentPath, worktreePath))
      return { ok: true, closed: false };
    const killed = await this.#tmux(socketPath, ["kill-window", "-t", windowId]);
    if (!killed.ok && killed.code !== "pane_not_found" && killed.code !== "server_not_running") return killed;
    return { ok: true, closed: killed.ok };
  }

  async waitForShell(location: MuxLocation, options: { timeoutMs: number }): Promise<MuxResult<object>> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return pane;
    const deadline = Date.now() + options.timeoutMs;
    const remaining = (): number => Math.max(1, deadline - Date.now());
    // The pane's pid, asked again only when its process is gone (the pane was closed or respawned).
    let panePid: { ok: true; pid: number } | MuxFailure | undefined;
    // Back off while the shell is not ready; sample closely once it looks ready (../shell-wait.ts).
    const waited = await waitForForegroundShell({
      deadline,
      // A few consecutive samples skip the moment between fork and exec of a startup command.
      stableSamples: SHELL_STABLE_SAMPLES,
      stableIntervalMs: SHELL_SAMPLE_INTERVAL_MS,
      sample: async (): Promise<ShellSample> => {
        panePid ??= await this.#panePid(pane.socketPath, pane.paneId, remaining());
        if (!panePid.ok) return panePid.code === "timeout" ? { kind: "give_up" } : { kind: "stop", failure: panePid };
        const stat = await processFacts().status(panePid.pid);
        if (stat === undefined) {
          // The pane's process is gone: the pane was closed or respawned; ask tmux again.
          panePid = undefined;
          return { kind: "miss" };
        }
        return { kind: "sample", shellPid: stat.pid, foregroundGroup: stat.tpgid };
      },
    });
    if (waited.code === "ready") return { ok: true };
    if (waited.code === "stopped") return waited.failure;
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

  async probe(location: MuxLocation): Promise<MuxResult<{ processes: DescribedProcess[] }>> {
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

  async switchKeys(child: MuxLocation): Promise<SwitchKeys> {
    const location = asTmuxLocation(child);
    if (!location.ok) return {};
    const socketPath = location.location.socketPath ?? this.socketPath;
    const keyOf = async (target: string | undefined): Promise<string | undefined> => {
      if (target === undefined) return undefined;
      const shown = await this.#tmux(socketPath, ["display-message", "-p", "-t", target, "#{window_index}\t#{prefix}"]);
      return shown.ok ? windowKey(shown.stdout) : undefined;
    };
    // The parent's pane is this backend's origin only on the child's own server.
    const parent = socketPath === this.socketPath ? this.#originPaneId : undefined;
    const [back, goTo] = await Promise.all([keyOf(parent), keyOf(location.location.windowId)]);
    return { ...(back === undefined ? {} : { back }), ...(goTo === undefined ? {} : { goTo }) };
  }

  async exists(location: MuxLocation): Promise<boolean> {
    return (await this.workspaceState(location)).code === "open";
  }

  async workspaceState(location: MuxLocation): Promise<WorkspaceState> {
    const pane = paneOf(location, this.socketPath);
    if (!pane.ok) return { code: "unknown", message: pane.message };
    // The server's panes, listed once for all the handoffs of one inventory (`askOnce`), the
    // socket file looked at once with them. A server started again on the socket reuses pane ids,
    // so the server is compared too when recorded.
    const socketPath = pane.socketPath;
    const listing = await (this.#askOnce?.(`tmux panes ${socketPath}`, () => this.#panesOf(socketPath)) ??
      this.#panesOf(socketPath));
    if (listing.ok) {
      if (!listing.panes.has(pane.paneId)) return { code: "closed" };
      return pane.server === undefined || listing.server === pane.server ? { code: "open" } : { code: "closed" };
    }
    // tmux restores nothing: with its server gone, the window is gone for good.
    if (listing.code === "server_not_running") return { code: "closed" };
    return { code: "unknown", message: listing.message };
  }

  /** Every pane of the server at `socketPath`, and which server answered (its pid and start time). */
  async #panesOf(
    socketPath: string,
  ): Promise<{ ok: true; panes: ReadonlySet<string>; server: string | undefined } | MuxFailure> {
    // No socket file, no server, without starting a tmux client to find that out.
    if (!existsSync(socketPath)) return serverNotRunning(socketPath);
    const listed = await this.#tmux(socketPath, ["list-panes", "-a", "-F", `#{pane_id} ${SERVER_FORMAT}`]);
    if (!listed.ok) return listed;
    const panes = new Set<string>();
    let server: string | undefined;
    for (const line of listed.stdout.split("\n")) {
      const [paneId = "", shownServer = ""] = line.trim().split(" ");
      if (!isId(paneId, "%")) continue;
      panes.add(paneId);
      server ??= shownServer;
    }
    return { ok: true, panes, server };
  }

  /** The session new windows go into; `withShell`: and the shell tmux starts in one there, from the same call. */
  async #resolveTargetSession(
    withShell = false,
  ): Promise<{ ok: true; sessionId: string; shell?: string[] } | MuxFailure> {
    const target = this.#targetSession ?? this.#originPaneId;
    if (target === undefined) {
      return invalidLocation("No tmux session to open the window in: give a target session or the parent's pane.");
    }
    return withShell ? sessionAndShell(this.#run, this.socketPath, target) : this.#sessionOf(this.socketPath, target);
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
    return runTmux(this.#tmuxBin, socketPath, args, options.timeoutMs ?? this.#timeoutMs);
  }
}

/** Modifiers as tmux writes them in a key name (`C-b`, `M-a`) and as a person reads them. */
const MODIFIERS: Readonly<Record<string, string>> = { C: "Ctrl", M: "Alt", S: "Shift" };

/**
 * `Ctrl-b 0` from tmux's `<index>\t<prefix>`: the prefix then the window's number, which tmux binds
 * by default for windows 0 to 9; undefined for another index, no prefix (`None`) or an odd answer.
 */
export function windowKey(answer: string): string | undefined {
  const match = /^(\d)\t(\S+)\n?$/.exec(answer);
  if (match === null) return undefined;
  const [, index, prefix = ""] = match;
  if (prefix === "None") return undefined;
  const parts = /^((?:[CMS]-)*)(.+)$/.exec(prefix);
  if (parts === null) return undefined;
  const modifiers = (parts[1] ?? "").split("-").filter((part) => part !== "");
  return `${[...modifiers.map((modifier) => MODIFIERS[modifier] ?? modifier), parts[2]].join("-")} ${index}`;
}
