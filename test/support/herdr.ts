/**
 * Herdr for tests, real or double, behind one interface (`HerdrServer`): start an instance, talk to
 * it, restart it, kill it. The double (test/support/herdr-double/) adds its call log and faults;
 * the real Herdr (herdr-real.ts) is what users run. `startHerdr` picks the one this test run is for
 * (`PI_HANDOFF_TEST_HERDR=real` in the herdr-real vitest project), so one scenario runs on both.
 *
 * Invariants:
 * - Every instance lives in its own temp dir with its own HOME and XDG_CONFIG_HOME, so its socket
 *   (`<home>/.config/herdr/herdr.sock`), its worktree default (`<home>/.herdr/worktrees`) and its
 *   private tmux server never touch the real ~/.config/herdr, ~/.herdr or the user's tmux.
 * - The server environment (and so every pane's) is the one given, without TMUX/TMUX_PANE.
 * - `kill()` stops the double's tmux server, then ends any process still carrying this instance's
 *   socket in its environment (a pane's children), waits until none is left, and removes the dir.
 *   It is idempotent.
 * - Every call has a timeout.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { makeTempDir } from "./git-repo.ts";
import { startRealHerdr, type RealHerdr } from "./herdr-real.ts";
import { PROJECT_ROOT } from "./pi.ts";
import { waitFor } from "./tmux.ts";

export const HERDR_DOUBLE_DIR = join(PROJECT_ROOT, "test", "support", "herdr-double");
/** The double's executable, what `HERDR_BIN_PATH` names inside its panes. */
export const HERDR_DOUBLE_BIN = join(HERDR_DOUBLE_DIR, "herdr");
const CALL_TIMEOUT_MS = 30_000;
const BIN_DIR = join(PROJECT_ROOT, "node_modules", ".bin");

export interface HerdrCall {
  argv: string[];
  at: string;
  pid: number;
}

export interface HerdrRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface HerdrDoubleOptions extends HerdrServerOptions {
  /** What `herdr --version` says; `--trust-repository` exists from 0.9.0 on. Default 0.9.2. */
  version?: string;
  /** A terminal line limit: typed text beyond `lineCap - 1` bytes is dropped (1024 on macOS). */
  lineCap?: number;
  /** Refuse every worktree command without `--trust-repository`, as an untrusted repository does. */
  requireTrust?: boolean;
  /** Mint ids as Herdr up to 0.6.10 did (lowercase hex workspace ids, `<ws>:<n>` tabs, `<ws>-<n>` panes). */
  legacyIds?: boolean;
  /** The number of the first workspace id (default 1), to reach multi-digit ids quickly. */
  firstWorkspaceNumber?: number;
}

export interface HerdrServerOptions {
  /** The server's environment, inherited by every pane (default: PATH, LANG and the isolated HOME). */
  env?: Record<string, string>;
  /**
   * How long each new pane's shell start-up job holds the foreground and swallows typed input
   * (test/support/pane-shell-rc.mjs: the pane shell's rc file, on the double and the real Herdr).
   */
  shellDelayMs?: number;
  /**
   * How long each new pane's shell start-up runs builtins only (the shell owns the foreground from the
   * first instant, so readiness cannot be seen) while it reads and discards what is typed.
   */
  shellSwallowMs?: number;
  /** The same start-up, lasting until this file exists (a test decides when the shell is up). */
  shellSwallowUntil?: string;
}

/** What the double and the real Herdr both offer a test. */
export interface HerdrServerBase {
  /** What `herdr --version` says (the double's pretended version, or the real one's). */
  version: string;
  rootDir: string;
  home: string;
  socketPath: string;
  /** The server's own directory (`<home>/.config/herdr`): its socket, config, session and logs. */
  serverDir: string;
  /** The `herdr` executable, what `HERDR_BIN_PATH` names inside its panes. */
  binPath: string;
  /** The environment the server (and so each pane) started with. */
  serverEnv: Record<string, string>;
  /** For a process outside any pane that talks to this instance: socket and binary named explicitly. */
  clientEnv: Record<string, string>;
  /** The environment Herdr gives a process in `paneId` (for a print-mode Pi that pretends to run there). */
  paneEnv(paneId: string): Promise<Record<string, string>>;
  /** Runs `herdr` with `args`; never throws for a non-zero exit. */
  herdr(args: readonly string[], options?: { env?: Record<string, string>; timeoutMs?: number }): Promise<HerdrRun>;
  /** Runs a command that must succeed with JSON and returns its `result`. */
  result(args: readonly string[]): Promise<Record<string, unknown>>;
  /** Creates a workspace (focused) whose root pane's shell starts in `cwd`; returns its ids. */
  openWorkspace(cwd: string, label: string): Promise<{ workspaceId: string; tabId: string; paneId: string }>;
  /** The visible text of a pane (`herdr pane read --source visible`). */
  read(paneId: string): Promise<string>;
  /**
   * A server restart: every pane's processes end; workspaces, tabs and panes come back with their
   * ids, and new workspaces are numbered from the highest restored id + 1 (w1 when none is
   * restored). A pane with a kept Pi session gets a new shell with `pi --session <path>` typed
   * into it. `whileStopped` runs while the server is down (the double has no down state: before).
   * `blindMs` is the double's: how long such a pane answers pane_not_found first.
   */
  restart(options?: { blindMs?: number; whileStopped?: () => Promise<void> }): Promise<void>;
  kill(): Promise<void>;
}

export interface HerdrDouble extends HerdrServerBase {
  kind: "double";
  calls(): HerdrCall[];
  clearCalls(): void;
  /** Faults by command (`"worktree create"`, `"pane process-info"`, `"*"`), read on every call. */
  setFaults(faults: Record<string, unknown>): void;
  clearFaults(): void;
}

export type HerdrServer = HerdrDouble | RealHerdr;

/** Which Herdr this test run is for: the real one in the herdr-real project, else the double. */
export const HERDR_TARGET: "real" | "double" = process.env.PI_HANDOFF_TEST_HERDR === "real" ? "real" : "double";

/**
 * Whether this double pass has a herdr-real pass beside it (vitest.config.ts sets it where the
 * real Herdr is built, and CI always builds it).
 */
const REAL_PASS_BESIDE = HERDR_TARGET === "double" && process.env.PI_HANDOFF_TEST_HERDR_REAL_PASS === "1";

/**
 * Registers a scenario both Herdrs can show where it means most: on the real Herdr when its pass
 * runs, else on the double. On the double too it would add only how the outcome was reached (its
 * call log: which calls, in which order), where the real pass shows the outcome itself (screens,
 * focus, workspaces, the manifest's focus after the acknowledgement), and the two cores are the
 * suite's limit. The double's faithfulness is herdr-conformance's job,
 * which runs on both. Like `forDoubleOnly`, nothing unregistered is reported as skipped.
 */
export function onTheRealHerdrWhenBuilt(body: () => void): void {
  if (!REAL_PASS_BESIDE) body();
}

/** True when the double's pass leaves shared scenarios to the herdr-real pass (see above). */
export const SHARED_SCENARIOS_ON_REAL = REAL_PASS_BESIDE;

/**
 * The Herdr this run is for, with only what both share: a scenario written once runs on the real
 * Herdr and on the double. Double-only options (faults, shell delays, ids) are for `startHerdrDouble`.
 */
export async function startHerdr(options: HerdrServerOptions = {}): Promise<HerdrServer> {
  return HERDR_TARGET === "real" ? startRealHerdr(options) : startHerdrDouble(options);
}

/** `herdr` calls with `env` (socket and binary named), each bounded; for the double and the real one. */
export function herdrClientFor(
  binPath: string,
  clientEnv: Record<string, string>,
  serverEnv: Record<string, string>,
): Pick<HerdrServerBase, "herdr" | "result" | "openWorkspace" | "read" | "paneEnv"> {
  const herdr = async (
    args: readonly string[],
    runOptions: { env?: Record<string, string>; timeoutMs?: number } = {},
  ): Promise<HerdrRun> => {
    const run = await execa(binPath, [...args], {
      env: runOptions.env ?? clientEnv,
      extendEnv: false,
      reject: false,
      stdin: "ignore",
      timeout: runOptions.timeoutMs ?? CALL_TIMEOUT_MS,
      stripFinalNewline: false,
    });
    if (run.timedOut) throw new Error(`herdr ${args.join(" ")} timed out.`);
    return { exitCode: run.exitCode ?? -1, stdout: String(run.stdout), stderr: String(run.stderr) };
  };
  const result = async (args: readonly string[]): Promise<Record<string, unknown>> => {
    const run = await herdr(args);
    if (run.exitCode !== 0) throw new Error(`herdr ${args.join(" ")} exited ${run.exitCode}: ${run.stderr}`);
    return (JSON.parse(run.stdout) as { result: Record<string, unknown> }).result;
  };
  return {
    herdr,
    result,
    async openWorkspace(cwd, label) {
      const created = await result(["workspace", "create", "--cwd", cwd, "--label", label, "--focus"]);
      const rootPane = created.root_pane as { pane_id: string; tab_id: string; workspace_id: string };
      return { workspaceId: rootPane.workspace_id, tabId: rootPane.tab_id, paneId: rootPane.pane_id };
    },
    async read(paneId) {
      const run = await herdr(["pane", "read", paneId, "--source", "visible"]);
      if (run.exitCode !== 0) throw new Error(`herdr pane read ${paneId} exited ${run.exitCode}: ${run.stderr}`);
      return run.stdout;
    },
    async paneEnv(paneId) {
      const pane = (await result(["pane", "get", paneId])).pane as { tab_id: string; workspace_id: string };
      return {
        ...serverEnv,
        HERDR_ENV: "1",
        HERDR_PANE_ID: paneId,
        HERDR_TAB_ID: pane.tab_id,
        HERDR_WORKSPACE_ID: pane.workspace_id,
        HERDR_SOCKET_PATH: clientEnv.HERDR_SOCKET_PATH ?? "",
        HERDR_BIN_PATH: binPath,
      };
    },
  };
}

export async function startHerdrDouble(options: HerdrDoubleOptions = {}): Promise<HerdrDouble> {
  // The executable bit may be lost in a checkout; the double must run as `herdr` all the same.
  chmodSync(HERDR_DOUBLE_BIN, 0o755);
  const rootDir = makeTempDir("phw-herdr-");
  const home = join(rootDir, "home");
  const configHome = join(home, ".config");
  await mkdir(configHome, { recursive: true });
  const socketPath = join(configHome, "herdr", "herdr.sock");
  const serverDir = join(configHome, "herdr");
  const serverEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(
    options.env ?? { PATH: `${BIN_DIR}:${process.env.PATH ?? "/usr/bin:/bin"}`, LANG: "C.UTF-8" },
  )) {
    if (key === "TMUX" || key === "TMUX_PANE" || key.startsWith("HERDR_")) continue;
    serverEnv[key] = value;
  }
  Object.assign(serverEnv, { HOME: home, XDG_CONFIG_HOME: configHome });
  // The suite's shared compile cache (vitest.config.ts), for the double and the Pi in its panes.
  if (process.env.NODE_COMPILE_CACHE !== undefined) serverEnv.NODE_COMPILE_CACHE ??= process.env.NODE_COMPILE_CACHE;
  const clientEnv: Record<string, string> = {
    ...serverEnv,
    PATH: `${BIN_DIR}:${serverEnv.PATH ?? process.env.PATH ?? "/usr/bin:/bin"}`,
    HERDR_SOCKET_PATH: socketPath,
    HERDR_BIN_PATH: HERDR_DOUBLE_BIN,
  };

  const client = herdrClientFor(HERDR_DOUBLE_BIN, clientEnv, serverEnv);
  const { herdr } = client;

  const callLog = join(serverDir, "calls.jsonl");
  const faultsFile = join(serverDir, "faults.json");
  let killed = false;
  const kill = async (): Promise<void> => {
    if (killed) return;
    killed = true;
    await herdr(["__double", "stop"], { timeoutMs: 15_000 }).catch(() => undefined);
    await endStragglers(socketPath);
    rmSync(rootDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };

  try {
    const started = await herdr(
      [
        "__double",
        "start",
        "--version",
        options.version ?? "0.9.2",
        "--shell-delay-ms",
        String(options.shellDelayMs ?? 0),
        "--shell-swallow-ms",
        String(options.shellSwallowMs ?? 0),
        "--shell-swallow-until",
        options.shellSwallowUntil ?? "",
        "--line-cap",
        String(options.lineCap ?? 0),
        "--require-trust",
        options.requireTrust === true ? "1" : "0",
        "--first-workspace-number",
        String(options.firstWorkspaceNumber ?? 1),
        "--legacy-ids",
        options.legacyIds === true ? "1" : "0",
      ],
      { env: serverEnv },
    );
    if (started.exitCode !== 0) throw new Error(`The Herdr double did not start: ${started.stderr}`);
  } catch (error) {
    await kill();
    throw error;
  }

  return {
    kind: "double",
    version: options.version ?? "0.9.2",
    rootDir,
    home,
    socketPath,
    serverDir,
    binPath: HERDR_DOUBLE_BIN,
    serverEnv,
    clientEnv,
    ...client,
    calls() {
      if (!existsSync(callLog)) return [];
      return readFileSync(callLog, "utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as HerdrCall);
    },
    clearCalls() {
      writeFileSync(callLog, "");
    },
    setFaults(faults) {
      writeFileSync(faultsFile, JSON.stringify(faults));
    },
    clearFaults() {
      rmSync(faultsFile, { force: true });
    },
    async restart(restartOptions = {}) {
      // The double has no stopped state to act in: `whileStopped` runs before the restart.
      await restartOptions.whileStopped?.();
      const run = await herdr(["__double", "restart", "--blind-ms", String(restartOptions.blindMs ?? 750)]);
      if (run.exitCode !== 0) throw new Error(`The Herdr double did not restart: ${run.stderr}`);
    },
    kill,
  };
}

/**
 * Processes that still carry this instance's socket in their environment: a pane's children that
 * outlived the SIGHUP of the tmux server (or a double call hung by a fault). SIGTERM, then SIGKILL.
 */
export async function endStragglers(socketPath: string): Promise<void> {
  const marker = `HERDR_SOCKET_PATH=${socketPath}`;
  const find = (): number[] => {
    const pids: number[] = [];
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
      try {
        if (readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes(marker)) pids.push(Number(name));
      } catch {
        // Gone, or not ours to read.
      }
    }
    return pids;
  };
  const signal = (pids: number[], name: NodeJS.Signals): void => {
    for (const pid of pids) {
      try {
        process.kill(pid, name);
      } catch {
        // Already gone.
      }
    }
  };
  for (let attempt = 0; attempt < 40; attempt++) {
    const left = find();
    if (left.length === 0) return;
    signal(left, attempt < 20 ? "SIGTERM" : "SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const left = find();
  if (left.length > 0) throw new Error(`Processes of the Herdr double are still running: ${left.join(", ")}.`);
}

/** A double of its own for one test (other options, another server), killed afterwards whatever happens. */
export async function withHerdrDouble<T>(
  options: HerdrDoubleOptions,
  body: (double: HerdrDouble) => Promise<T>,
): Promise<T> {
  const double = await startHerdrDouble(options);
  try {
    return await body(double);
  } finally {
    await double.kill();
  }
}

/**
 * Registers tests only for the double: what the real Herdr cannot be made to show (injected faults,
 * the call log, a pretended version or id form). On the real pass they are not registered at all,
 * so nothing there is reported as skipped.
 */
export function forDoubleOnly(body: () => void): void {
  if (HERDR_TARGET === "double") body();
}

/** The double behind a `HerdrServer`, for a double-only test; throws on the real Herdr. */
export function asDouble(herdr: HerdrServer): HerdrDouble {
  if (herdr.kind !== "double") throw new Error("This test needs the Herdr double.");
  return herdr;
}

/**
 * A process Herdr detects as Pi in the pane's foreground (its title is `pi`, as Pi sets its own,
 * and it carries `HERDR_AGENT=pi`, as the launch gives the child), started from the shell there;
 * resolves once Herdr shows the pane's agent as `pi`. Ends with `stopForeground`, or with the pane.
 * The hint matters on the real Herdr: a title set after its first look at a new foreground job is
 * not looked at again unless the screen changes (src/pane.rs `should_probe_foreground_job`).
 */
export async function startFakePi(server: HerdrServerBase, paneId: string): Promise<void> {
  const run = await server.herdr([
    "pane",
    "run",
    paneId,
    // It writes a line once its title is set: a change on the screen after the title opens Herdr's
    // window of quick rechecks (src/pane.rs, the acquisition window), so a slow start under load is
    // still seen; the first look alone may come before Node has set its title.
    `HERDR_AGENT=pi ${process.execPath} -e "process.title = 'pi'; process.stdout.write('pi\\n'); setInterval(() => {}, 1000)"`,
  ]);
  if (run.exitCode !== 0) throw new Error(`herdr pane run ${paneId} exited ${run.exitCode}: ${run.stderr}`);
  await waitFor(
    async () => {
      const pane = (await server.result(["pane", "get", paneId])).pane as { agent?: string };
      return pane.agent === "pi" ? true : undefined;
    },
    { timeoutMs: 15_000, description: "Herdr to detect Pi in the pane" },
  );
}

/** Ctrl-C to the pane's foreground; resolves once its shell holds the foreground again. */
export async function stopForeground(server: HerdrServerBase, paneId: string): Promise<void> {
  await server.herdr(["pane", "send-keys", paneId, "C-c"]);
  await waitFor(
    async () => {
      const info = (await server.result(["pane", "process-info", "--pane", paneId])).process_info as {
        shell_pid?: number;
        foreground_process_group_id?: number;
      };
      return info.shell_pid !== undefined && info.shell_pid === info.foreground_process_group_id ? true : undefined;
    },
    { timeoutMs: 10_000, description: "the pane's shell to get the foreground back" },
  );
}
