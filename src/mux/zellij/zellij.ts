/**
 * The zellij backend: git (through the shared git-worktree lifecycle) creates the worktree, zellij
 * gives it a tab in the parent's session, and the tab's pane runs the handoff's launcher itself.
 *
 * Invariants:
 * - Every call names its session (`zellij --session <name> action ...`), its socket directory when
 *   one was recorded (`ZELLIJ_SOCKET_DIR`), uses an argument array and carries a timeout.
 * - Only `focus()` changes the active tab: tabs are made with `new-tab --no-focus`.
 * - zellij answers 0 for an id it does not know, so nothing here trusts an exit code alone: every
 *   act on a tab is preceded by reading `list-panes --all --json` and finding the recorded pane in
 *   the recorded tab, in the handoff's worktree. A closed tab's id is given to the next new tab
 *   (pane ids only grow, until the session restarts), so the pane id is what names a handoff's tab.
 * - `run()` types the line literally (`write-chars`), then Enter as a byte; a control character is
 *   refused, since it would be a keystroke.
 * - Failures are values with a stable code and one sentence, never thrown.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { WAIT_DEFAULTS } from "../../config/waits.ts";
import { isDirectory } from "../../fs/probe.ts";
import { processFacts, type DescribedProcess } from "../../process/facts.ts";
import { describePaneProcesses } from "../../process/pane-process.ts";
import { formatWait, hasControlCharacter, stripPeriod } from "../../text.ts";
import { backoff } from "../backoff.ts";
import { createWithGit, removeWithGit, type GitWorktreePort, type OpenedWindow } from "../git-worktree.ts";
import { muxLabel } from "../label.ts";
import { paneCwdInside as isInside } from "../location.ts";
import type { MuxLocation } from "../../manifest/locations.ts";
import type {
  CreatedWorkspace,
  CreateWorkspaceRequest,
  MuxFailure,
  MuxResult,
  RecoverableMultiplexer,
  ReopenWorkspaceRequest,
  UnrecordedWindow,
  WorkspaceOwner,
  WorkspaceState,
} from "../types.ts";
import { ZellijClient, type ZellijPane } from "./client.ts";
import type { ZellijLocation } from "../../manifest/locations.ts";

const SCREEN_SAMPLE_INTERVAL_MS = 50;
const SCREEN_STABLE_SAMPLES = 3;
/** How long a new tab may take to be listed after `new-tab` returned. */
const NEW_TAB_SETTLE_MS = 3_000;
const NEW_TAB_POLL_MS = 50;

export interface ZellijMultiplexerOptions {
  /** The session tabs are made in (`$ZELLIJ_SESSION_NAME` of the parent's pane). */
  sessionName: string;
  /** `ZELLIJ_SOCKET_DIR` when the parent's zellij has one; else zellij's own default. */
  socketDir?: string;
  git: GitWorktreePort;
  timeoutMs?: number;
  zellijBin?: string;
  /** The environment zellij is run with (PATH, XDG_RUNTIME_DIR, TMPDIR decide its defaults). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** The pane a location names, with the session that holds it. */
interface PaneTarget {
  sessionName: string;
  socketDir: string | undefined;
  tabId: string;
  paneId: string;
}

export class ZellijMultiplexer implements RecoverableMultiplexer {
  readonly kind = "zellij" as const;
  // createWithGit makes the worktree at the requested path.
  readonly createsAtRequestedPath = true;
  readonly sessionName: string;
  readonly socketDir: string | undefined;
  readonly #git: GitWorktreePort;
  readonly #client: ZellijClient;
  readonly #env: Readonly<Record<string, string | undefined>>;

  constructor(options: ZellijMultiplexerOptions) {
    this.sessionName = options.sessionName;
    this.socketDir = options.socketDir;
    this.#git = options.git;
    this.#env = options.env ?? process.env;
    this.#client = new ZellijClient({
      bin: options.zellijBin ?? "zellij",
      env: this.#env,
      timeoutMs: options.timeoutMs ?? WAIT_DEFAULTS.muxCallMs,
    });
  }

  /** The backend for the zellij session this process runs in, or undefined outside zellij. */
  static fromEnvironment(
    env: Readonly<Record<string, string | undefined>>,
    git: GitWorktreePort,
    options: { timeoutMs?: number; zellijBin?: string } = {},
  ): ZellijMultiplexer | undefined {
    const sessionName = env.ZELLIJ_SESSION_NAME;
    if (sessionName === undefined || sessionName === "") return undefined;
    const socketDir = env.ZELLIJ_SOCKET_DIR;
    return new ZellijMultiplexer({
      sessionName,
      ...(socketDir !== undefined && socketDir !== "" ? { socketDir } : {}),
      git,
      env,
      ...options,
    });
  }

  /** Whether the session answers: asked before a handoff writes anything. */
  async ping(): Promise<MuxResult<object>> {
    const listed = await this.#client.panes(this.sessionName, this.socketDir);
    return listed.ok ? { ok: true } : listed;
  }

  serverLocation(): ZellijLocation {
    return {
      kind: "zellij",
      ...(this.socketDir === undefined ? {} : { socketDir: this.socketDir }),
      sessionName: this.sessionName,
    };
  }

  async createWorkspace(request: CreateWorkspaceRequest): Promise<MuxResult<CreatedWorkspace>> {
    // Ask the session before creating anything, so an unreachable one leaves nothing behind.
    const answered = await this.ping();
    if (!answered.ok) return answered;
    return createWithGit(this.#git, request, "a zellij tab", () =>
      this.#newTab(this.sessionName, this.socketDir, request.worktreePath, request.label, request.command),
    );
  }

  /** A new tab (unfocused) for an existing worktree: in the recorded session while it answers, else in this one. */
  async reopenWorkspace(
    request: ReopenWorkspaceRequest,
  ): Promise<MuxResult<{ location: ZellijLocation; commandStarted?: boolean }>> {
    const previous = asZellijLocation(request.previous);
    if (!previous.ok) return previous;
    if (!(await isDirectory(request.worktreePath))) {
      return {
        ok: false,
        code: "worktree_missing",
        message: `The worktree ${request.worktreePath} no longer exists, so there is nothing to open a tab in.`,
      };
    }
    const candidates: Array<{ sessionName: string; socketDir: string | undefined }> = [];
    const recorded = previous.location.sessionName;
    if (recorded !== undefined) candidates.push({ sessionName: recorded, socketDir: previous.location.socketDir });
    if (recorded !== this.sessionName) candidates.push({ sessionName: this.sessionName, socketDir: this.socketDir });
    let lastFailure: MuxFailure | undefined;
    for (const candidate of candidates) {
      const answered = await this.#client.panes(candidate.sessionName, candidate.socketDir);
      if (!answered.ok) {
        lastFailure = answered;
        continue;
      }
      const opened = await this.#newTab(
        candidate.sessionName,
        candidate.socketDir,
        request.worktreePath,
        request.label,
        request.command,
      );
      if (!opened.ok) return opened;
      if (opened.location.kind !== "zellij") return invalidLocation("zellij made a location of another terminal.");
      return { ok: true, location: opened.location, ...(opened.commandStarted ? { commandStarted: true } : {}) };
    }
    return {
      ok: false,
      code: "no_session",
      message: `Could not find a zellij session to open the tab in (${stripPeriod(lastFailure?.message ?? "none answered")}); run this inside zellij.`,
    };
  }

  async removeWorktree(
    location: MuxLocation,
    options: { mainCheckout: string; worktreePath: string; force: boolean },
  ): Promise<MuxResult<object>> {
    const zellijLocation = asZellijLocation(location);
    if (!zellijLocation.ok) return zellijLocation;
    return removeWithGit(this.#git, "zellij", options, () =>
      this.#closeHandoffTab(zellijLocation.location, options.worktreePath),
    );
  }

  async closeWorkspace(location: MuxLocation, worktreePath: string): Promise<MuxResult<{ closed: boolean }>> {
    const zellijLocation = asZellijLocation(location);
    if (!zellijLocation.ok) return zellijLocation;
    return this.#closeHandoffTab(zellijLocation.location, worktreePath);
  }

  async findUnrecordedWindow(
    location: MuxLocation,
    query: { label: string; worktreePath: string },
  ): Promise<UnrecordedWindow> {
    const zellijLocation = asZellijLocation(location);
    if (!zellijLocation.ok) return { code: "unknown", message: zellijLocation.message };
    const sessionName = zellijLocation.location.sessionName ?? this.sessionName;
    const socketDir =
      zellijLocation.location.sessionName === undefined ? this.socketDir : zellijLocation.location.socketDir;
    const listed = await this.#client.panes(sessionName, socketDir);
    if (!listed.ok)
      return listed.code === "session_not_found" ? { code: "none" } : { code: "unknown", message: listed.message };
    for (const pane of listed.panes) {
      if (pane.tab_name !== query.label || !isInside(pane.pane_cwd, query.worktreePath)) continue;
      return {
        code: "found",
        location: {
          kind: "zellij",
          ...(socketDir === undefined ? {} : { socketDir }),
          sessionName,
          tabId: String(pane.tab_id),
          paneId: terminalPaneId(pane.id),
        },
      };
    }
    return { code: "none" };
  }

  /**
   * Zellij tells no pane's process, so the shell counts as ready once the pane is there, running,
   * and its screen shows something (a prompt) that stays the same over a few samples.
   */
  async waitForShell(location: MuxLocation, options: { timeoutMs: number }): Promise<MuxResult<object>> {
    const target = this.#target(location);
    if (!target.ok) return target;
    const deadline = Date.now() + options.timeoutMs;
    const delays = backoff(deadline);
    let previous: string | undefined;
    let stable = 0;
    for (;;) {
      const pane = await this.#findPane(target);
      if (!pane.ok) return pane;
      if (pane.pane === undefined || pane.pane.exited === true) return paneNotFound(target.paneId);
      const screen = await this.#client.call(target.sessionName, target.socketDir, [
        "dump-screen",
        "--pane-id",
        target.paneId,
      ]);
      const shown = screen.ok ? screen.stdout.trim() : "";
      stable = shown !== "" && shown === previous ? stable + 1 : 0;
      previous = shown;
      if (stable >= SCREEN_STABLE_SAMPLES) return { ok: true };
      const delay = stable > 0 ? SCREEN_SAMPLE_INTERVAL_MS : delays.next(Date.now());
      if (delay === undefined || Date.now() + delay > deadline) break;
      await sleep(delay);
    }
    return {
      ok: false,
      code: "shell_not_ready",
      message: `The shell in zellij pane ${target.paneId} did not become ready within ${formatWait(options.timeoutMs)}.`,
    };
  }

  async run(location: MuxLocation, commandLine: string): Promise<MuxResult<object>> {
    const target = this.#target(location);
    if (!target.ok) return target;
    if (hasControlCharacter(commandLine)) {
      return {
        ok: false,
        code: "invalid_command_line",
        message: "The command line contains a control character (such as a newline) and was not typed.",
      };
    }
    // An unknown pane id is no error to zellij: make sure it is the recorded one first.
    const pane = await this.#findPane(target);
    if (!pane.ok) return pane;
    if (pane.pane === undefined) return paneNotFound(target.paneId);
    const typed = await this.#client.call(target.sessionName, target.socketDir, [
      "write-chars",
      "--pane-id",
      target.paneId,
      "--",
      commandLine,
    ]);
    if (!typed.ok) return typed;
    const entered = await this.#client.call(target.sessionName, target.socketDir, [
      "write",
      "--pane-id",
      target.paneId,
      "13",
    ]);
    return entered.ok ? { ok: true } : entered;
  }

  /** Every process under a zellij server (zellij names no pane's process); callers pick theirs by marker and cwd. */
  async probe(location: MuxLocation): Promise<MuxResult<{ processes: DescribedProcess[] }>> {
    const target = this.#target(location);
    if (!target.ok) return target;
    const facts = processFacts();
    const servers = await facts.findByName("zellij");
    if (servers.problem !== undefined && servers.processes.length === 0) {
      return { ok: false, code: "probe_failed", message: `Could not list zellij's processes: ${servers.problem}.` };
    }
    const pids = new Set<number>();
    for (const server of servers.processes) for (const pid of await facts.descendants(server.pid)) pids.add(pid);
    return { ok: true, processes: await describePaneProcesses([...pids]) };
  }

  async focus(location: MuxLocation): Promise<MuxResult<object>> {
    const target = this.#target(location);
    if (!target.ok) return target;
    const pane = await this.#findPane(target);
    if (!pane.ok) return pane;
    if (pane.pane === undefined) return paneNotFound(target.paneId);
    const moved = await this.#client.call(target.sessionName, target.socketDir, ["go-to-tab-by-id", target.tabId]);
    return moved.ok ? { ok: true } : moved;
  }

  async exists(location: MuxLocation): Promise<boolean> {
    return (await this.workspaceState(location)).code === "open";
  }

  async workspaceState(location: MuxLocation, owner?: WorkspaceOwner): Promise<WorkspaceState> {
    const target = this.#target(location);
    if (!target.ok) return { code: "unknown", message: target.message };
    const pane = await this.#findPane(target);
    if (!pane.ok)
      return pane.code === "session_not_found" ? { code: "closed" } : { code: "unknown", message: pane.message };
    if (pane.pane === undefined) return { code: "closed" };
    // Ids restart with a session: a pane under the recorded ids elsewhere is someone else's.
    if (owner !== undefined && !pane.pane.exited && !isInside(pane.pane.pane_cwd, owner.worktreePath))
      return { code: "closed" };
    return { code: "open" };
  }

  /** Closes the tab only while its recorded pane is still there and in the worktree. */
  async #closeHandoffTab(location: ZellijLocation, worktreePath: string): Promise<MuxResult<{ closed: boolean }>> {
    const target = this.#target(location);
    if (!target.ok) return { ok: true, closed: false };
    const pane = await this.#findPane(target);
    if (!pane.ok) return pane.code === "session_not_found" ? { ok: true, closed: false } : pane;
    if (pane.pane === undefined || !isInside(pane.pane.pane_cwd, worktreePath)) return { ok: true, closed: false };
    const closed = await this.#client.call(target.sessionName, target.socketDir, ["close-tab-by-id", target.tabId]);
    if (!closed.ok) return closed;
    return { ok: true, closed: true };
  }

  /** A tab (unfocused) whose pane runs `command` and then the user's shell, so it goes on as that shell. */
  async #newTab(
    sessionName: string,
    socketDir: string | undefined,
    cwd: string,
    label: string,
    command?: readonly string[],
  ): Promise<OpenedWindow> {
    const started = command !== undefined && command.length > 0;
    const shell = this.#env.SHELL !== undefined && this.#env.SHELL !== "" ? this.#env.SHELL : "/bin/sh";
    const name = muxLabel(label);
    // The panes there before: a tab id can be a closed tab's again, a pane id never is (within a session).
    const before = await this.#client.panes(sessionName, socketDir);
    if (!before.ok) return before;
    // Terminal and plugin panes are numbered apart: only terminal ids are compared.
    const known = new Set(before.panes.filter((pane) => pane.is_plugin !== true).map((pane) => pane.id));
    const created = await this.#client.call(sessionName, socketDir, [
      "new-tab",
      "--name",
      name,
      "--cwd",
      cwd,
      "--no-focus",
      ...(started ? ["--", ...command, shell] : []),
    ]);
    if (!created.ok) return created;
    // zellij prints the new tab's id; on a loaded machine its answer can come back empty while the
    // tab is made all the same, so the tab is found by its new pane: named so, in the worktree.
    const printed = created.stdout.trim();
    const deadline = Date.now() + NEW_TAB_SETTLE_MS;
    for (;;) {
      const listed = await this.#client.panes(sessionName, socketDir);
      if (!listed.ok) return listed;
      const pane = listed.panes.find(
        (candidate) =>
          candidate.is_plugin !== true &&
          !known.has(candidate.id) &&
          (/^\d+$/.test(printed)
            ? String(candidate.tab_id) === printed
            : candidate.tab_name === name && isInside(candidate.pane_cwd, cwd)),
      );
      if (pane !== undefined) {
        return {
          ok: true,
          location: {
            kind: "zellij",
            ...(socketDir === undefined ? {} : { socketDir }),
            sessionName,
            tabId: String(pane.tab_id),
            paneId: terminalPaneId(pane.id),
          },
          commandStarted: started,
        };
      }
      if (Date.now() >= deadline) break;
      await sleep(NEW_TAB_POLL_MS);
    }
    return {
      ok: false,
      code: "window_create_failed",
      message:
        printed === ""
          ? `zellij made no tab named ${name} in ${cwd} that it lists.`
          : `zellij lists no terminal pane in its new tab ${printed}.`,
    };
  }

  #target(location: MuxLocation): ({ ok: true } & PaneTarget) | MuxFailure {
    const zellijLocation = asZellijLocation(location);
    if (!zellijLocation.ok) return zellijLocation;
    const { sessionName = this.sessionName, tabId, paneId } = zellijLocation.location;
    if (tabId === undefined || paneId === undefined)
      return invalidLocation("The zellij location has no tab or pane id.");
    const socketDir =
      zellijLocation.location.sessionName === undefined ? this.socketDir : zellijLocation.location.socketDir;
    return { ok: true, sessionName, socketDir, tabId, paneId };
  }

  /** The recorded pane, when zellij still lists it in the recorded tab. */
  async #findPane(target: PaneTarget): Promise<{ ok: true; pane: ZellijPane | undefined } | MuxFailure> {
    const listed = await this.#client.panes(target.sessionName, target.socketDir);
    if (!listed.ok) return listed;
    const pane = listed.panes.find(
      (candidate) =>
        candidate.is_plugin !== true &&
        terminalPaneId(candidate.id) === target.paneId &&
        String(candidate.tab_id) === target.tabId,
    );
    return { ok: true, pane };
  }
}

function asZellijLocation(location: MuxLocation): { ok: true; location: ZellijLocation } | MuxFailure {
  if (location.kind !== "zellij")
    return invalidLocation(`A ${location.kind} location was given to the zellij backend.`);
  return { ok: true, location };
}

/** zellij's own spelling of a terminal pane's id, as `--pane-id` takes it. */
function terminalPaneId(id: number): string {
  return `terminal_${id}`;
}

function invalidLocation(message: string): MuxFailure {
  return { ok: false, code: "invalid_location", message };
}

function paneNotFound(paneId: string): MuxFailure {
  return { ok: false, code: "pane_not_found", message: `zellij pane ${paneId} no longer exists.` };
}
