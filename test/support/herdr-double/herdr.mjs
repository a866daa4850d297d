#!/usr/bin/env node
/**
 * A test double of the `herdr` CLI (shared/reference/herdr-cli.md), plain JavaScript for any Node >= 20.
 *
 * What it is: every call is one short-lived process, as with the real client. The "server" is a
 * directory next to the socket path (a marker file at the socket path means "running"), holding a
 * JSON state file that every call reads and writes under a lock (proper-lockfile), and a private
 * tmux server whose panes are the Herdr panes: real PTYs, real bash, real processes.
 *
 * Invariants (the contract, followed to the letter):
 * - Success: exactly one compact JSON line on stdout, keys sorted recursively, optional fields
 *   omitted (never null), exit 0. API errors: `{"error":{code,message},"id"}` on stderr, exit 1.
 *   Usage errors: plain text on stderr, exit 2. Fire-and-forget commands print nothing.
 * - `--json` is a hidden no-op on `worktree` commands and an unknown option on `pane`/`workspace`.
 * - Ids use the alphabet 123456789ABCDEFGHJKMNPQRSTVWXYZ0 (bijective base 32), never reused; with
 *   `--legacy-ids 1` they are minted as Herdr up to 0.6.10 did: workspace `w<hex micros><hex
 *   counter>`, tab `<workspace>:<n>`, pane `<workspace>-<n>` (v0.6.9 src/workspace.rs, src/app/ids.rs).
 * - `shell_pid` is reported from the pane's spawn on, and the foreground group is the shell's own
 *   from the first instant (Herdr spawns the shell itself; src/pane.rs, src/platform/linux.rs).
 * - A moved pane (`pane move <id> --new-workspace`) gets new ids; the old pane id stays an alias
 *   that every pane command resolves (src/app/ids.rs `public_pane_id_aliases`).
 * - `worktree list`/`open` name the first workspace, in workspace order, whose membership checkout
 *   or whose root pane's cwd is the checkout: the repository's own workspace when its root pane
 *   sits there (Herdr #4293, src/app/api/worktrees.rs).
 * - `--trust-repository` (0.9) is accepted by `worktree list|create|open|remove`; with
 *   `--require-trust 1` each of them fails without it with git's "dubious ownership" text.
 * - `--help`/`-h` counts only directly after the subcommand (src/cli/spec.rs `write_requested_help`);
 *   later it is an unknown option of the subcommand (exit 2).
 * - `pane report-agent-session` records the session of an official source (`herdr:pi`/`pi`) and
 *   `pane get` shows it as `agent_session` until that Pi leaves the pane's foreground (or a server
 *   restart finds it running and resumes it); while a process named `pi` holds the pane's foreground,
 *   `agent_status` is the state Pi's source last reported with `pane report-agent` (one sequence
 *   with the session reports: a smaller or equal `--seq` is dropped, and so is an unsequenced one
 *   after a sequenced one, src/terminal/state.rs `accept_hook_report`; a sequenced one sent before
 *   the Pi is seen waits for it), else `working` when the screen shows
 *   "Working...", else `idle`; otherwise `unknown` (src/agent_resume.rs, src/detect/manifests/pi.toml).
 * - Pane processes get HERDR_ENV=1, HERDR_PANE_ID, HERDR_TAB_ID, HERDR_WORKSPACE_ID,
 *   HERDR_SOCKET_PATH, HERDR_BIN_PATH, and never TMUX/TMUX_PANE (the private tmux is invisible).
 * - A workspace made without `--label` is labelled as Herdr derives it from its root pane's cwd,
 *   again as that cwd changes: the git checkout's top-level directory name, else the directory's.
 * - `worktree create` runs the real `git worktree add`; an existing local branch is checked out
 *   and `--base` is ignored; the default path is `<~/.herdr/worktrees>/<repo>/<slug(branch)>`.
 * - Every tmux and git call carries a timeout; nothing is ever run through a shell string.
 *
 * Test hooks (not part of Herdr): `herdr __double start|stop`, `herdr __double restart [--blind-ms N]`
 * (a server restart: every pane's processes end; a pane with a reported Pi session answers
 * pane_not_found from process-info for N ms (default 750), then gets its shell and a bare
 * `pi --session <path>` written at once, as src/app/agent_resume.rs does; others get their shell
 * at once), a call log (`calls.jsonl`, one JSON
 * line per call: argv, time, pid), and faults from `$HERDR_DOUBLE_FAULTS` or `<server dir>/faults.json`:
 * `{"<group> <command>"|"*": {"error": code, "message"?, "inband"?} | {"hang": true|"after"} |
 *  {"malformed": true} | {"garbage": text} | {"partial": true} | {"usage": text} | {"delayMs": n} |
 *  {"late": ms}, "skip"?: n, "times"?: n}`. `garbage` prints `text` on stdout with exit 0 (after
 * doing the call, or instead of it with `"instead": true`: a broken client that did nothing); `late` on
 * `worktree create` never answers, and the "server" finishes the create `ms` later anyway
 * (src/app/api/worktrees/deferred.rs); until then another create of that checkout path answers
 * `worktree_operation_in_progress`.
 * `error: "worktree_open_failed"` on `worktree create` creates the checkout but no workspace;
 * `partial` does everything and then answers worktree_open_failed; `hang: "after"` does everything
 * and then never answers; `inband: true` prints the error envelope on stdout.
 */
import { execFileSync, spawn } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import lockfile from "proper-lockfile";
import { paneShellRc, paneShellVars } from "../pane-shell-rc.mjs";

const DOUBLE_DIR = dirname(fileURLToPath(import.meta.url));
const BIN_PATH = join(DOUBLE_DIR, "herdr");
const ID_ALPHABET = "123456789ABCDEFGHJKMNPQRSTVWXYZ0";
const STATE_FILE = "herdr-double-state.json";
const CALL_LOG = "calls.jsonl";
const FAULTS_FILE = "faults.json";
const PANE_RC = "double-pane-rc.sh";
const TMUX_SOCKET = "double-tmux.sock";
const TMUX_TIMEOUT_MS = 10_000;
const GIT_TIMEOUT_MS = 120_000;
const DEFAULT_VERSION = "0.9.2";
const DEFAULT_RESTART_BLIND_MS = 750;
const SCRIPT_PATH = fileURLToPath(import.meta.url);
const PANE_WIDTH = "200";
const PANE_HEIGHT = "50";
const ADJECTIVES = ["brisk", "calm", "eager", "gentle", "lucky", "quiet", "steady", "swift"];
const NOUNS = ["badger", "heron", "lynx", "otter", "puffin", "raven", "walrus", "yak"];

// ---------------------------------------------------------------------------------------------
// Outcomes

class UsageError extends Error {}
/** A client-side failure Herdr prints as plain `Error: ...` text with exit 1 (a bad option value). */
class ClientError extends Error {}

class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** Sorted keys at every level, `undefined` dropped; the double never emits null. */
function sortKeysDeep(value) {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (value !== null && typeof value === "object") {
    const sorted = {};
    for (const key of Object.keys(value).sort()) {
      if (value[key] !== undefined) sorted[key] = sortKeysDeep(value[key]);
    }
    return sorted;
  }
  return value;
}

function json(value) {
  return JSON.stringify(sortKeysDeep(value));
}

function writeOut(text) {
  process.stdout.write(text);
}

function writeErr(text) {
  process.stderr.write(text);
}

// ---------------------------------------------------------------------------------------------
// Ids

/** A new workspace id, in the current or (`state.legacyIds`) the pre-0.7 form. */
function mintWorkspaceId(state) {
  const counter = state.nextWorkspace++;
  if (!state.legacyIds) return `w${encodeId(counter)}`;
  const micros = BigInt(Date.now()) * 1000n + BigInt(Math.floor(Math.random() * 1000));
  return `w${micros.toString(16)}${counter.toString(16)}`;
}

function mintTabId(state, ws) {
  const n = ws.nextTab++;
  return state.legacyIds ? `${ws.id}:${n}` : `${ws.id}:t${encodeId(n)}`;
}

function mintPaneId(state, ws) {
  const n = ws.nextPane++;
  return state.legacyIds ? `${ws.id}-${n}` : `${ws.id}:p${encodeId(n)}`;
}

/** The number of a current-form workspace id (`w11` -> 33), or undefined (a legacy hex id). */
function decodeWorkspaceNumber(id) {
  const digits = /^w([1-9A-HJKMNP-TV-Z0]+)$/.exec(id)?.[1];
  if (digits === undefined) return undefined;
  let n = 0;
  for (const digit of digits) n = n * 32 + ID_ALPHABET.indexOf(digit) + 1;
  return n;
}

/** Bijective base 32 over ID_ALPHABET: 1 -> "1", 32 -> "0", 33 -> "11". */
function encodeId(n) {
  let digits = "";
  let rest = n;
  while (rest > 0) {
    rest -= 1;
    digits = ID_ALPHABET[rest % 32] + digits;
    rest = Math.floor(rest / 32);
  }
  return digits;
}

// ---------------------------------------------------------------------------------------------
// Where the server lives

function configHome(env) {
  const home = env.HOME && env.HOME.length > 0 ? env.HOME : homedir();
  return env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.length > 0 ? env.XDG_CONFIG_HOME : join(home, ".config");
}

/** `--session` flag, then HERDR_SOCKET_PATH, then HERDR_SESSION, then the default socket. */
function resolveSocketPath(env, sessionFlag) {
  if (sessionFlag !== undefined) return join(configHome(env), "herdr", "sessions", sessionFlag, "herdr.sock");
  if (env.HERDR_SOCKET_PATH) return resolve(env.HERDR_SOCKET_PATH);
  if (env.HERDR_SESSION) return join(configHome(env), "herdr", "sessions", env.HERDR_SESSION, "herdr.sock");
  return join(configHome(env), "herdr", "herdr.sock");
}

function serverPaths(socketPath) {
  const dir = dirname(socketPath);
  return {
    socketPath,
    dir,
    statePath: join(dir, STATE_FILE),
    callLog: join(dir, CALL_LOG),
    faultsPath: join(dir, FAULTS_FILE),
    paneRc: join(dir, PANE_RC),
    tmuxSocket: join(dir, TMUX_SOCKET),
  };
}

function serverNotRunning(paths) {
  // The real client words it so and writes this envelope id first (src/cli.rs), unlike the others.
  return Object.assign(
    new ApiError(
      "server_not_running",
      `no herdr server is running at ${paths.socketPath}; run \`herdr\` to start or attach it`,
    ),
    { idFirst: true },
  );
}

function requireServer(paths) {
  if (!existsSync(paths.socketPath) || !existsSync(paths.statePath)) throw serverNotRunning(paths);
}

function logCall(paths, argv) {
  if (!existsSync(paths.dir)) return;
  try {
    appendFileSync(paths.callLog, JSON.stringify({ argv, at: new Date().toISOString(), pid: process.pid }) + "\n");
  } catch {
    // The log is a test aid; a call never fails because of it.
  }
}

// ---------------------------------------------------------------------------------------------
// State (read-modify-write under a lock, written atomically)

function readState(paths) {
  return JSON.parse(readFileSync(paths.statePath, "utf8"));
}

function writeState(paths, state) {
  const temp = `${paths.statePath}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(state, null, 2) + "\n");
  renameSync(temp, paths.statePath);
}

async function withState(paths, fn) {
  const release = await lockfile.lock(paths.statePath, {
    realpath: false,
    stale: 10_000,
    retries: { retries: 400, minTimeout: 5, maxTimeout: 50 },
  });
  try {
    const state = readState(paths);
    pruneClosedPanes(paths, state);
    observeAgentExits(state);
    try {
      return await fn(state);
    } finally {
      // Also after an error: fault counters, and anything made before the error, stay recorded.
      writeState(paths, state);
    }
  } finally {
    await release();
  }
}

// ---------------------------------------------------------------------------------------------
// Faults

function loadFaults(paths) {
  const file = process.env.HERDR_DOUBLE_FAULTS || paths.faultsPath;
  if (!existsSync(file)) return { faults: {}, version: "" };
  // Uses are counted per version of the faults file, so a new set of faults starts from zero.
  return { faults: JSON.parse(readFileSync(file, "utf8")), version: String(statSync(file).mtimeMs) };
}

/** The fault for this call, counting uses in the state so `skip`/`times` hold across processes. */
function takeFault(paths, state, key) {
  const { faults, version } = loadFaults(paths);
  const name = faults[key] !== undefined ? key : faults["*"] !== undefined ? "*" : undefined;
  if (name === undefined) return undefined;
  const fault = faults[name];
  state.faultUses ??= {};
  const counter = `${name}@${version}`;
  const used = (state.faultUses[counter] ?? 0) + 1;
  state.faultUses[counter] = used;
  const skip = fault.skip ?? 0;
  if (used <= skip) return undefined;
  if (fault.times !== undefined && used > skip + fault.times) return undefined;
  return fault;
}

function hangForever() {
  // Until the caller's timeout kills this process (SIGTERM ends Node by default).
  return new Promise(() => setInterval(() => {}, 60_000));
}

function sleep(ms) {
  return new Promise((done) => setTimeout(done, ms));
}

// ---------------------------------------------------------------------------------------------
// tmux, git and procfs

function tmux(paths, state, args) {
  return execFileSync("tmux", ["-S", paths.tmuxSocket, ...args], {
    env: state.serverEnv,
    encoding: "utf8",
    timeout: TMUX_TIMEOUT_MS,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Live tmux panes: tmux pane id -> {pid, path, tty}. Empty when the tmux server is gone. */
function livePanes(paths, state) {
  let out;
  try {
    out = tmux(paths, state, ["list-panes", "-a", "-F", "#{pane_id}\t#{pane_pid}\t#{pane_tty}\t#{pane_current_path}"]);
  } catch {
    return new Map();
  }
  const panes = new Map();
  for (const line of out.split("\n")) {
    if (line === "") continue;
    const [id, pid, tty, ...path] = line.split("\t");
    panes.set(id, { pid: Number(pid), tty, path: path.join("\t") });
  }
  return panes;
}

/** A pane whose process exited is gone, as in Herdr; a tab/workspace without panes closes. */
function pruneClosedPanes(paths, state) {
  const live = livePanes(paths, state);
  // Not part of the persisted state: a snapshot of tmux for this call only.
  Object.defineProperty(state, "live", { value: live, enumerable: false, writable: true, configurable: true });
  for (const [paneId, pane] of Object.entries(state.panes)) {
    if (!live.has(pane.tmuxPaneId)) delete state.panes[paneId];
  }
  for (const ws of state.workspaces) {
    for (const tab of ws.tabs) tab.paneIds = tab.paneIds.filter((id) => state.panes[id] !== undefined);
    ws.tabs = ws.tabs.filter((tab) => tab.paneIds.length > 0);
    if (!ws.tabs.some((tab) => tab.id === ws.activeTabId)) ws.activeTabId = ws.tabs[0]?.id;
  }
  state.workspaces = state.workspaces.filter((ws) => ws.tabs.length > 0);
  if (!state.workspaces.some((ws) => ws.id === state.focusedWorkspaceId)) {
    state.focusedWorkspaceId = state.workspaces[0]?.id;
  }
}

/**
 * git as the server runs it. The worktree commands whose messages a client sees (`add`, `remove`)
 * run in the server's own environment and language, as Herdr runs them (src/worktree.rs); the
 * double's own queries are read in the C locale.
 */
function git(state, cwd, args, { asServer = false } = {}) {
  try {
    const stdout = execFileSync("git", args, {
      cwd,
      env: asServer ? state.serverEnv : { ...state.serverEnv, LC_ALL: "C" },
      encoding: "utf8",
      timeout: GIT_TIMEOUT_MS,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { ok: true, stdout };
  } catch (error) {
    const stderr = typeof error.stderr === "string" ? error.stderr : String(error.message);
    return { ok: false, stderr: stderr.trim() };
  }
}

function readProc(pid, file) {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
}

function readProcStat(pid) {
  const text = readProc(pid, "stat");
  if (text === undefined) return undefined;
  const close = text.lastIndexOf(")");
  const fields = text.slice(close + 2).split(" ");
  return {
    pid,
    comm: text.slice(text.indexOf("(") + 1, close),
    pgrp: Number(fields[2]),
    ttyNr: Number(fields[4]),
    tpgid: Number(fields[5]),
  };
}

function readProcCwd(pid) {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

function canonical(path) {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

// ---------------------------------------------------------------------------------------------
// Workspaces and panes

function findWorkspace(state, id) {
  return state.workspaces.find((ws) => ws.id === id);
}

function requireWorkspace(state, id) {
  const ws = findWorkspace(state, id);
  if (ws === undefined) throw new ApiError("workspace_not_found", `workspace ${id} not found`);
  return ws;
}

function requirePane(state, id) {
  // A moved pane's old id is an alias of its new one.
  const pane = state.panes[id] ?? state.panes[state.paneAliases?.[id]];
  if (pane === undefined) throw new ApiError("pane_not_found", `pane ${id} not found`);
  return pane;
}

function paneEnvironment(paths, state, ws, tabId, paneId) {
  const vars = {
    ...ws.env,
    HERDR_ENV: "1",
    HERDR_PANE_ID: paneId,
    HERDR_TAB_ID: tabId,
    HERDR_WORKSPACE_ID: ws.id,
    HERDR_SOCKET_PATH: paths.socketPath,
    HERDR_BIN_PATH: BIN_PATH,
  };
  if (state.sessionName !== undefined) vars.HERDR_SESSION = state.sessionName;
  Object.assign(vars, paneShellVars(state));
  return vars;
}

/** The pane's argv: no TMUX/TMUX_PANE, the Herdr variables, then an rc-less interactive bash. */
function paneCommand(paths, vars) {
  return [
    "env",
    "-u",
    "TMUX",
    "-u",
    "TMUX_PANE",
    ...Object.entries(vars).map(([key, value]) => `${key}=${value}`),
    "/bin/bash",
    "--noprofile",
    "--rcfile",
    paths.paneRc,
    "-i",
  ];
}

/** A new workspace with one tab and one pane whose shell starts in `cwd`. */
function openWorkspace(paths, state, { cwd, label, env = {}, focus, worktree }) {
  const ws = {
    id: mintWorkspaceId(state),
    label,
    cwd,
    env,
    tabs: [],
    activeTabId: undefined,
    nextTab: 1,
    nextPane: 1,
    worktree,
  };
  const tabId = mintTabId(state, ws);
  const paneId = mintPaneId(state, ws);
  const created = tmux(paths, state, [
    "new-session",
    "-d",
    "-s",
    ws.id,
    "-x",
    PANE_WIDTH,
    "-y",
    PANE_HEIGHT,
    "-c",
    cwd,
    "-P",
    "-F",
    "#{session_id} #{pane_id}",
    "--",
    ...paneCommand(paths, paneEnvironment(paths, state, ws, tabId, paneId)),
  ]).trim();
  const [sessionId, tmuxPaneId] = created.split(" ");
  ws.tmuxSessionId = sessionId;
  ws.tabs.push({ id: tabId, label: "1", paneIds: [paneId] });
  ws.activeTabId = tabId;
  state.panes[paneId] = {
    id: paneId,
    workspaceId: ws.id,
    tabId,
    tmuxPaneId,
    revision: 0,
    terminal: state.nextTerminal++,
  };
  state.workspaces.push(ws);
  state.live.set(tmuxPaneId, { pid: 0, tty: "", path: cwd });
  if (focus || state.focusedWorkspaceId === undefined) state.focusedWorkspaceId = ws.id;
  return ws;
}

function closeWorkspace(paths, state, ws) {
  // Its own panes only: a pane moved in or out (`pane move`) lives in another workspace's tmux
  // session, and a tmux session ends with its last pane.
  const targets = ws.tabs.flatMap((tab) =>
    tab.paneIds.map((id) => ["kill-pane", "-t", state.panes[id]?.tmuxPaneId ?? ""]),
  );
  for (const args of targets) {
    try {
      tmux(paths, state, args);
    } catch {
      // Already gone with its last pane.
    }
  }
  for (const tab of ws.tabs) for (const id of tab.paneIds) delete state.panes[id];
  state.workspaces = state.workspaces.filter((other) => other.id !== ws.id);
  if (state.focusedWorkspaceId === ws.id) state.focusedWorkspaceId = state.workspaces[0]?.id;
}

/**
 * The label of a workspace without one of its own, as Herdr derives it from its root pane's cwd,
 * again whenever that cwd changes: the name of the git checkout it is in (its top level), else of
 * the directory, `~` for the home directory (src/workspace.rs display_name_from_terminals,
 * src/workspace/git/discovery.rs derive_label_from_cwd). Remembered per cwd for this call.
 */
const automaticLabels = new Map();
function automaticLabel(state, ws) {
  const root = ws.tabs.find((tab) => tab.id === ws.activeTabId) ?? ws.tabs[0];
  const pane = root === undefined ? undefined : state.panes[root.paneIds[0]];
  const cwd = (pane !== undefined && state.live?.get(pane.tmuxPaneId)?.path) || ws.cwd;
  let label = automaticLabels.get(cwd);
  if (label === undefined) {
    const space = gitSpace(state, cwd);
    const home = state.serverEnv?.HOME;
    label =
      space !== undefined
        ? basename(space.topLevel)
        : home && canonical(cwd) === canonical(home)
          ? "~"
          : basename(cwd) || cwd;
    automaticLabels.set(cwd, label);
  }
  return label;
}

function workspaceInfo(state, ws) {
  const paneCount = ws.tabs.reduce((sum, tab) => sum + tab.paneIds.length, 0);
  return {
    workspace_id: ws.id,
    number: state.workspaces.indexOf(ws) + 1,
    label: ws.label ?? automaticLabel(state, ws),
    focused: state.focusedWorkspaceId === ws.id,
    pane_count: paneCount,
    tab_count: ws.tabs.length,
    active_tab_id: ws.activeTabId,
    agent_status: "unknown",
    worktree: ws.worktree,
  };
}

function tabInfo(state, ws, tab) {
  return {
    tab_id: tab.id,
    workspace_id: ws.id,
    number: ws.tabs.indexOf(tab) + 1,
    label: tab.label,
    focused: state.focusedWorkspaceId === ws.id && ws.activeTabId === tab.id,
    pane_count: tab.paneIds.length,
    agent_status: "unknown",
  };
}

/**
 * Herdr's Pi manifest (src/detect/manifests/pi.toml): `working` while the screen shows
 * "Working...", else `idle`. A worktree's fresh root pane (no tmux paths at hand) runs no Pi yet.
 */
function piAgentStatus(paths, state, pane) {
  if (paths === undefined) return "idle";
  try {
    return tmux(paths, state, ["capture-pane", "-p", "-t", pane.tmuxPaneId]).includes("Working...")
      ? "working"
      : "idle";
  } catch {
    return "idle";
  }
}

/** Herdr detects Pi by its process in the pane's foreground (src/detect/manifests/pi.toml). */
function detectsPi(state, pane) {
  return detectedPiPid(state, pane) !== undefined;
}

/** The pid of the Pi leading the pane's foreground, if a process named `pi` does. */
function detectedPiPid(state, pane) {
  const live = state.live.get(pane.tmuxPaneId);
  const shell = live !== undefined && live.pid > 0 ? readProcStat(live.pid) : undefined;
  return shell !== undefined && shell.tpgid > 0 && readProcStat(shell.tpgid)?.comm === "pi" ? shell.tpgid : undefined;
}

/**
 * How long Herdr still shows a Pi whose shell has the foreground back: its detection task first
 * publishes an idle "process exit" on its next tick, and clears the agent on the one after
 * (src/pane.rs `foreground_shell_agent_action`: ReportProcessExit, then ClearAgent; a tick is
 * TICK_IDENTIFIED, 300 ms).
 */
const AGENT_EXIT_LAG_MS = 600;

/**
 * Herdr's detection loop sees a Pi leave the pane's foreground, and the session it reported goes
 * with it: no `agent_session` after, nothing to resume on a restart, the source's report sequence
 * forgotten (src/terminal/state.rs `set_detected_state_with_screen_signals_at`, `process_exited`:
 * `hook_authority` and `persisted_agent_session` cleared, `hook_report_sequences` removed). Until
 * then (AGENT_EXIT_LAG_MS) the pane still shows the Pi, idle, on its session, though its shell holds
 * the foreground. The double looks before every call, by pid, so a Pi replaced between two calls
 * counts as gone too (at once: Herdr reports a replacement process). A report accepted before its
 * Pi was detected counts once it is.
 */
function observeAgentExits(state) {
  const now = Date.now();
  for (const pane of Object.values(state.panes)) {
    if (pane.pendingResume === true) continue;
    const pid = detectedPiPid(state, pane);
    if (pane.piPid !== undefined && pane.piPid !== pid) {
      pane.piGoneAt ??= now;
      if (pid === undefined && now - pane.piGoneAt < AGENT_EXIT_LAG_MS) continue;
      delete pane.agentSession;
      delete pane.reportSeq;
      delete pane.hookState;
      delete pane.pendingHookState;
      delete pane.piGoneAt;
    }
    if (pid === undefined) delete pane.piPid;
    else {
      pane.piPid = pid;
      if (pane.pendingAgentSession !== undefined) {
        pane.agentSession = pane.pendingAgentSession;
        delete pane.pendingAgentSession;
      }
    }
  }
}

/** The session starts Herdr recognises on a sequenced report (src/terminal/state.rs). */
const RECOGNISED_SESSION_STARTS = new Set(["startup", "clear", "resume", "compact", "new", "fork", "select"]);

/**
 * `pane report-agent-session` for the official Pi source, as src/terminal/state.rs
 * `set_agent_session_ref_for_session_start` decides it: while Pi runs in the pane and a session of
 * that source is kept, a newer report replaces it (an unsequenced one only if none was sequenced);
 * otherwise a report needs a sequence number above the last one and a recognised session start,
 * else it is dropped without a word (exit 0 all the same). An accepted report for a pane where no Pi
 * is detected yet waits, and counts once Pi is detected.
 */
function reportAgentSession(state, pane, params) {
  if (params.source !== "herdr:pi" || params.agent !== "pi") return;
  if (params.path === undefined || !isAbsolute(params.path)) return;
  const ref = { source: params.source, agent: params.agent, kind: "path", value: params.path };
  const detected = detectsPi(state, pane);
  const anchored = pane.agentSession?.source === params.source;
  const seq = params.seq === undefined ? undefined : Number(params.seq);
  if (detected && anchored) {
    // A session Herdr already keeps for the Pi running there: any newer report replaces it.
    if (seq === undefined ? pane.reportSeq !== undefined : pane.reportSeq !== undefined && seq <= pane.reportSeq)
      return;
    if (seq !== undefined) pane.reportSeq = seq;
    pane.agentSession = ref;
    return;
  }
  // Otherwise only a sequenced report of a session start Herdr knows counts.
  if (seq === undefined || !RECOGNISED_SESSION_STARTS.has(params.startSource)) return;
  if (pane.reportSeq !== undefined && seq <= pane.reportSeq) return;
  pane.reportSeq = seq;
  if (detected) {
    pane.agentSession = ref;
    delete pane.pendingAgentSession;
  } else pane.pendingAgentSession = ref;
}

function paneInfo(state, pane, paths) {
  const ws = findWorkspace(state, pane.workspaceId);
  const tab = ws?.tabs.find((t) => t.id === pane.tabId);
  const live = state.live.get(pane.tmuxPaneId);
  const shell = live !== undefined && live.pid > 0 ? readProcStat(live.pid) : undefined;
  const foregroundCwd = shell !== undefined && shell.tpgid > 0 ? readProcCwd(shell.tpgid) : undefined;
  // A Pi that has just left is still shown for a moment (observeAgentExits), idle.
  const lingering = pane.piGoneAt !== undefined;
  const piDetected = !lingering && detectsPi(state, pane);
  if (piDetected && pane.pendingAgentSession !== undefined) {
    pane.agentSession = pane.pendingAgentSession;
    delete pane.pendingAgentSession;
  }
  if (piDetected && pane.pendingHookState !== undefined) {
    pane.hookState = pane.pendingHookState;
    delete pane.pendingHookState;
  }
  return {
    pane_id: pane.id,
    terminal_id: `term_${pane.terminal}`,
    workspace_id: pane.workspaceId,
    tab_id: pane.tabId,
    focused:
      state.focusedWorkspaceId === pane.workspaceId && ws?.activeTabId === pane.tabId && tab?.paneIds[0] === pane.id,
    cwd: live?.path || undefined,
    foreground_cwd: foregroundCwd,
    agent_status: piDetected ? (pane.hookState ?? piAgentStatus(paths, state, pane)) : lingering ? "idle" : "unknown",
    agent: piDetected || lingering ? "pi" : undefined,
    agent_session: pane.agentSession,
    revision: pane.revision,
  };
}

function rootPane(state, ws) {
  const tab = ws.tabs.find((t) => t.id === ws.activeTabId) ?? ws.tabs[0];
  return { tab, pane: state.panes[tab.paneIds[0]] };
}

/** Process facts read from /proc, as Herdr reads them for `pane process-info`. */
function processInfo(state, pane) {
  // After a restart a pane awaiting its agent's resume has no terminal yet: Herdr cannot find it.
  if (pane.pendingResume === true) throw new ApiError("pane_not_found", `pane ${pane.id} not found`);
  const live = state.live.get(pane.tmuxPaneId);
  const info = { pane_id: pane.id };
  if (live === undefined || !(live.pid > 0)) return info;
  const shell = readProcStat(live.pid);
  if (shell === undefined) return info;
  // Herdr never emits `tty` (errata). The shell pid exists from spawn (the `env` wrapper execs the
  // shell in place), and before the pty has a foreground group the shell's own is it.
  info.shell_pid = shell.pid;
  info.foreground_process_group_id = shell.tpgid > 0 ? shell.tpgid : shell.pid;
  const processes = [];
  if (shell.tpgid > 0) {
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      const stat = readProcStat(Number(name));
      if (stat === undefined || stat.pgrp !== shell.tpgid || stat.ttyNr !== shell.ttyNr) continue;
      const argv = (readProc(stat.pid, "cmdline") ?? "")
        .split("\0")
        .filter((part, i, all) => part !== "" || i < all.length - 1);
      processes.push({
        pid: stat.pid,
        name: (readProc(stat.pid, "comm") ?? stat.comm).trim(),
        argv0: argv[0] || undefined,
        argv: argv.length > 0 ? argv : undefined,
        cmdline: argv.length > 0 ? argv.join(" ") : undefined,
        cwd: readProcCwd(stat.pid),
      });
    }
  }
  if (processes.length > 0) info.foreground_processes = processes.sort((a, b) => a.pid - b.pid);
  return info;
}

// ---------------------------------------------------------------------------------------------
// Git facts for worktree commands

/** The git space of `path`: top level, main checkout, common dir, whether it is a linked worktree. */
function gitSpace(state, path) {
  if (!existsSync(path)) return undefined;
  // One process per call: a call asks each directory once.
  if (!gitSpaces.has(path)) gitSpaces.set(path, readGitSpace(state, path));
  return gitSpaces.get(path);
}
const gitSpaces = new Map();

function readGitSpace(state, path) {
  const shown = git(state, path, [
    "rev-parse",
    "--path-format=absolute",
    "--show-toplevel",
    "--git-common-dir",
    "--git-dir",
  ]);
  if (!shown.ok) return undefined;
  const [topLevel, commonDir, gitDir] = shown.stdout.trim().split("\n");
  if (!topLevel || !commonDir || !gitDir) return undefined;
  const isLinked = canonical(gitDir) !== canonical(commonDir);
  const repoRoot = isLinked ? dirname(canonical(commonDir)) : canonical(topLevel);
  return {
    topLevel: canonical(topLevel),
    repoRoot,
    repoKey: canonical(commonDir),
    repoName: basename(repoRoot),
    isLinked,
  };
}

function listWorktrees(state, repoRoot) {
  const listed = git(state, repoRoot, ["worktree", "list", "--porcelain"]);
  if (!listed.ok) throw new ApiError("worktree_list_failed", listed.stderr);
  const entries = [];
  let current;
  for (const line of listed.stdout.split("\n")) {
    if (line.startsWith("worktree ")) {
      current = { path: line.slice("worktree ".length), isBare: false, isDetached: false, isPrunable: false };
      entries.push(current);
    } else if (current !== undefined) {
      if (line.startsWith("branch refs/heads/")) current.branch = line.slice("branch refs/heads/".length);
      else if (line === "bare") current.isBare = true;
      else if (line === "detached") current.isDetached = true;
      else if (line.startsWith("prunable")) current.isPrunable = true;
    }
  }
  return entries;
}

/**
 * The workspace Herdr names for a checkout (and `worktree open` takes over): the first, in workspace
 * order, whose membership is that checkout, whose git space is that checkout (a workspace opened in
 * or under it, or without a space of its own and its root pane there now), or whose root pane's cwd
 * is that checkout (src/app/api/worktrees.rs `open_workspace_idx_for_checkout`). The last is Herdr
 * #4293: a repository's own workspace whose shell was `cd`ed into a worktree is named for it.
 */
function workspaceForCheckout(state, path) {
  const wanted = canonical(path);
  return state.workspaces.find((ws) => {
    if (ws.worktree !== undefined && canonical(ws.worktree.checkout_path) === wanted) return true;
    const cwd = rootCwd(state, ws);
    // The workspace's git space: the one it was opened in, else the one its root pane is in now;
    // a checkout is named for the workspace whose space is that checkout (a subdirectory too).
    const space = gitSpace(state, ws.cwd) ?? (cwd ? gitSpace(state, cwd) : undefined);
    if (space !== undefined && space.topLevel === wanted) return true;
    return cwd !== undefined && cwd !== "" && canonical(cwd) === wanted;
  });
}

function rootCwd(state, ws) {
  const root = rootPane(state, ws).pane;
  return root !== undefined ? state.live.get(root.tmuxPaneId)?.path : undefined;
}

function worktreeInfo(state, space, entry) {
  return {
    path: entry.path,
    branch: entry.branch,
    is_bare: entry.isBare,
    is_detached: entry.isDetached,
    is_prunable: entry.isPrunable,
    is_linked_worktree: canonical(entry.path) !== space.repoRoot,
    open_workspace_id: workspaceForCheckout(state, entry.path)?.id,
    label: space.repoName,
  };
}

function membership(space, checkoutPath, isLinked) {
  return {
    repo_key: space.repoKey,
    repo_name: space.repoName,
    repo_root: space.repoRoot,
    checkout_path: checkoutPath,
    is_linked_worktree: isLinked,
  };
}

/** Source for create/open: a workspace or a cwd; never a linked worktree. */
function resolveSource(state, { workspaceId, cwd }, { allowLinked }) {
  let path = cwd;
  if (workspaceId !== undefined) {
    const ws = requireWorkspace(state, workspaceId);
    path = ws.worktree?.checkout_path ?? ws.cwd;
  } else if (path === undefined) {
    const focused = findWorkspace(state, state.focusedWorkspaceId);
    if (focused === undefined)
      throw new ApiError("invalid_request", "workspace_id or cwd is required when no workspace is active");
    path = focused.worktree?.checkout_path ?? focused.cwd;
  }
  const space = gitSpace(state, path);
  if (space === undefined) {
    throw new ApiError("not_git_worktree", "Herdr worktree actions require a path inside a Git work tree");
  }
  if (space.isLinked && !allowLinked) {
    throw new ApiError("linked_worktree_source", "New and open worktree actions start from the repo parent workspace.");
  }
  return space;
}

/** Herdr's slug: lowercase ASCII alphanumerics, each run of anything else one `-`. */
function slug(value) {
  return value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

function generatedBranch() {
  const pick = (list) => list[Math.floor(Math.random() * list.length)];
  const hex = Math.floor(Math.random() * 0x10000)
    .toString(16)
    .padStart(4, "0");
  return `worktree/${pick(ADJECTIVES)}-${pick(NOUNS)}-${hex}`;
}

/** The first create for a repository Herdr has not seen opens its parent workspace, unreported. */
function ensureParentWorkspace(paths, state, space) {
  const parent = state.workspaces.find(
    (ws) =>
      (ws.worktree !== undefined && ws.worktree.repo_key === space.repoKey && !ws.worktree.is_linked_worktree) ||
      canonical(ws.cwd) === space.repoRoot,
  );
  if (parent !== undefined) {
    parent.worktree ??= membership(space, space.repoRoot, false);
    return;
  }
  openWorkspace(paths, state, {
    cwd: space.repoRoot,
    focus: false,
    worktree: membership(space, space.repoRoot, false),
  });
}

function createdResponse(state, ws, worktree) {
  const { tab, pane } = rootPane(state, ws);
  return {
    workspace: workspaceInfo(state, ws),
    tab: tabInfo(state, ws, tab),
    root_pane: paneInfo(state, pane),
    worktree,
  };
}

// ---------------------------------------------------------------------------------------------
// Argument parsing helpers (mirroring the real client's hand-written parsers)

function valueOf(args, index) {
  const value = args[index + 1];
  if (value === undefined) throw new UsageError(`missing value for ${args[index]}`);
  return value;
}

/** `--cwd`/`--path` are made absolute by the client, `~` expanded. */
function absolutePath(value) {
  const home = process.env.HOME || homedir();
  const expanded = value === "~" ? home : value.startsWith("~/") ? join(home, value.slice(2)) : value;
  return isAbsolute(expanded) ? expanded : resolve(process.cwd(), expanded);
}

function supportsTrustFlag(version) {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return major > 0 || minor >= 9;
}

const WORKTREE_CREATE_USAGE =
  "usage: herdr worktree create [--workspace ID | --cwd PATH] [--branch NAME] [--base REF] [--path PATH] [--label TEXT] [--focus] [--no-focus]";
const WORKTREE_OPEN_USAGE =
  "usage: herdr worktree open [--workspace ID | --cwd PATH] (--path PATH | --branch NAME) [--label TEXT] [--focus] [--no-focus]";

/** Each worktree subcommand's options, as its clap help lists them (src/cli/spec.rs `worktree_command`). */
const WORKTREE_HELP = {
  list: ["List worktree workspaces", ["--workspace <ID>", "--cwd <PATH>"]],
  create: [
    "Create and open a Git worktree",
    [
      "--workspace <ID>",
      "--cwd <PATH>",
      "--branch <NAME>",
      "--base <REF>",
      "--path <PATH>",
      "--label <TEXT>",
      "--focus",
      "--no-focus",
    ],
  ],
  open: [
    "Open an existing Git worktree",
    ["--workspace <ID>", "--cwd <PATH>", "--path <PATH>", "--branch <NAME>", "--label <TEXT>", "--focus", "--no-focus"],
  ],
  remove: ["Remove a Git worktree and close its workspace", ["--workspace <ID>", "--force"]],
};

/** `herdr worktree <command> --help`; from 0.9 every one of the four lists --trust-repository (PR #3344). */
function worktreeHelp(command, version) {
  const [about, options] = WORKTREE_HELP[command] ?? ["", []];
  const all = supportsTrustFlag(version) ? [...options, "--trust-repository"] : options;
  return [
    about,
    "",
    `Usage: herdr worktree ${command} [OPTIONS]`,
    "",
    "Options:",
    ...all.map((option) => `      ${option}`),
    "  -h, --help  Print help",
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Commands. Each returns {id, key, parse(args), run(ctx)} pieces through `dispatch`.

function parseWorktreeCreate(args, state) {
  const params = { focus: false, trust: false };
  for (let i = 0; i < args.length; ) {
    const arg = args[i];
    if (arg === "--workspace") {
      params.workspaceId = valueOf(args, i);
      i += 2;
    } else if (arg === "--cwd") {
      params.cwd = absolutePath(valueOf(args, i));
      i += 2;
    } else if (arg === "--branch") {
      params.branch = valueOf(args, i);
      i += 2;
    } else if (arg === "--base") {
      params.base = valueOf(args, i);
      i += 2;
    } else if (arg === "--path") {
      params.path = absolutePath(valueOf(args, i));
      i += 2;
    } else if (arg === "--label") {
      params.label = valueOf(args, i);
      i += 2;
    } else if (arg === "--focus") {
      params.focus = true;
      i += 1;
    } else if (arg === "--no-focus") {
      params.focus = false;
      i += 1;
    } else if (arg === "--trust-repository" && supportsTrustFlag(state.version)) {
      params.trust = true;
      i += 1;
    } else if (arg === "--json") {
      i += 1;
    } else throw new UsageError(`unknown option: ${arg}`);
  }
  if (params.workspaceId !== undefined && params.cwd !== undefined) throw new UsageError(WORKTREE_CREATE_USAGE);
  return params;
}

function parseWorktreeList(args, state) {
  const params = { trust: false };
  for (let i = 0; i < args.length; ) {
    const arg = args[i];
    if (arg === "--workspace") {
      params.workspaceId = valueOf(args, i);
      i += 2;
    } else if (arg === "--cwd") {
      params.cwd = absolutePath(valueOf(args, i));
      i += 2;
    } else if (arg === "--trust-repository" && supportsTrustFlag(state.version)) {
      params.trust = true;
      i += 1;
    } else if (arg === "--json") {
      i += 1;
    } else throw new UsageError(`unknown option: ${arg}`);
  }
  if (params.workspaceId !== undefined && params.cwd !== undefined) {
    throw new UsageError("usage: herdr worktree list [--workspace ID | --cwd PATH]");
  }
  return params;
}

function parseWorktreeOpen(args, state) {
  const params = { focus: false, trust: false };
  for (let i = 0; i < args.length; ) {
    const arg = args[i];
    if (arg === "--workspace") {
      params.workspaceId = valueOf(args, i);
      i += 2;
    } else if (arg === "--cwd") {
      params.cwd = absolutePath(valueOf(args, i));
      i += 2;
    } else if (arg === "--path") {
      params.path = absolutePath(valueOf(args, i));
      i += 2;
    } else if (arg === "--branch") {
      params.branch = valueOf(args, i);
      i += 2;
    } else if (arg === "--label") {
      params.label = valueOf(args, i);
      i += 2;
    } else if (arg === "--focus") {
      params.focus = true;
      i += 1;
    } else if (arg === "--no-focus") {
      params.focus = false;
      i += 1;
    } else if (arg === "--trust-repository" && supportsTrustFlag(state.version)) {
      params.trust = true;
      i += 1;
    } else if (arg === "--json") {
      i += 1;
    } else throw new UsageError(`unknown option: ${arg}`);
  }
  if (params.workspaceId !== undefined && params.cwd !== undefined) throw new UsageError(WORKTREE_OPEN_USAGE);
  if ((params.path !== undefined) === (params.branch !== undefined)) throw new UsageError(WORKTREE_OPEN_USAGE);
  return params;
}

function parseWorktreeRemove(args, state) {
  const params = { force: false, trust: false };
  for (let i = 0; i < args.length; ) {
    const arg = args[i];
    if (arg === "--workspace") {
      params.workspaceId = valueOf(args, i);
      i += 2;
    } else if (arg === "--force") {
      params.force = true;
      i += 1;
    } else if (arg === "--trust-repository" && supportsTrustFlag(state.version)) {
      params.trust = true;
      i += 1;
    } else if (arg === "--json") {
      i += 1;
    } else throw new UsageError(`unknown option: ${arg}`);
  }
  if (params.workspaceId === undefined) throw new UsageError("usage: herdr worktree remove --workspace ID [--force]");
  return params;
}

/**
 * An untrusted repository (a checkout owned by another user): git refuses it, and Herdr answers with
 * git's text under the command's own failure code, unless `--trust-repository` was passed.
 */
function requireTrusted(state, params, code, path) {
  if (!state.requireTrust || params.trust) return;
  const where = path ?? process.cwd();
  throw new ApiError(
    code,
    `fatal: detected dubious ownership in repository at '${where}'\nTo add an exception for this directory, call:\n\n\tgit config --global --add safe.directory ${where}`,
  );
}

function worktreeCreate(ctx, params) {
  const { paths, state, fault } = ctx;
  requireTrusted(state, params, "worktree_create_failed", params.cwd);
  const space = resolveSource(state, params, { allowLinked: false });
  if (params.branch === "") throw new ApiError("invalid_request", "branch must not be empty");
  const branch = params.branch ?? generatedBranch();
  const checkoutPath = params.path ?? join(state.worktreesDirectory, space.repoName, slug(branch));
  // Herdr keys its pending operations by checkout path (src/app/api/worktrees/deferred.rs).
  if ((state.operations ?? []).some((op) => canonical(op.path) === canonical(checkoutPath))) {
    throw new ApiError("worktree_operation_in_progress", "worktree operation is already in progress for this checkout");
  }
  if (fault?.late !== undefined)
    return deferCreate(paths, state, { ...params, branch, path: checkoutPath }, fault.late);
  const existingBranch = git(state, space.repoRoot, ["show-ref", "--verify", "--quiet", `refs/heads/${branch}`]).ok;
  mkdirSync(dirname(checkoutPath), { recursive: true });
  // An existing local branch is checked out as it is: --base is silently ignored.
  const added = existingBranch
    ? git(state, space.repoRoot, ["worktree", "add", checkoutPath, branch], { asServer: true })
    : git(state, space.repoRoot, ["worktree", "add", "-b", branch, checkoutPath, params.base ?? "HEAD"], {
        asServer: true,
      });
  if (!added.ok) throw new ApiError("worktree_create_failed", added.stderr);
  if (fault?.error === "worktree_open_failed") {
    throw new ApiError(
      "worktree_open_failed",
      fault.message ?? `failed to open a workspace for ${checkoutPath}: pty spawn failed`,
    );
  }
  ensureParentWorkspace(paths, state, space);
  const ws = openWorkspace(paths, state, {
    cwd: checkoutPath,
    label: params.label,
    focus: params.focus,
    worktree: membership(space, checkoutPath, true),
  });
  const entry = { path: checkoutPath, branch, isBare: false, isDetached: false, isPrunable: false };
  return { type: "worktree_created", ...createdResponse(state, ws, worktreeInfo(state, space, entry)) };
}

/**
 * The server's thread for a create whose client went away: the operation is registered now (so a
 * retry answers worktree_operation_in_progress), and a detached process finishes it `ms` later,
 * opening the workspace then, as Herdr does after the CLI was killed.
 */
function deferCreate(paths, state, params, ms) {
  state.operations ??= [];
  state.operations.push({ path: params.path, branch: params.branch });
  const child = spawn(
    process.execPath,
    [SCRIPT_PATH, "__double", "finish-create", String(ms), JSON.stringify(params)],
    {
      detached: true,
      stdio: "ignore",
      env: { ...process.env, HERDR_SOCKET_PATH: paths.socketPath },
    },
  );
  child.unref();
  return { type: "deferred" };
}

async function finishCreate(paths, ms, params) {
  await sleep(ms);
  await withState(paths, async (state) => {
    state.operations = (state.operations ?? []).filter((op) => op.path !== params.path);
    try {
      worktreeCreate({ paths, state, fault: undefined }, params);
    } catch {
      // Nobody waits for the answer: a failed late create leaves what git left.
    }
  });
}

function worktreeList(ctx, params) {
  const { state } = ctx;
  requireTrusted(state, params, "worktree_list_failed", params.cwd);
  const space = resolveSource(state, params, { allowLinked: true });
  const parent = workspaceForCheckout(state, space.repoRoot);
  return {
    type: "worktree_list",
    source: {
      repo_key: space.repoKey,
      repo_name: space.repoName,
      repo_root: space.repoRoot,
      source_checkout_path: space.repoRoot,
      source_workspace_id: parent?.id,
    },
    worktrees: listWorktrees(state, space.repoRoot).map((entry) => worktreeInfo(state, space, entry)),
  };
}

function worktreeOpen(ctx, params) {
  const { paths, state } = ctx;
  requireTrusted(state, params, "worktree_open_failed", params.cwd);
  const space = resolveSource(state, params, { allowLinked: false });
  const entries = listWorktrees(state, space.repoRoot);
  let entry;
  if (params.path !== undefined) {
    entry = entries.find((candidate) => canonical(candidate.path) === canonical(params.path));
    if (entry === undefined) throw new ApiError("worktree_not_found", "worktree path not found");
  } else {
    const matches = entries.filter((c) => !c.isBare && !c.isPrunable && !c.isDetached && c.branch === params.branch);
    if (matches.length === 0) throw new ApiError("worktree_not_found", "worktree branch not found");
    if (matches.length > 1) throw new ApiError("ambiguous_worktree_branch", "multiple worktrees matched branch");
    entry = matches[0];
  }
  if (entry.isBare || entry.isPrunable) throw new ApiError("worktree_not_found", "worktree cannot be opened");
  let ws = workspaceForCheckout(state, entry.path);
  const alreadyOpen = ws !== undefined;
  if (ws === undefined) {
    ensureParentWorkspace(paths, state, space);
    ws = openWorkspace(paths, state, {
      cwd: entry.path,
      label: params.label,
      focus: params.focus,
      worktree: membership(space, entry.path, canonical(entry.path) !== space.repoRoot),
    });
  } else {
    // Herdr takes the workspace over for the worktree: its membership is rewritten and it gets the label.
    ws.worktree = membership(space, entry.path, canonical(entry.path) !== space.repoRoot);
    if (params.label !== undefined) ws.label = params.label;
    if (params.focus) state.focusedWorkspaceId = ws.id;
  }
  return {
    type: "worktree_opened",
    already_open: alreadyOpen,
    ...createdResponse(state, ws, worktreeInfo(state, space, entry)),
  };
}

function worktreeRemove(ctx, params) {
  const { paths, state } = ctx;
  const ws = requireWorkspace(state, params.workspaceId);
  requireTrusted(state, params, "worktree_remove_failed", ws.worktree?.repo_root);
  if (ws.worktree === undefined || !ws.worktree.is_linked_worktree) {
    throw new ApiError("not_linked_worktree", "workspace is not a linked worktree checkout");
  }
  const checkoutPath = ws.worktree.checkout_path;
  const repoRoot = ws.worktree.repo_root;
  // A forced removal stops the workspace's terminals before git runs (src/app/api/worktrees/
  // deferred.rs): if git then refuses (a locked worktree), the processes are gone all the same,
  // and so is the workspace whose last pane ended.
  if (params.force) closeWorkspace(paths, state, ws);
  const removed = git(state, repoRoot, ["worktree", "remove", ...(params.force ? ["--force"] : []), checkoutPath], {
    asServer: true,
  });
  if (!removed.ok) {
    // Matched from git's English text only (src/worktree.rs is_dirty_worktree_remove_error).
    const lower = removed.stderr.toLowerCase();
    if (
      !params.force &&
      lower.includes("contains modified or untracked files") &&
      lower.includes("use --force to delete it")
    ) {
      throw new ApiError("dirty_worktree_requires_force", removed.stderr);
    }
    throw new ApiError("worktree_remove_failed", removed.stderr);
  }
  // git never deletes the branch here; Herdr then closes the workspace.
  if (!params.force) closeWorkspace(paths, state, ws);
  // The released 0.8.2 then focuses the repository's own workspace, wherever the focus was (fixed
  // after the tag, herdr #3099).
  if (/^0\.8\./.test(state.version)) {
    const parent = state.workspaces.find(
      (other) =>
        other.worktree?.is_linked_worktree === false && canonical(other.worktree.repo_root) === canonical(repoRoot),
    );
    if (parent !== undefined) state.focusedWorkspaceId = parent.id;
  }
  return { type: "worktree_removed", workspace_id: ws.id, path: checkoutPath, forced: params.force };
}

function parseNoOptions(args, usage) {
  for (const arg of args) {
    if (arg.startsWith("-")) throw new UsageError(`unknown option: ${arg}`);
  }
  if (args.length > 0) throw new UsageError(usage);
  return {};
}

function parseOneId(args, usage) {
  if (args.length !== 1) throw new UsageError(usage);
  return { id: args[0] };
}

function parseWorkspaceCreate(args) {
  const params = { focus: false, env: {} };
  for (let i = 0; i < args.length; ) {
    const arg = args[i];
    if (arg === "--cwd") {
      params.cwd = absolutePath(valueOf(args, i));
      i += 2;
    } else if (arg === "--label") {
      params.label = valueOf(args, i);
      i += 2;
    } else if (arg === "--env") {
      const assignment = valueOf(args, i);
      const equals = assignment.indexOf("=");
      if (equals < 0) throw new UsageError("env must use KEY=VALUE");
      if (equals === 0) throw new UsageError("env key must not be empty");
      params.env[assignment.slice(0, equals)] = assignment.slice(equals + 1);
      i += 2;
    } else if (arg === "--focus") {
      params.focus = true;
      i += 1;
    } else if (arg === "--no-focus") {
      params.focus = false;
      i += 1;
    } else throw new UsageError(`unknown option: ${arg}`);
  }
  return params;
}

function parseWorkspaceRename(args) {
  if (args.length < 2) throw new UsageError("usage: herdr workspace rename <workspace_id> <label>");
  return { id: args[0], label: args.slice(1).join(" ") };
}

function parsePaneMove(args) {
  if (args.length < 1 || args[0].startsWith("-")) throw new UsageError(PANE_MOVE_USAGE);
  // Like Herdr, a move focuses the moved pane unless told not to.
  const params = { paneId: args[0], focus: true, newWorkspace: false };
  for (let i = 1; i < args.length; ) {
    const arg = args[i];
    if (arg === "--new-workspace") {
      params.newWorkspace = true;
      i += 1;
    } else if (arg === "--label") {
      params.label = valueOf(args, i);
      i += 2;
    } else if (arg === "--focus") {
      params.focus = true;
      i += 1;
    } else if (arg === "--no-focus") {
      params.focus = false;
      i += 1;
    } else throw new UsageError(`unknown option: ${arg}`);
  }
  // The double implements the --new-workspace form only.
  if (!params.newWorkspace) throw new UsageError(PANE_MOVE_USAGE);
  return params;
}

const PANE_MOVE_USAGE =
  "usage: herdr pane move <pane_id> --new-workspace [--label TEXT] [--tab-label TEXT] [--focus|--no-focus]";

/**
 * `pane move --new-workspace`: the pane (its PTY and processes untouched) gets a new workspace and
 * new ids; the old pane id stays an alias. Its processes keep their launch-time HERDR_* ids.
 */
function movePaneToNewWorkspace(paths, state, params) {
  const pane = requirePane(state, params.paneId);
  const from = requireWorkspace(state, pane.workspaceId);
  const cwd = state.live.get(pane.tmuxPaneId)?.path || from.cwd;
  // The new workspace is a plain one: no worktree membership, and the label Herdr derives from its
  // directory (automaticLabel).
  const ws = {
    id: mintWorkspaceId(state),
    label: params.label,
    cwd,
    env: from.env,
    tabs: [],
    activeTabId: undefined,
    nextTab: 1,
    nextPane: 1,
  };
  const tabId = mintTabId(state, ws);
  const paneId = mintPaneId(state, ws);
  for (const tab of from.tabs) tab.paneIds = tab.paneIds.filter((id) => id !== pane.id);
  delete state.panes[pane.id];
  state.paneAliases ??= {};
  for (const [alias, target] of Object.entries(state.paneAliases))
    if (target === pane.id) state.paneAliases[alias] = paneId;
  state.paneAliases[pane.id] = paneId;
  const moved = { ...pane, id: paneId, workspaceId: ws.id, tabId };
  state.panes[paneId] = moved;
  ws.tabs.push({ id: tabId, label: "1", paneIds: [paneId] });
  ws.activeTabId = tabId;
  state.workspaces.push(ws);
  const previousTabId = pane.tabId;
  const sourceStays = from.tabs.some((tab) => tab.paneIds.length > 0);
  pruneClosedPanes(paths, state);
  if (params.focus) state.focusedWorkspaceId = ws.id;
  const tab = ws.tabs[0];
  return {
    type: "pane_move",
    move_result: {
      changed: true,
      ...(sourceStays ? {} : { closed_tab_id: previousTabId, closed_workspace_id: from.id }),
      created_tab: tabInfo(state, ws, tab),
      created_workspace: workspaceInfo(state, ws),
      focused_pane_id: paneId,
      pane: paneInfo(state, moved, paths),
      previous_pane_id: pane.id,
      previous_tab_id: previousTabId,
      previous_workspace_id: from.id,
      target_layout: {
        area: { height: Number(PANE_HEIGHT), width: Number(PANE_WIDTH), x: 0, y: 0 },
        focused_pane_id: paneId,
        panes: [
          {
            focused: true,
            pane_id: paneId,
            rect: { height: Number(PANE_HEIGHT), width: Number(PANE_WIDTH), x: 0, y: 0 },
          },
        ],
        splits: [],
        tab_id: tabId,
        workspace_id: ws.id,
        zoomed: false,
      },
    },
  };
}

function parseReportAgentSession(args) {
  if (args.length < 1)
    throw new UsageError(
      "usage: herdr pane report-agent-session <pane_id> --source ID --agent LABEL [--seq N] [--agent-session-id ID] [--agent-session-path PATH] [--session-start-source SOURCE]",
    );
  const params = { paneId: args[0] };
  const names = {
    "--source": "source",
    "--agent": "agent",
    "--seq": "seq",
    "--agent-session-id": "id",
    "--agent-session-path": "path",
    "--session-start-source": "startSource",
  };
  for (let i = 1; i < args.length; i += 2) {
    const name = names[args[i]];
    if (name === undefined) throw new UsageError(`unknown option: ${args[i]}`);
    params[name] = valueOf(args, i);
  }
  if (params.source === undefined || params.source.trim() === "") throw new UsageError("missing required --source");
  if (params.agent === undefined) throw new UsageError("missing required --agent");
  if (params.seq !== undefined && !/^\d+$/.test(params.seq)) {
    throw new ClientError(`Error: Custom { kind: Other, error: "invalid value for --seq: ${params.seq}" }`);
  }
  return params;
}

function parseReportAgent(args) {
  const usage =
    "usage: herdr pane report-agent <pane_id> --source ID --agent LABEL --state idle|working|blocked|unknown [--message TEXT] [--seq N] [--agent-session-id ID] [--agent-session-path PATH]";
  if (args.length < 1) throw new UsageError(usage);
  const params = { paneId: args[0] };
  const names = {
    "--source": "source",
    "--agent": "agent",
    "--state": "state",
    "--message": "message",
    "--seq": "seq",
    "--agent-session-id": "id",
    "--agent-session-path": "path",
  };
  for (let i = 1; i < args.length; i += 2) {
    const name = names[args[i]];
    if (name === undefined) throw new UsageError(`unknown option: ${args[i]}`);
    params[name] = valueOf(args, i);
  }
  if (params.source === undefined || params.source.trim() === "") throw new UsageError("missing required --source");
  if (params.agent === undefined) throw new UsageError("missing required --agent");
  if (params.state === undefined) throw new UsageError("missing required --state");
  if (!["idle", "working", "blocked", "unknown"].includes(params.state))
    throw new UsageError(`invalid --state: ${params.state}`);
  if (params.seq !== undefined && !/^\d+$/.test(params.seq)) throw new UsageError(`invalid --seq: ${params.seq}`);
  return params;
}

/**
 * Herdr's acceptance of a sequenced report of Pi's source (src/terminal/state.rs
 * `accept_hook_report`, one sequence per source, shared with the session reports): with a sequence
 * number, only a larger one than the last; without one, only while none was ever taken.
 */
function acceptHookReport(pane, seq) {
  const number = seq === undefined ? undefined : Number(seq);
  if (number === undefined) return pane.reportSeq === undefined;
  if (pane.reportSeq !== undefined && number <= pane.reportSeq) return false;
  pane.reportSeq = number;
  return true;
}

function parsePaneList(args) {
  const params = {};
  for (let i = 0; i < args.length; ) {
    if (args[i] === "--workspace") {
      params.workspaceId = valueOf(args, i);
      i += 2;
    } else throw new UsageError(`unknown option: ${args[i]}`);
  }
  return params;
}

function parsePaneProcessInfo(args) {
  const params = {};
  for (let i = 0; i < args.length; ) {
    if (args[i] === "--pane") {
      params.paneId = valueOf(args, i);
      i += 2;
    }
    // `--current` is $HERDR_PANE_ID; neither flag means the focused pane (src/cli/pane.rs
    // `parse_optional_current_pane_args`), not $HERDR_PANE_ID.
    else if (args[i] === "--current") {
      params.paneId = process.env.HERDR_PANE_ID?.trim() || undefined;
      i += 1;
    } else throw new UsageError(`unknown option: ${args[i]}`);
  }
  return params;
}

const PANE_READ_USAGE =
  "usage: herdr pane read <pane_id> [--source visible|recent|recent-unwrapped|detection] [--lines N] [--format text|ansi] [--ansi] [--raw]";

function parsePaneRead(args) {
  const params = { source: "recent", ansi: false };
  const expanded = args.flatMap((arg) => {
    const match = /^(--source|--lines|--format)=(.*)$/.exec(arg);
    return match ? [match[1], match[2]] : [arg];
  });
  for (let i = 0; i < expanded.length; ) {
    const arg = expanded[i];
    if (arg === "--source") {
      const value = valueOf(expanded, i);
      if (!["visible", "recent", "recent-unwrapped", "recent_unwrapped", "detection"].includes(value)) {
        throw new UsageError(`invalid read source: ${value}`);
      }
      params.source = value;
      i += 2;
    } else if (arg === "--lines") {
      const value = valueOf(expanded, i);
      if (!/^\d+$/.test(value)) throw new UsageError(`invalid value for --lines: ${value}`);
      params.lines = Number(value);
      i += 2;
    } else if (arg === "--format") {
      const value = valueOf(expanded, i);
      if (value !== "text" && value !== "ansi") throw new UsageError(`invalid read format: ${value}`);
      params.ansi = value === "ansi";
      i += 2;
    } else if (arg === "--ansi" || arg === "--raw") {
      params.ansi = true;
      i += 1;
    } else if (arg.startsWith("-")) {
      throw new UsageError(`unknown option: ${arg}`);
    } else {
      if (params.paneId !== undefined) throw new UsageError(`unexpected argument: ${arg}`);
      params.paneId = arg;
      i += 1;
    }
  }
  if (params.paneId === undefined) throw new UsageError(PANE_READ_USAGE);
  return params;
}

/** `pane run|send-text <pane_id> <text...>`: the words after the id are joined with spaces. */
function parsePaneText(args, usage) {
  if (args.length < 2) throw new UsageError(usage);
  // The first word is the pane id whatever it looks like: `pane run --json x` asks for pane --json.
  return { paneId: args[0], text: args.slice(1).join(" "), keys: args.slice(1) };
}

function typeInto(ctx, pane, text, keys, capped = false) {
  const { paths, state } = ctx;
  if (capped && state.lineCap > 0 && Buffer.byteLength(text) > state.lineCap - 1) {
    // The tty keeps the first MAX_CANON - 1 bytes of a line and drops the rest; Enter still submits.
    text = Buffer.from(text)
      .subarray(0, state.lineCap - 1)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
  }
  if (text !== "") tmux(paths, state, ["send-keys", "-t", pane.tmuxPaneId, "-l", "--", text]);
  for (const key of keys) tmux(paths, state, ["send-keys", "-t", pane.tmuxPaneId, key]);
  pane.revision += 1;
}

/** The pane a command names, else the focused workspace's root pane, as the server resolves it. */
function currentPaneId(state, explicit) {
  if (explicit !== undefined) return explicit;
  const focused = findWorkspace(state, state.focusedWorkspaceId);
  if (focused === undefined) throw new ApiError("invalid_request", "no pane is focused");
  return rootPane(state, focused).pane.id;
}

/** Every command: its request id, how it parses, what it does, and whether it prints JSON. */
const COMMANDS = {
  "worktree create": { id: "cli:worktree:create", parse: parseWorktreeCreate, run: worktreeCreate, mutates: true },
  "worktree list": { id: "cli:worktree:list", parse: parseWorktreeList, run: worktreeList },
  "worktree open": { id: "cli:worktree:open", parse: parseWorktreeOpen, run: worktreeOpen, mutates: true },
  "worktree remove": { id: "cli:worktree:remove", parse: parseWorktreeRemove, run: worktreeRemove, mutates: true },
  "workspace list": {
    id: "cli:workspace:list",
    // Herdr answers any argument of `workspace list` with its usage, options included.
    parse: (args) => {
      if (args.length > 0) throw new UsageError("usage: herdr workspace list");
      return {};
    },
    run: ({ state }) => ({
      type: "workspace_list",
      workspaces: state.workspaces.map((ws) => workspaceInfo(state, ws)),
    }),
  },
  "workspace get": {
    id: "cli:workspace:get",
    parse: (args) => parseOneId(args, "usage: herdr workspace get <workspace_id>"),
    run: ({ state }, { id }) => ({
      type: "workspace_info",
      workspace: workspaceInfo(state, requireWorkspace(state, id)),
    }),
  },
  "workspace focus": {
    id: "cli:workspace:focus",
    parse: (args) => parseOneId(args, "usage: herdr workspace focus <workspace_id>"),
    run: ({ state }, { id }) => {
      const ws = requireWorkspace(state, id);
      state.focusedWorkspaceId = ws.id;
      return { type: "workspace_info", workspace: workspaceInfo(state, ws) };
    },
  },
  "workspace rename": {
    id: "cli:workspace:rename",
    parse: parseWorkspaceRename,
    run: ({ state }, { id, label }) => {
      const ws = requireWorkspace(state, id);
      ws.label = label;
      return { type: "workspace_info", workspace: workspaceInfo(state, ws) };
    },
  },
  "workspace close": {
    id: "cli:workspace:close",
    parse: (args) => parseOneId(args, "usage: herdr workspace close <workspace_id>"),
    run: ({ paths, state }, { id }) => {
      closeWorkspace(paths, state, requireWorkspace(state, id));
      return { type: "ok" };
    },
  },
  "workspace create": {
    id: "cli:workspace:create",
    parse: parseWorkspaceCreate,
    run: ({ paths, state }, params) => {
      const cwd = params.cwd ?? process.cwd();
      if (!existsSync(cwd)) throw new ApiError("invalid_request", `cwd does not exist: ${cwd}`);
      const ws = openWorkspace(paths, state, {
        cwd,
        label: params.label,
        env: params.env,
        focus: params.focus,
      });
      const { tab, pane } = rootPane(state, ws);
      return {
        type: "workspace_created",
        workspace: workspaceInfo(state, ws),
        tab: tabInfo(state, ws, tab),
        root_pane: paneInfo(state, pane, paths),
      };
    },
  },
  "pane list": {
    id: "cli:pane:list",
    parse: parsePaneList,
    run: ({ paths, state }, { workspaceId }) => {
      if (workspaceId !== undefined) requireWorkspace(state, workspaceId);
      const panes = Object.values(state.panes).filter(
        (pane) => workspaceId === undefined || pane.workspaceId === workspaceId,
      );
      return { type: "pane_list", panes: panes.map((pane) => paneInfo(state, pane, paths)) };
    },
  },
  "pane get": {
    id: "cli:pane:get",
    parse: (args) => parseOneId(args, "usage: herdr pane get <pane_id>"),
    run: ({ paths, state }, { id }) => ({ type: "pane_info", pane: paneInfo(state, requirePane(state, id), paths) }),
  },
  "pane process-info": {
    id: "cli:pane:process_info",
    parse: parsePaneProcessInfo,
    run: ({ state }, { paneId }) => ({
      type: "pane_process_info",
      process_info: processInfo(state, requirePane(state, currentPaneId(state, paneId))),
    }),
  },
  "pane run": {
    id: "cli:request",
    fireAndForget: true,
    parse: (args) => parsePaneText(args, "usage: herdr pane run <pane_id> <command>"),
    run: (ctx, { paneId, text }) => typeInto(ctx, requirePane(ctx.state, paneId), text, ["Enter"], true),
  },
  "pane send-text": {
    id: "cli:request",
    fireAndForget: true,
    parse: (args) => parsePaneText(args, "usage: herdr pane send-text <pane_id> <text>"),
    run: (ctx, { paneId, text }) => typeInto(ctx, requirePane(ctx.state, paneId), text, []),
  },
  "pane send-keys": {
    id: "cli:request",
    fireAndForget: true,
    parse: (args) => parsePaneText(args, "usage: herdr pane send-keys <pane_id> <key> [key ...]"),
    run: (ctx, { paneId, keys }) => typeInto(ctx, requirePane(ctx.state, paneId), "", keys),
  },
  "pane read": {
    id: "cli:pane:read",
    rawText: true,
    parse: parsePaneRead,
    run: ({ paths, state }, params) => {
      const pane = requirePane(state, params.paneId);
      const args = ["capture-pane", "-p", "-t", pane.tmuxPaneId];
      if (params.ansi) args.push("-e");
      if (params.source !== "visible") args.push("-J");
      if (params.source !== "visible" && params.lines !== undefined) args.push("-S", `-${params.lines}`);
      // Like Herdr, the blank rows below the cursor are not part of the text.
      const lines = tmux(paths, state, args).replace(/\n+$/, "").split("\n");
      const kept = params.lines !== undefined ? lines.slice(-params.lines) : lines;
      return { text: kept.join("\n") + "\n" };
    },
  },
  "pane move": {
    id: "cli:pane:move",
    parse: parsePaneMove,
    run: ({ paths, state }, params) => movePaneToNewWorkspace(paths, state, params),
  },
  "pane report-agent": {
    id: "cli:request",
    fireAndForget: true,
    parse: parseReportAgent,
    run: ({ state }, params) => {
      const pane = requirePane(state, params.paneId);
      // Pi's full-lifecycle source (`herdr:pi`/`pi`) is the pane's state while Pi runs there
      // (src/detect/mod.rs); before Herdr sees the Pi, a sequenced report waits for it
      // (`route_full_lifecycle_hook_report`'s pending replacement).
      if (params.source !== "herdr:pi" || params.agent !== "pi") return;
      if (!acceptHookReport(pane, params.seq)) return;
      if (detectsPi(state, pane)) {
        pane.hookState = params.state;
        delete pane.pendingHookState;
      } else if (params.seq !== undefined) pane.pendingHookState = params.state;
    },
  },
  "pane report-agent-session": {
    id: "cli:request",
    fireAndForget: true,
    parse: parseReportAgentSession,
    // Only an official source gets a session ref Herdr keeps and resumes (src/agent_resume.rs).
    run: ({ state }, params) => reportAgentSession(state, requirePane(state, params.paneId), params),
  },
  "pane close": {
    id: "cli:pane:close",
    parse: (args) => parseOneId(args, "usage: herdr pane close <pane_id>"),
    run: ({ paths, state }, { id }) => {
      const pane = requirePane(state, id);
      tmux(paths, state, ["kill-pane", "-t", pane.tmuxPaneId]);
      delete state.panes[id];
      pruneClosedPanes(paths, state);
      return { type: "ok" };
    },
  },
};

const GROUP_HELP = {
  worktree: [
    "herdr worktree commands:",
    "  herdr worktree list [--workspace ID | --cwd PATH]",
    "  herdr worktree create [--workspace ID | --cwd PATH] [--branch NAME] [--base REF] [--path PATH] [--label TEXT] [--focus] [--no-focus]",
    "  herdr worktree open [--workspace ID | --cwd PATH] (--path PATH | --branch NAME) [--label TEXT] [--focus] [--no-focus]",
    "  herdr worktree remove --workspace ID [--force]",
  ],
  workspace: [
    "herdr workspace commands:",
    "  herdr workspace list | get <id> | focus <id> | rename <id> <label> | close <id>",
    "  herdr workspace create [--cwd PATH] [--label TEXT] [--env KEY=VALUE] [--focus|--no-focus]",
  ],
  pane: [
    "herdr pane commands:",
    "  herdr pane list [--workspace ID] | get <pane_id> | process-info [--pane ID | --current]",
    "  herdr pane run <pane_id> <command> | send-text <pane_id> <text> | send-keys <pane_id> <key>...",
    "  herdr pane read <pane_id> [--source visible|recent|...] [--lines N] | close <pane_id>",
    "  herdr pane move <pane_id> --new-workspace [--label TEXT] [--focus|--no-focus]",
    "  herdr pane report-agent <pane_id> --source ID --agent LABEL --state idle|working|blocked|unknown [--message TEXT] [--seq N] [--agent-session-id ID] [--agent-session-path PATH]",
    "  herdr pane report-agent-session <pane_id> --source ID --agent LABEL [--seq N] [--agent-session-id ID] [--agent-session-path PATH]",
  ],
};

// ---------------------------------------------------------------------------------------------
// Test-only administration: start and stop the "server".

function parseAdminOptions(args) {
  const options = {};
  for (let i = 0; i < args.length; i += 2) {
    const value = args[i + 1];
    if (value === undefined) throw new UsageError(`missing value for ${args[i]}`);
    options[args[i].replace(/^--/, "")] = value;
  }
  return options;
}

function adminStart(paths, options, sessionName) {
  if (existsSync(paths.socketPath))
    throw new ApiError("server_already_running", `a herdr server is already running at ${paths.socketPath}`);
  mkdirSync(paths.dir, { recursive: true });
  const serverEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    // The server's panes must not think they run in tmux; the double's own knobs stay out too.
    if (key === "TMUX" || key === "TMUX_PANE" || key.startsWith("HERDR_")) continue;
    serverEnv[key] = value;
  }
  const home = serverEnv.HOME || homedir();
  writeFileSync(paths.paneRc, paneShellRc());
  const state = {
    doubleVersion: 1,
    version: options.version ?? DEFAULT_VERSION,
    requireTrust: options["require-trust"] === "1",
    legacyIds: options["legacy-ids"] === "1",
    shellDelayMs: Number(options["shell-delay-ms"] ?? "0"),
    shellSwallowMs: Number(options["shell-swallow-ms"] ?? "0"),
    shellSwallowUntil: options["shell-swallow-until"] || undefined,
    // A terminal's canonical line limit (1024 bytes on macOS): a longer typed line is cut there.
    lineCap: Number(options["line-cap"] ?? "0"),
    sessionName,
    worktreesDirectory: join(home, ".herdr", "worktrees"),
    serverEnv,
    // A later first id lets a test reach multi-digit ids without opening dozens of workspaces.
    nextWorkspace: Number(options["first-workspace-number"] ?? "1"),
    nextTerminal: 1,
    focusedWorkspaceId: undefined,
    workspaces: [],
    panes: {},
    faultUses: {},
  };
  // A placeholder session keeps the private tmux server alive while no workspace is open.
  execFileSync(
    "tmux",
    [
      "-S",
      paths.tmuxSocket,
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "herdr-double-server",
      "--",
      "sleep",
      "2147483647",
      ";",
      "set",
      "-s",
      "exit-empty",
      "off",
      ";",
      "set",
      "-s",
      "escape-time",
      "0",
      ";",
      "set",
      "-g",
      "history-limit",
      "10000",
    ],
    { env: serverEnv, timeout: TMUX_TIMEOUT_MS, stdio: ["ignore", "pipe", "pipe"] },
  );
  writeState(paths, state);
  writeFileSync(paths.socketPath, `herdr test double, tmux socket ${paths.tmuxSocket}\n`);
  writeOut(json({ socket_path: paths.socketPath, tmux_socket: paths.tmuxSocket, type: "double_started" }) + "\n");
}

/**
 * A server restart: workspaces, tabs, panes and ids are restored and the old processes are gone.
 * A pane without an agent session gets its shell again at once; a pane whose Pi reported its
 * session has no terminal until Herdr resumes it (`pane_not_found` from process-info meanwhile),
 * `blind-ms` later (src/app/mod.rs PENDING_AGENT_RESUME_THEME_WAIT, 750 ms by default): then its
 * shell is spawned and `pi --session <path>` plus CR written at once (src/app/agent_resume.rs).
 */
async function adminRestart(paths, options) {
  requireServer(paths);
  const blindMs = Number(options["blind-ms"] ?? DEFAULT_RESTART_BLIND_MS);
  await withState(paths, async (state) => {
    // The counter lives in the server process: a new one starts above the highest restored id, or
    // at w1 when none is (src/workspace.rs reserve_workspace_ids), so closed ids are minted again.
    if (!state.legacyIds) {
      const numbers = state.workspaces.map((ws) => decodeWorkspaceNumber(ws.id)).filter((n) => n !== undefined);
      state.nextWorkspace = numbers.length > 0 ? Math.max(...numbers) + 1 : 1;
    }
    for (const pane of Object.values(state.panes)) {
      const ws = findWorkspace(state, pane.workspaceId);
      if (ws === undefined) continue;
      const cwd = state.live.get(pane.tmuxPaneId)?.path || ws.cwd;
      pane.restoredCwd = cwd;
      // A new server process: no Pi seen yet, no report sequence known (src/terminal/state.rs keeps
      // hook_report_sequences in memory only); a session kept at the stop stays, to be resumed.
      delete pane.piPid;
      delete pane.piGoneAt;
      delete pane.reportSeq;
      if (pane.agentSession?.kind === "path") {
        // No terminal runtime yet: a placeholder holds the tmux pane until the resume spawns the shell.
        pane.pendingResume = true;
        tmux(paths, state, ["respawn-pane", "-k", "-t", pane.tmuxPaneId, "-c", cwd, "--", "sleep", "2147483647"]);
      } else {
        tmux(paths, state, [
          "respawn-pane",
          "-k",
          "-t",
          pane.tmuxPaneId,
          "-c",
          cwd,
          "--",
          ...paneCommand(paths, paneEnvironment(paths, state, ws, pane.tabId, pane.id)),
        ]);
      }
    }
  });
  const resumer = spawn(process.execPath, [SCRIPT_PATH, "__double", "resume-agents", String(blindMs)], {
    detached: true,
    stdio: "ignore",
    env: { ...process.env, HERDR_SOCKET_PATH: paths.socketPath },
  });
  resumer.unref();
  writeOut(json({ type: "double_restarted", blind_ms: blindMs }) + "\n");
}

/** Herdr's agent resume: the pane's shell spawned, then a bare `pi --session <path>` written to it at once. */
async function resumeAgents(paths, blindMs) {
  await sleep(blindMs);
  await withState(paths, async (state) => {
    for (const pane of Object.values(state.panes)) {
      if (pane.pendingResume !== true) continue;
      const ws = findWorkspace(state, pane.workspaceId);
      delete pane.pendingResume;
      if (ws === undefined || pane.agentSession === undefined) continue;
      const vars = paneEnvironment(paths, state, ws, pane.tabId, pane.id);
      tmux(paths, state, [
        "respawn-pane",
        "-k",
        "-t",
        pane.tmuxPaneId,
        "-c",
        pane.restoredCwd ?? ws.cwd,
        "--",
        ...paneCommand(paths, vars),
      ]);
      typeInto({ paths, state }, pane, `pi --session ${posixQuote(pane.agentSession.value)}`, ["Enter"]);
    }
  });
}

function posixQuote(word) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

function adminStop(paths) {
  rmSync(paths.socketPath, { force: true });
  try {
    execFileSync("tmux", ["-S", paths.tmuxSocket, "kill-server"], {
      timeout: TMUX_TIMEOUT_MS,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch {
    // Already stopped.
  }
}

// ---------------------------------------------------------------------------------------------
// Main

async function execute(paths, key, spec, args) {
  const params = spec.parse(args, existsSync(paths.statePath) ? readState(paths) : { version: DEFAULT_VERSION });
  requireServer(paths);
  let after;
  const outcome = await withState(paths, async (state) => {
    const fault = takeFault(paths, state, key);
    if (fault?.delayMs !== undefined) await sleep(fault.delayMs);
    if (fault?.hang === true) return { hang: true };
    if (fault?.garbage !== undefined && fault.instead === true) return { garbageInstead: fault.garbage };
    if (fault?.usage !== undefined) throw new UsageError(fault.usage);
    if (fault?.error !== undefined && fault.error !== "worktree_open_failed") {
      if (fault.error === "server_not_running") throw serverNotRunning(paths);
      throw Object.assign(new ApiError(fault.error, fault.message ?? `injected ${fault.error}`), {
        inband: fault.inband === true,
      });
    }
    if (fault?.error === "worktree_open_failed" && !key.startsWith("worktree")) {
      throw new ApiError("worktree_open_failed", fault.message ?? "injected worktree_open_failed");
    }
    const result = await spec.run({ paths, state, fault }, params);
    after = fault;
    return { result };
  });
  if (outcome.hang || outcome.result?.type === "deferred") return hangForever();
  if (outcome.garbageInstead !== undefined) {
    writeOut(outcome.garbageInstead);
    return 0;
  }
  if (after?.hang === "after") return hangForever();
  if (after?.partial === true) {
    throw new ApiError(
      "worktree_open_failed",
      after.message ?? "the workspace was opened but its description could not be produced",
    );
  }
  if (after?.garbage !== undefined) {
    writeOut(after.garbage);
    return 0;
  }
  if (after?.malformed === true) {
    writeOut(`{"id":"${spec.id}","result":{"type":"${outcome.result?.type ?? "ok"}","worksp\n`);
    return 0;
  }
  if (spec.fireAndForget) return 0;
  if (spec.rawText) {
    writeOut(outcome.result.text);
    return 0;
  }
  writeOut(json({ id: spec.id, result: outcome.result }) + "\n");
  return 0;
}

async function main(argv) {
  let args = argv;
  let sessionName;
  if (args[0] === "--session") {
    if (args[1] === undefined) {
      writeErr("missing value for --session\n");
      return 2;
    }
    sessionName = args[1];
    args = args.slice(2);
  }
  const paths = serverPaths(resolveSocketPath(process.env, sessionName));
  logCall(paths, argv);

  const [group, command, ...rest] = args;
  if (group === "--version" || group === "-V") {
    const version = existsSync(paths.statePath) ? readState(paths).version : DEFAULT_VERSION;
    writeOut(`herdr ${version}\n`);
    return 0;
  }
  if (group === "__double") {
    try {
      if (command === "start") adminStart(paths, parseAdminOptions(rest), sessionName ?? process.env.HERDR_SESSION);
      else if (command === "stop") adminStop(paths);
      else if (command === "restart") await adminRestart(paths, parseAdminOptions(rest));
      else if (command === "finish-create") await finishCreate(paths, Number(rest[0]), JSON.parse(rest[1] ?? "{}"));
      else if (command === "resume-agents") await resumeAgents(paths, Number(rest[0]));
      else throw new UsageError("usage: herdr __double start|stop|restart");
      return 0;
    } catch (error) {
      writeErr(`${error.message}\n`);
      return error instanceof UsageError ? 2 : 1;
    }
  }
  if (group === undefined || GROUP_HELP[group] === undefined) {
    writeErr(`unknown command: ${group ?? "(none)"}\n`);
    return 2;
  }
  const key = `${group} ${command}`;
  const spec = COMMANDS[key];
  if (command === undefined || command === "help" || command === "--help" || command === "-h" || spec === undefined) {
    writeErr(GROUP_HELP[group].join("\n") + "\n");
    return command === "help" || command === "--help" || command === "-h" ? 0 : 2;
  }
  // Like Herdr's clap help (src/cli/spec.rs): only a --help/-h directly after the subcommand; any
  // later one goes to the subcommand's own parser, which does not know it (exit 2).
  if (rest[0] === "--help" || rest[0] === "-h") {
    const version = existsSync(paths.statePath) ? readState(paths).version : DEFAULT_VERSION;
    writeOut(group === "worktree" ? worktreeHelp(command, version) : `Usage: herdr ${key}\n`);
    return 0;
  }
  try {
    return await execute(paths, key, spec, rest);
  } catch (error) {
    if (error instanceof UsageError) {
      writeErr(`${error.message}\n`);
      return 2;
    }
    if (error instanceof ClientError) {
      writeErr(`${error.message}\n`);
      return 1;
    }
    if (error instanceof ApiError) {
      const line =
        (error.idFirst === true
          ? JSON.stringify({ id: spec.id, error: { code: error.code, message: error.message } })
          : json({ error: { code: error.code, message: error.message }, id: spec.id })) + "\n";
      if (error.inband) writeOut(line);
      else writeErr(line);
      return 1;
    }
    writeErr(json({ error: { code: "internal_error", message: String(error?.stack ?? error) }, id: spec.id }) + "\n");
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
