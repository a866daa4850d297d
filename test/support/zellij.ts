/**
 * The real zellij (0.45.1, installed by scripts/tools/zellij.sh) for tests: a session of its own per
 * instance, with a real zellij client attached in a private tmux pane (the terminal a user runs
 * zellij in: zellij lays tabs out only for an attached client), driven through the real CLI.
 *
 * Invariants:
 * - Every instance lives in its own temp dir: HOME (unless the caller gives one), ZELLIJ_CONFIG_DIR (a config without the
 *   start-up tips and release notes), XDG_RUNTIME_DIR and so its socket dir, so it never touches the
 *   user's zellij, ~/.config or tmux.
 * - The session's environment (and so every pane's) is the one given, without TMUX/TMUX_PANE or
 *   any ZELLIJ_* of the caller; panes run `$SHELL` (bash without rc files unless told otherwise).
 * - `kill()` kills the zellij session and the tmux server that held its client, ends every process
 *   still carrying this instance's socket dir in its environment, and removes the dir; idempotent.
 * - Every call has a timeout.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { makeTempDir } from "./git-repo.ts";
import { paneShellRc, paneShellVars } from "./pane-shell-rc.mjs";
import { PROJECT_ROOT } from "./pi.ts";
import { startPrivateTmux, type PrivateTmux, waitFor } from "./tmux.ts";

const BIN_DIR = join(PROJECT_ROOT, "node_modules", ".bin");
const CALL_TIMEOUT_MS = 20_000;
export const ZELLIJ_SESSION = "tests";

/** The real zellij for this run, when installed (scripts/tools/zellij.sh), else undefined. */
export function zellijBin(): string | undefined {
  const given = process.env.PI_HANDOFF_ZELLIJ_BIN;
  if (given !== undefined && given !== "" && existsSync(given)) return given;
  try {
    return execFileSync("bash", [join(PROJECT_ROOT, "scripts", "tools", "zellij.sh"), "--locate"], {
      encoding: "utf8",
      timeout: 10_000,
    }).trim();
  } catch {
    return undefined;
  }
}

export interface ZellijRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface ZellijPaneEntry {
  id: number;
  is_plugin: boolean;
  is_focused: boolean;
  title: string;
  exited: boolean;
  exit_status: number | null;
  terminal_command: string | null;
  pane_cwd?: string;
  tab_id: number;
  tab_name: string;
}

export interface ZellijSession {
  bin: string;
  rootDir: string;
  home: string;
  sessionName: string;
  /** What ZELLIJ_SOCKET_DIR names for this instance. */
  socketDir: string;
  /** The session's environment (every pane's). */
  serverEnv: Record<string, string>;
  /** For a process outside the session that talks to it: socket dir and session named explicitly. */
  clientEnv: Record<string, string>;
  /** The environment zellij gives a process in terminal pane `paneId` (`terminal_N`). */
  paneEnv(paneId: string): Record<string, string>;
  /** The first tab's first terminal pane (`terminal_0`): where the parent's shell runs. */
  firstPaneId: string;
  /** Runs `zellij --session <name> ...args`; never throws for a non-zero exit. */
  zellij(args: readonly string[]): Promise<ZellijRun>;
  /** Every terminal pane, as `action list-panes --all --json` lists them. */
  panes(): Promise<ZellijPaneEntry[]>;
  /** The tab the attached client shows. */
  focusedTabId(): Promise<number | undefined>;
  /** The visible text of a pane (`action dump-screen --pane-id`). */
  read(paneId: string): Promise<string>;
  /** Types text into a pane (`action write-chars`), and Enter (`action write 13`). */
  type(paneId: string, text: string): Promise<void>;
  enter(paneId: string): Promise<void>;
  kill(): Promise<void>;
}

export interface ZellijOptions {
  /** The session's environment (default: PATH with the project's bin, LANG and the isolated HOME). */
  env?: Record<string, string>;
  /** A slow pane shell start-up (test/support/pane-shell-rc.mjs), as for the Herdr tests. */
  shellDelayMs?: number;
  shellSwallowMs?: number;
}

export async function startZellij(options: ZellijOptions = {}): Promise<ZellijSession> {
  const bin = zellijBin();
  if (bin === undefined) throw new Error("No real zellij: run scripts/tools/zellij.sh (it installs zellij 0.45.1).");
  const rootDir = makeTempDir("phw-zellij-");
  // The caller's HOME when it gives one (a Pi sandbox's), as the tmux rig keeps it.
  const home = options.env?.HOME ?? join(rootDir, "home");
  const configDir = join(rootDir, "config");
  const runtimeDir = join(rootDir, "run");
  for (const dir of [home, configDir, runtimeDir]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(
    join(configDir, "config.kdl"),
    ["show_startup_tips false", "show_release_notes false", 'default_shell "/bin/bash"', ""].join("\n"),
  );
  if (!existsSync(join(home, ".bashrc"))) writeFileSync(join(home, ".bashrc"), paneShellRc());
  const socketDir = join(runtimeDir, "zellij");
  const serverEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(
    options.env ?? { PATH: `${BIN_DIR}:${process.env.PATH ?? "/usr/bin:/bin"}`, LANG: "C.UTF-8" },
  )) {
    if (key === "TMUX" || key === "TMUX_PANE" || key.startsWith("ZELLIJ") || key.startsWith("HERDR_")) continue;
    serverEnv[key] = value;
  }
  Object.assign(serverEnv, {
    HOME: home,
    SHELL: "/bin/bash",
    TERM: "xterm-256color",
    ZELLIJ_CONFIG_DIR: configDir,
    XDG_RUNTIME_DIR: runtimeDir,
    ZELLIJ_SOCKET_DIR: socketDir,
    ...paneShellVars(options),
  });
  if (process.env.NODE_COMPILE_CACHE !== undefined) serverEnv.NODE_COMPILE_CACHE ??= process.env.NODE_COMPILE_CACHE;
  // zellij on PATH in every pane, as where a user installed it: a Pi there runs `zellij action`.
  serverEnv.PATH = `${dirname(bin)}:${serverEnv.PATH ?? "/usr/bin:/bin"}`;
  const clientEnv = { ...serverEnv, PATH: `${BIN_DIR}:${serverEnv.PATH}` };

  const zellij = async (args: readonly string[], timeoutMs = CALL_TIMEOUT_MS): Promise<ZellijRun> => {
    // As the product's client (src/mux/zellij/client.ts): "no active session" from a client that lost
    // its one status round trip on a loaded machine sent nothing, so an action is asked again.
    for (const recheckMs of [150, 350, undefined]) {
      const run = await execa(bin, ["--session", ZELLIJ_SESSION, ...args], {
        env: clientEnv,
        extendEnv: false,
        reject: false,
        stdin: "ignore",
        timeout: timeoutMs,
      });
      if (run.timedOut) throw new Error(`zellij ${args.join(" ")} timed out.`);
      const result = { exitCode: run.exitCode ?? -1, stdout: String(run.stdout), stderr: String(run.stderr) };
      if (result.exitCode === 0 || !/no active session/i.test(result.stderr) || recheckMs === undefined) return result;
      await new Promise((resolve) => setTimeout(resolve, recheckMs));
    }
    throw new Error("unreachable");
  };
  const panes = async (): Promise<ZellijPaneEntry[]> => {
    // zellij 0.45 can answer with an empty or cut-off list on a loaded machine: ask again.
    for (let attempt = 1; ; attempt++) {
      const listed = await zellij(["action", "list-panes", "--all", "--json"]);
      if (listed.exitCode !== 0) throw new Error(`zellij list-panes exited ${listed.exitCode}: ${listed.stderr}`);
      try {
        return (JSON.parse(listed.stdout) as ZellijPaneEntry[]).filter((pane) => !pane.is_plugin);
      } catch (error) {
        if (attempt >= 10) throw new Error(`zellij list-panes printed no list: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };

  let terminal: PrivateTmux | undefined;
  let killed = false;
  const kill = async (): Promise<void> => {
    if (killed) return;
    killed = true;
    await execa(bin, ["kill-session", ZELLIJ_SESSION], {
      env: clientEnv,
      extendEnv: false,
      reject: false,
      timeout: 10_000,
    });
    await terminal?.kill();
    await endStragglers(socketDir);
    rmSync(rootDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };

  try {
    // The terminal the user runs zellij in: a private tmux pane, as wide as the other rigs' panes.
    terminal = await startPrivateTmux({ env: clientEnv });
    // A zellij that dies at start leaves its pane (and its last words) to be read.
    await terminal.tmux(["set-option", "-g", "remain-on-exit", "on"]);
    // No `zellij action` until the client shows the session: zellij 0.45.1's server panics when a
    // client leaves before the session is set up (zellij-server src/lib.rs, RemoveClient), and
    // each action is a client. The tab bar's session name on the terminal's screen is the sign.
    await terminal.tmux(["respawn-pane", "-k", "-t", terminal.firstPaneId, bin, "--session", ZELLIJ_SESSION]);
    const shown = terminal;
    await waitFor(async () => (await shown.capturePane(shown.firstPaneId)).includes(`Zellij (${ZELLIJ_SESSION})`), {
      timeoutMs: 30_000,
      intervalMs: 50,
      description: "the zellij client to show its session",
    });
    await waitFor(
      async () => {
        const listed = await zellij(["action", "list-panes", "--all", "--json"]);
        if (listed.exitCode !== 0) return undefined;
        try {
          return (JSON.parse(listed.stdout) as ZellijPaneEntry[]).some((pane) => !pane.is_plugin) ? true : undefined;
        } catch {
          // An empty or cut-off answer: ask again.
          return undefined;
        }
      },
      { timeoutMs: 30_000, intervalMs: 100, description: "the zellij session's first pane" },
    );
  } catch (error) {
    // What the terminal shows says why zellij did not come up (a first-run screen, a crash).
    const screen = (await terminal?.capturePane(terminal.firstPaneId).catch(() => "")) ?? "";
    await kill();
    throw new Error(`${(error as Error).message}\nThe terminal zellij was started in shows:\n${screen}`);
  }

  return {
    bin,
    rootDir,
    home,
    sessionName: ZELLIJ_SESSION,
    socketDir,
    serverEnv,
    clientEnv,
    paneEnv: (paneId) => ({
      ...serverEnv,
      ZELLIJ: "0",
      ZELLIJ_SESSION_NAME: ZELLIJ_SESSION,
      ZELLIJ_PANE_ID: paneId.replace(/^terminal_/, ""),
    }),
    firstPaneId: "terminal_0",
    zellij,
    panes,
    async focusedTabId() {
      const clients = await zellij(["action", "list-clients"]);
      const paneId = /^\s*\d+\s+(terminal_\d+)/m.exec(clients.stdout)?.[1];
      const pane = (await panes()).find((entry) => `terminal_${entry.id}` === paneId);
      return pane?.tab_id;
    },
    async read(paneId) {
      const run = await zellij(["action", "dump-screen", "--pane-id", paneId]);
      if (run.exitCode !== 0) throw new Error(`zellij dump-screen ${paneId} exited ${run.exitCode}: ${run.stderr}`);
      return run.stdout;
    },
    async type(paneId, text) {
      const run = await zellij(["action", "write-chars", "--pane-id", paneId, text]);
      if (run.exitCode !== 0) throw new Error(`zellij write-chars exited ${run.exitCode}: ${run.stderr}`);
    },
    async enter(paneId) {
      await zellij(["action", "write", "--pane-id", paneId, "13"]);
    },
    kill,
  };
}

/** Processes that still carry this instance's socket dir in their environment: SIGTERM, then SIGKILL. */
async function endStragglers(socketDir: string, spared: ReadonlySet<number> = new Set()): Promise<void> {
  const marker = `ZELLIJ_SOCKET_DIR=${socketDir}`;
  const find = (): number[] =>
    readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid && !spared.has(Number(name)))
      .filter((name) => {
        try {
          return readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes(marker);
        } catch {
          return false;
        }
      })
      .map(Number);
  for (let attempt = 0; attempt < 40; attempt++) {
    const left = find();
    if (left.length === 0) return;
    for (const pid of left) {
      try {
        process.kill(pid, attempt < 20 ? "SIGTERM" : "SIGKILL");
      } catch {
        // Gone.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
