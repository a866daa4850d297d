/**
 * A private tmux server for tests: its own socket in a temp dir, no config file, an isolated
 * environment and a shell without rc files, so tests never touch the user's tmux or dotfiles.
 * Always `kill()` it (afterEach/afterAll); kill is idempotent.
 */
import { mkdtemp, mkdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTmuxServer } from "../../scripts/lib/private-tmux.ts";

export interface PrivateTmuxOptions {
  /** `bash` (default: `bash --norc --noprofile`) or `sh`. */
  shell?: "bash" | "sh";
  /** Extra variables for the server's (and so every pane's) environment. */
  env?: Record<string, string>;
  /** An rc file for the panes' bash (`--rcfile`), e.g. a slow start-up that swallows typed input. */
  rcFile?: string;
}

export interface PrivateTmux {
  socketPath: string;
  /** The id (`$N`) of the session named `test`. */
  sessionId: string;
  firstPaneId: string;
  /** The temp dir holding the socket and HOME; removed by `kill()`. */
  rootDir: string;
  /** The environment the server was started with. */
  env: Record<string, string>;
  /** Runs `tmux -S <socket> ...args` and returns stdout; throws on failure. */
  tmux(args: string[]): Promise<string>;
  /** The visible text of a pane. */
  capturePane(paneId: string): Promise<string>;
  kill(): Promise<void>;
}

export async function startPrivateTmux(options: PrivateTmuxOptions = {}): Promise<PrivateTmux> {
  // Short path: unix socket paths are limited to ~107 bytes.
  const rootDir = await realpath(await mkdtemp(join(tmpdir(), "phw-tmux-")));
  const home = join(rootDir, "home");
  await mkdir(home);
  const socketPath = join(rootDir, "sock");
  const shellCommand =
    options.shell === "sh"
      ? ["/bin/sh"]
      : options.rcFile !== undefined
        ? ["/bin/bash", "--noprofile", "--rcfile", options.rcFile, "-i"]
        : ["/bin/bash", "--norc", "--noprofile"];
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: home,
    SHELL: shellCommand[0] ?? "/bin/sh",
    PS1: "$ ",
    HISTFILE: join(home, ".history"),
    TERM: "xterm-256color",
    LANG: "C.UTF-8",
    TMPDIR: rootDir,
    // The suite's shared compile cache (vitest.config.ts): a Pi in a pane would start cold in TMPDIR.
    ...(process.env.NODE_COMPILE_CACHE === undefined ? {} : { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }),
    ...options.env,
  };

  const server = await startTmuxServer({
    socketPath,
    env,
    sessionName: "test",
    width: 200,
    height: 50,
    shell: shellCommand,
  }).catch(async (error: unknown) => {
    await rm(rootDir, { recursive: true, force: true });
    throw error;
  });
  const tmux = (args: string[]): Promise<string> => server.run(args);
  const kill = async (): Promise<void> => {
    await server.kill();
    // Pane processes get SIGHUP from kill-server and may still be writing (Node's compile cache) for a moment.
    await rm(rootDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };
  return {
    socketPath,
    sessionId: server.sessionId,
    firstPaneId: server.firstPaneId,
    rootDir,
    env,
    tmux,
    capturePane: (paneId) => capture(tmux, paneId),
    kill,
  };
}

function capture(tmux: PrivateTmux["tmux"], paneId: string): Promise<string> {
  return tmux(["capture-pane", "-p", "-J", "-t", paneId]);
}

/** `$TMUX` and `$TMUX_PANE` as a shell in `pane` of this server has them (what a Pi started there sees). */
export async function paneEnv(
  tmux: PrivateTmux,
  pane = tmux.firstPaneId,
): Promise<{ TMUX: string; TMUX_PANE: string }> {
  const serverPid = (await tmux.tmux(["display-message", "-p", "#{pid}"])).trim();
  return { TMUX: `${tmux.socketPath},${serverPid},0`, TMUX_PANE: pane };
}

/** Polls until `probe` returns a truthy value and returns it; throws after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  options: { timeoutMs?: number; intervalMs?: number; description?: string } = {},
): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() >= deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${options.description ?? "a condition"}.`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
