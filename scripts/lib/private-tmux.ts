/**
 * A private tmux server for the demo: its own socket, no config file, only the scratch
 * environment, and bash without rc files, so the demo never touches the user's tmux or dotfiles.
 */
import { execa } from "execa";

const TMUX_CALL_TIMEOUT_MS = 10_000;
const SHELL = ["/bin/bash", "--norc", "--noprofile"];
export const SESSION_NAME = "demo";

export interface PrivateTmux {
  socketPath: string;
  firstPaneId: string;
  /** Runs `tmux -S <socket> ...args`; returns stdout; throws on failure. */
  run(args: readonly string[]): Promise<string>;
  /** The visible text of a pane, wrapped lines joined, trailing blank lines removed. */
  capturePane(paneId: string): Promise<string>;
  /** The visible screen with its colours as ANSI SGR codes (`capture-pane -e -p -J`), and the pane's width. */
  captureAnsi(paneId: string): Promise<{ text: string; columns: number }>;
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
  const { socketPath, env } = options;
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

  // `;` separates tmux commands: the first pane gets the rc-less shell explicitly, later windows
  // (the child's) through default-command; `exec` keeps the pane's pid the shell's own.
  await run([
    "-f", "/dev/null",
    "new-session", "-d", "-s", SESSION_NAME, "-x", String(options.width), "-y", String(options.height), "--", ...SHELL,
    ";", "set", "-g", "default-shell", SHELL[0] ?? "/bin/bash",
    ";", "set", "-g", "default-command", `exec ${SHELL.join(" ")}`,
    ";", "set", "-s", "escape-time", "0",
  ]).catch(async (error: unknown) => {
    await kill();
    throw error;
  });
  const firstPaneId = (await run(["display-message", "-p", "-t", `${SESSION_NAME}:`, "#{pane_id}"])).trim();
  return {
    socketPath,
    firstPaneId,
    run,
    capturePane: async (paneId) => trimScreen(await run(["capture-pane", "-p", "-J", "-t", paneId])),
    captureAnsi: async (paneId) => {
      const columns = Number((await run(["display-message", "-p", "-t", paneId, "#{pane_width}"])).trim());
      return { text: await run(["capture-pane", "-e", "-p", "-J", "-t", paneId]), columns };
    },
    listPanes,
    kill,
  };
}
