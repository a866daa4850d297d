/**
 * Benchmark (g): a whole handoff on the real Herdr against the same handoff on tmux, from the
 * command's start until the child Pi confirmed (its acknowledgement in the manifest), with the real
 * Pi on the offline faux model; the two backends alternate run by run in one process, so load
 * falls on both alike. Stated beside it: what the Herdr server itself costs (one CLI round trip,
 * its resident memory).
 *
 * Invariants: everything lives in one temp dir (HOME, XDG dirs, agent dir, a private tmux socket,
 * a Herdr server of its own); the Herdr server and the tmux server are always stopped; without a
 * built Herdr (scripts/tools/herdr.sh) the part is skipped and says so.
 */
import { execFileSync, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { benchEnv } from "./bench-env.ts";
import { CURRENT_SESSION_VERSION, getPackageDir, SessionManager } from "@earendil-works/pi-coding-agent";
import { GitCli } from "../../src/git/git.ts";
import { HandoffTransaction } from "../../src/handoff/transaction.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { HerdrMultiplexer } from "../../src/mux/herdr/herdr.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux/tmux.ts";
import type { Multiplexer } from "../../src/mux/types.ts";
import { ForkWorker, locatePiSessionModule, runFork } from "../../src/session/fork-runner.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";

const PROJECT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const NODE_BIN = realpathSync(join(PROJECT, "node_modules", ".bin", "node"));
const PI_CLI = realpathSync(join(PROJECT, "node_modules", ".bin", "pi"));
const FAUX_EXTENSION = join(PROJECT, "test", "support", "fixtures", "faux-provider.ts");
const EXTENSION = join(PROJECT, "pi-extension", "index.ts");
const TIMEOUT_MS = 60_000;

export interface HerdrVsTmuxResult {
  herdrVersion: string;
  /** Command start to child confirmed, per run, on each backend. */
  herdrMs: number[];
  tmuxMs: number[];
  /** One `herdr workspace list` round trip (a fresh client process each), per sample. */
  herdrCallMs: number[];
  /** The Herdr server's resident memory after the runs, MB. */
  herdrServerRssMB: number;
}

function locateHerdr(): string | undefined {
  try {
    return execFileSync("bash", [join(PROJECT, "scripts", "tools", "herdr.sh"), "--locate"], {
      encoding: "utf8",
      timeout: 10_000,
    }).trim();
  } catch {
    return undefined;
  }
}

async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function measureHerdrVsTmux(options: { runs: number }): Promise<HerdrVsTmuxResult | { skipped: string }> {
  const herdrBin = locateHerdr();
  if (herdrBin === undefined) return { skipped: "no real Herdr is built here (bash scripts/tools/herdr.sh builds it)" };
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-herdr-")));
  const home = join(root, "home");
  const agentDir = join(root, "agent");
  const repo = join(root, "repo");
  for (const dir of [join(home, ".config", "herdr"), join(agentDir, "extensions"), repo, join(root, "run")])
    mkdirSync(dir, { recursive: true });
  copyFileSync(FAUX_EXTENSION, join(agentDir, "extensions", "faux-provider.ts"));
  writeFileSync(join(home, ".config", "herdr", "config.toml"), "onboarding = false\n");
  writeFileSync(join(home, ".bashrc"), "PS1='$ '\n");
  const env = benchEnv(
    PROJECT,
    { root, home, agentDir },
    {
      SHELL: "/bin/bash",
      XDG_RUNTIME_DIR: join(root, "run"),
      XDG_STATE_HOME: join(root, "state"),
    },
  );

  const run = (file: string, args: string[], cwd = repo) =>
    execa(file, args, { cwd, env, extendEnv: false, stdin: "ignore", timeout: TIMEOUT_MS });
  const tmuxSocket = join(root, "tmux.sock");
  const herdrSocket = join(home, ".config", "herdr", "herdr.sock");
  const herdrEnv = { ...env, HERDR_SOCKET_PATH: herdrSocket, HERDR_BIN_PATH: herdrBin };
  const server = spawn(herdrBin, ["server"], { env, cwd: home, stdio: "ignore", detached: true });
  try {
    await run("git", ["init", "-q", "-b", "main"]);
    writeFileSync(join(repo, "README.md"), "bench\n");
    await run("git", ["add", "-A"]);
    await run("git", ["commit", "-q", "-m", "bench repository"]);
    await run(NODE_BIN, [PI_CLI, "-p", "--model", "faux/faux-1", "describe this repository"]);
    const sessionDir = defaultSessionDir(repo, agentDir);
    const parentFile = join(sessionDir, readdirSync(sessionDir)[0] ?? "");
    const parent = SessionManager.open(parentFile);
    const leafId = parent.getLeafId();
    if (leafId === null) throw new Error("The bench parent session is empty.");

    await run("tmux", [
      "-S",
      tmuxSocket,
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "bench",
      "-x",
      "200",
      "-y",
      "50",
    ]);
    await run("tmux", ["-S", tmuxSocket, "set", "-g", "default-command", "exec /bin/bash --norc --noprofile"]);
    const tmuxSession = (
      await run("tmux", ["-S", tmuxSocket, "display-message", "-p", "-t", "bench:", "#{session_id}"])
    ).stdout.trim();
    const herdr = (args: string[]) =>
      execa(herdrBin, args, { env: herdrEnv, extendEnv: false, stdin: "ignore", timeout: TIMEOUT_MS, reject: false });
    await until(
      async () => ((await herdr(["workspace", "list"])).exitCode === 0 ? true : undefined),
      "the Herdr server",
    );
    const parentPane = JSON.parse(
      (await herdr(["workspace", "create", "--cwd", repo, "--label", "parent", "--focus"])).stdout,
    ).result.root_pane.pane_id as string;

    const git = new GitCli({ env });
    const store = ManifestStore.forAgentDir(agentDir);
    const sessionModulePath = locatePiSessionModule(getPackageDir());
    const handoff = async (mux: Multiplexer, branch: string, childEnv: Record<string, string>): Promise<number> => {
      const started = performance.now();
      // One warm worker per command, as /handoff-worktree starts one.
      const worker =
        sessionModulePath !== undefined ? ForkWorker.start(sessionModulePath, CURRENT_SESSION_VERSION) : undefined;
      const outcome = await new HandoffTransaction({
        git,
        store,
        selectMux: () => ({ ok: true, mux }),
        fork: (request) => runFork(request, { worker, host: { SessionManager, CURRENT_SESSION_VERSION } }),
        now: () => new Date(),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        progress: () => {},
        timeouts: { shellMs: 15_000, confirmMs: 45_000, pollMs: 25 },
      }).run({
        args: { branch, base: "HEAD", baseGiven: false, focus: false },
        parent: {
          sessionFile: parentFile,
          sessionFileExists: true,
          sessionId: parent.getSessionId(),
          leafId,
          cwd: repo,
          sessionDir,
        },
        model: { provider: "faux", id: "faux-1", available: true },
        thinkingLevel: "off",
        projectTrusted: false,
        agentDir,
        piCommand: [NODE_BIN, PI_CLI],
        extraPiArgs: ["--extension", EXTENSION],
        env: childEnv,
      });
      if (outcome.code !== "running")
        throw new Error(`The benchmark handoff on ${mux.kind} ended ${outcome.code}: ${outcome.message}`);
      return performance.now() - started;
    };

    const result: HerdrVsTmuxResult = {
      herdrVersion: (await herdr(["--version"])).stdout.trim(),
      herdrMs: [],
      tmuxMs: [],
      herdrCallMs: [],
      herdrServerRssMB: 0,
    };
    for (let i = 0; i < options.runs; i++) {
      const tmux = new TmuxMultiplexer({ socketPath: tmuxSocket, targetSession: tmuxSession, git });
      result.tmuxMs.push(await handoff(tmux, `bench/tmux-${i}`, env));
      const inPane = { ...herdrEnv, HERDR_ENV: "1", HERDR_PANE_ID: parentPane };
      const mux = HerdrMultiplexer.fromEnvironment(inPane, { git });
      result.herdrMs.push(await handoff(mux, `bench/herdr-${i}`, inPane));
    }
    for (let i = 0; i < Math.max(5, options.runs * 2); i++) {
      const started = performance.now();
      await herdr(["workspace", "list"]);
      result.herdrCallMs.push(performance.now() - started);
    }
    const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
    result.herdrServerRssMB = Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 102.4) / 10;
    return result;
  } finally {
    await execa(herdrBin, ["server", "stop"], { env: herdrEnv, extendEnv: false, reject: false, timeout: 15_000 });
    try {
      process.kill(-(server.pid ?? 0), "SIGKILL");
    } catch {
      // Stopped.
    }
    await execa("tmux", ["-S", tmuxSocket, "kill-server"], { reject: false, timeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (existsSync(root)) rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}
