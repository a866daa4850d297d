/**
 * The real Herdr (0.8.2, built by scripts/tools/herdr.sh) for tests: a headless server of its own
 * per instance (`herdr server`), talked to through the real CLI, stopped and started again for
 * restart scenarios (the headless server restores workspaces and resumes agents by itself).
 *
 * Invariants:
 * - Every instance lives in its own temp dir: HOME, XDG_CONFIG_HOME (so its socket and session.json),
 *   XDG_RUNTIME_DIR, XDG_STATE_HOME, XDG_DATA_HOME and XDG_CACHE_HOME all inside it, so it never
 *   touches the real ~/.config/herdr, ~/.herdr or the user's tmux; its worktrees default to
 *   `<home>/.herdr/worktrees`, as the double's do.
 * - The server environment (and so every pane's) is the one given, without TMUX/TMUX_PANE or any
 *   HERDR_*; panes run `$SHELL` (bash unless the caller says otherwise).
 * - `kill()` stops the server (`herdr server stop`, then a signal), ends every
 *   process still carrying this instance's socket in its environment, waits until none is left and
 *   removes the dir. It is idempotent.
 * - Every call has a timeout.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "./git-repo.ts";
import type { HerdrRun, HerdrServerBase, HerdrServerOptions } from "./herdr.ts";
import { endStragglers, herdrClientFor } from "./herdr.ts";
import { paneShellRc, paneShellVars } from "./pane-shell-rc.mjs";
import { PROJECT_ROOT } from "./pi.ts";
import { waitFor } from "./tmux.ts";

const BIN_DIR = join(PROJECT_ROOT, "node_modules", ".bin");
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 15_000;

/** The path of the real `herdr` for this run (the vitest config locates it), or undefined. */
export function realHerdrBin(): string | undefined {
  const bin = process.env.PI_HANDOFF_HERDR_BIN;
  return bin !== undefined && bin !== "" && existsSync(bin) ? bin : undefined;
}

export interface RealHerdr extends HerdrServerBase {
  kind: "real";
}

export async function startRealHerdr(options: HerdrServerOptions = {}): Promise<RealHerdr> {
  const binPath = realHerdrBin();
  if (binPath === undefined)
    throw new Error("No real herdr: run scripts/tools/herdr.sh (PI_HANDOFF_HERDR_BIN is unset).");
  const rootDir = makeTempDir("phw-herdr-real-");
  const home = join(rootDir, "home");
  const configHome = join(home, ".config");
  const serverDir = join(configHome, "herdr");
  mkdirSync(serverDir, { recursive: true });
  for (const dir of ["run", "state", "data", "cache"]) mkdirSync(join(rootDir, dir), { recursive: true, mode: 0o700 });
  // No onboarding screen, should a client ever attach; panes as wide as the double's (200 columns
  // beside Herdr's 26-column sidebar) and as tall, so screens read the same on both.
  writeFileSync(
    join(serverDir, "config.toml"),
    "onboarding = false\n\n[server]\nheadless_cols = 226\nheadless_rows = 51\n",
  );
  // The panes' bash (interactive, not a login shell on Linux) reads this: the tests' fixed prompt
  // and, where asked, a slow start-up (the same file the double's panes run).
  writeFileSync(join(home, ".bashrc"), paneShellRc());
  const socketPath = join(serverDir, "herdr.sock");

  const serverEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(
    options.env ?? { PATH: `${BIN_DIR}:${process.env.PATH ?? "/usr/bin:/bin"}`, LANG: "C.UTF-8" },
  )) {
    // Another server's start-up switches (a test passing `serverEnv` on) are not this one's: its own
    // options say, as the double's do.
    if (key === "TMUX" || key === "TMUX_PANE" || key.startsWith("HERDR_") || key.startsWith("PANE_SHELL_")) continue;
    serverEnv[key] = value;
  }
  Object.assign(serverEnv, {
    HOME: home,
    XDG_CONFIG_HOME: configHome,
    XDG_RUNTIME_DIR: join(rootDir, "run"),
    XDG_STATE_HOME: join(rootDir, "state"),
    XDG_DATA_HOME: join(rootDir, "data"),
    XDG_CACHE_HOME: join(rootDir, "cache"),
  });
  serverEnv.SHELL ??= "/bin/bash";
  Object.assign(serverEnv, paneShellVars(options));
  if (process.env.NODE_COMPILE_CACHE !== undefined) serverEnv.NODE_COMPILE_CACHE ??= process.env.NODE_COMPILE_CACHE;
  const clientEnv: Record<string, string> = {
    ...serverEnv,
    PATH: `${BIN_DIR}:${serverEnv.PATH ?? process.env.PATH ?? "/usr/bin:/bin"}`,
    HERDR_SOCKET_PATH: socketPath,
    HERDR_BIN_PATH: binPath,
  };
  const client = herdrClientFor(binPath, clientEnv, serverEnv);

  let server: ChildProcess | undefined;
  let serverExit: Promise<void> = Promise.resolve();
  const startServer = async (): Promise<void> => {
    const log = openSync(join(rootDir, "server.log"), "a");
    const child = spawn(binPath, ["server"], {
      env: serverEnv,
      cwd: home,
      stdio: ["ignore", log, log],
      detached: true,
    });
    server = child;
    serverExit = new Promise((resolve) => child.once("exit", () => resolve()));
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`herdr server exited ${child.exitCode}: ${serverLog()}`);
        if (!existsSync(socketPath)) return undefined;
        const ping = await client.herdr(["workspace", "list"], { timeoutMs: 5_000 }).catch(() => undefined);
        return ping?.exitCode === 0 ? true : undefined;
      },
      { timeoutMs: START_TIMEOUT_MS, intervalMs: 50, description: "the real Herdr server to answer" },
    );
  };
  const serverLog = (): string => {
    const file = join(rootDir, "server.log");
    return existsSync(file) ? readFileSync(file, "utf8").slice(-2_000) : "";
  };
  const stopServer = async (): Promise<void> => {
    const child = server;
    server = undefined;
    if (child === undefined || child.exitCode !== null) return;
    await client.herdr(["server", "stop"], { timeoutMs: STOP_TIMEOUT_MS }).catch(() => undefined);
    const stopped = await Promise.race([
      serverExit.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), STOP_TIMEOUT_MS)),
    ]);
    if (!stopped) {
      try {
        process.kill(-(child.pid ?? 0), "SIGKILL");
      } catch {
        // Already gone.
      }
      await serverExit;
    }
  };

  let killed = false;
  const kill = async (): Promise<void> => {
    if (killed) return;
    killed = true;
    await stopServer();
    await endStragglers(socketPath);
    rmSync(rootDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };

  try {
    await startServer();
  } catch (error) {
    await kill();
    throw error;
  }
  const version = (await client.herdr(["--version"])).stdout.trim();

  const instance: RealHerdr = {
    kind: "real",
    version,
    rootDir,
    home,
    socketPath,
    serverDir,
    binPath,
    serverEnv,
    clientEnv,
    ...client,
    async restart(restartOptions = {}) {
      await stopServer();
      await restartOptions.whileStopped?.();
      await startServer();
    },
    kill,
  };
  return instance;
}

export type { HerdrRun };
