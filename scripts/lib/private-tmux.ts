/**
 * A private tmux server: its own socket, no config file, only the environment it is given, and
 * bash without rc files, so neither the demo nor the tests ever touch the user's tmux or dotfiles.
 * `startTmuxServer` is the core both use (test/support/tmux.ts wraps it for tests);
 * `startPrivateTmux` is the demo's, with screen captures and `extended-keys` on, as Pi asks a tmux
 * user to set it.
 *
 * Invariants: every tmux call has a timeout; `kill()` is idempotent and never throws.
 */
import { execa } from "execa";

const TMUX_CALL_TIMEOUT_MS = 10_000;
const SHELL = ["/bin/bash", "--norc", "--noprofile"];
export const SESSION_NAME = "demo";

export interface TmuxServer {
  /** The id (`$N`) of the first session. */
  sessionId: string;
  firstPaneId: string;
  /** Runs `tmux -S <socket> ...args`; returns stdout; throws on failure. */
  run(args: readonly string[]): Promise<string>;
  /** Kills the server (every pane gets SIGHUP); idempotent, never throws. */
  kill(): Promise<void>;
}

/**
 * Starts the server with one session. The first pane runs `shell` explicitly and later windows
 * get it through default-command, with `exec` so a pane's pid is the shell itself (dash does not
 * exec a lone `-c` command).
 */
export async function startTmuxServer(options: {
  socketPath: string;
  env: Record<string, string>;
  sessionName: string;
  width: number;
  height: number;
  shell?: readonly string[];
}): Promise<TmuxServer> {
  const { socketPath, env } = options;
  const shell = options.shell ?? SHELL;
  const run = async (args: readonly string[]): Promise<string> => {
    const result = await execa("tmux", ["-S", socketPath, ...args], {
      env,
      extendEnv: false,
      stdin: "ignore",
      timeout: TMUX_CALL_TIMEOUT_MS,
    });
    return result.stdout;
  };
  let killed = false;
  const kill = async (): Promise<void> => {
    if (killed) return;
    killed = true;
    await execa("tmux", ["-S", socketPath, "kill-server"], {
      env,
      extendEnv: false,
      stdin: "ignore",
      reject: false,
      timeout: TMUX_CALL_TIMEOUT_MS,
    });
  };
  try {
    // `;` separates tmux commands.
    await run([
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      options.sessionName,
      "-x",
      String(options.width),
      "-y",
      String(options.height),
      "--",
      ...shell,
      ";",
      "set",
      "-g",
      "default-shell",
      shell[0] ?? "/bin/sh",
      ";",
      "set",
      "-g",
      "default-command",
      `exec ${shell.join(" ")}`,
      ";",
      "set",
      "-s",
      "escape-time",
      "0",
    ]);
    const [sessionId = "", firstPaneId = ""] = (
      await run(["display-message", "-p", "-t", `${options.sessionName}:`, "#{session_id} #{pane_id}"])
    ).split(" ");
    return { sessionId, firstPaneId, run, kill };
  } catch (error) {
    await kill();
    throw error;
  }
}

export interface PrivateTmux {
  socketPath: string;
  firstPaneId: string;
  /** Runs `tmux -S <socket> ...args`; returns stdout; throws on failure. */
  run(args: readonly string[]): Promise<string>;
  /** The visible text of a pane, wrapped lines joined, trailing blank lines removed. */
  capturePane(paneId: string): Promise<string>;
  /** Every pane as `{ paneId, pid, title }` (title: `window:index command`). */
  listPanes(): Promise<PaneInfo[]>;
  /** Kills the server (every pane gets SIGHUP); idempotent, never throws. */
  kill(): Promise<void>;
}

export interface PaneInfo {
  paneId: string;
  pid: number;
  title: string;
}

export function trimScreen(screen: string): string {
  return screen
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n")
    .replace(/\n+$/, "");
}

export async function startPrivateTmux(options: {
  socketPath: string;
  env: Record<string, string>;
  width: number;
  height: number;
}): Promise<PrivateTmux> {
  const server = await startTmuxServer({ ...options, sessionName: SESSION_NAME });
  const { run } = server;
  // As Pi asks a tmux user to set it (it warns on every start otherwise): the demo shows Pi as set up.
  await run(["set", "-s", "extended-keys", "on"]);
  const listPanes = async (): Promise<PaneInfo[]> => {
    const out = await run(["list-panes", "-a", "-F", "#{pane_id}\t#{pane_pid}\t#{window_index}:#{window_name}"]);
    return out
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => {
        const [paneId = "", pid = "0", title = ""] = line.split("\t");
        return { paneId, pid: Number(pid), title };
      });
  };
  return {
    socketPath: options.socketPath,
    firstPaneId: server.firstPaneId,
    run,
    capturePane: async (paneId) => trimScreen(await run(["capture-pane", "-p", "-J", "-t", paneId])),
    listPanes,
    kill: server.kill,
  };
}
