/**
 * Benchmark (j): coming back after a reboot. 10 handoffs run real child Pi (the offline faux
 * model) in windows of a private tmux server; every Pi is killed and the tmux server too, and a
 * server is started again on the same socket. Timed: `pi-handoff relaunch --all` (one process)
 * from its start until it returns, when the last child has confirmed; against 10
 * `pi-handoff relaunch <id> --no-focus` one after another, each until its child confirmed. The two
 * alternate, each after its own "reboot".
 *
 * Invariants: everything lives in one temp dir with a private tmux server and agent dir; each
 * timed command is the real CLI, as a user runs it; the tmux server is always killed.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
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
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux/tmux.ts";
import { ForkWorker, locatePiSessionModule, runFork } from "../../src/session/fork-runner.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";

const PROJECT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const NODE_BIN = realpathSync(join(PROJECT, "node_modules", ".bin", "node"));
const PI_CLI = realpathSync(join(PROJECT, "node_modules", ".bin", "pi"));
const CLI = join(PROJECT, "bin", "pi-handoff.mjs");
const FAUX_EXTENSION = join(PROJECT, "test", "support", "fixtures", "faux-provider.ts");
const TIMEOUT_MS = 180_000;

export interface RebootRestoreResult {
  handoffs: number;
  /** `relaunch --all`, from the command to the last child confirmed. */
  allMs: number[];
  /** The same handoffs relaunched one by one, one after another, in all. */
  oneByOneMs: number[];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(probe: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function measureRebootRestore(options: { runs: number; handoffs: number }): Promise<RebootRestoreResult> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-reboot-")));
  const home = join(root, "home");
  const agentDir = join(root, "agent");
  const repo = join(root, "repo");
  for (const dir of [home, join(agentDir, "extensions"), repo]) mkdirSync(dir, { recursive: true });
  copyFileSync(FAUX_EXTENSION, join(agentDir, "extensions", "faux-provider.ts"));
  const socket = join(root, "tmux.sock");
  const env = benchEnv(PROJECT, { root, home, agentDir });

  const run = (file: string, args: string[], extra: Record<string, string> = {}) =>
    execa(file, args, { cwd: repo, env: { ...env, ...extra }, extendEnv: false, stdin: "ignore", timeout: TIMEOUT_MS });
  const tmux = (args: string[]) => run("tmux", ["-S", socket, ...args]);
  const startServer = async (): Promise<Record<string, string>> => {
    await tmux([
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "bench",
      "-x",
      "160",
      "-y",
      "45",
      "--",
      "/bin/bash",
      "--norc",
      "--noprofile",
    ]);
    await tmux(["set", "-g", "default-command", "exec /bin/bash --norc --noprofile"]);
    const [pid = "", pane = ""] = (await tmux(["display-message", "-p", "-t", "bench:", "#{pid} #{pane_id}"])).stdout
      .trim()
      .split(" ");
    // The CLI runs as a user runs it after the reboot: in a pane of the new tmux.
    return { TMUX: `${socket},${pid},0`, TMUX_PANE: pane };
  };
  const store = ManifestStore.forAgentDir(agentDir);
  const manifests = async (): Promise<Manifest[]> =>
    (await store.list()).flatMap((entry) => (entry.ok ? [entry.manifest] : []));
  /** The "reboot": every child Pi killed, then the tmux server; tmux started again on the socket. */
  const reboot = async (): Promise<Record<string, string>> => {
    for (const manifest of await manifests()) {
      const pid = manifest.child.pid;
      if (pid !== undefined && alive(pid)) process.kill(pid, "SIGTERM");
    }
    for (const manifest of await manifests()) {
      const pid = manifest.child.pid;
      if (pid !== undefined) await until(() => !alive(pid), `child pid ${pid} to exit`);
    }
    const server = Number((await tmux(["display-message", "-p", "#{pid}"])).stdout.trim());
    await tmux(["kill-server"]);
    await until(() => !alive(server), "the tmux server to exit");
    return startServer();
  };
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
    let inTmux = await startServer();
    const sessionId = (await tmux(["display-message", "-p", "-t", "bench:", "#{session_id}"])).stdout.trim();
    const git = new GitCli({ env });
    const sessionModulePath = locatePiSessionModule(getPackageDir());
    for (let i = 0; i < options.handoffs; i++) {
      const worker =
        sessionModulePath !== undefined ? ForkWorker.start(sessionModulePath, CURRENT_SESSION_VERSION) : undefined;
      const outcome = await new HandoffTransaction({
        git,
        store,
        selectMux: () => ({
          ok: true,
          mux: new TmuxMultiplexer({ socketPath: socket, targetSession: sessionId, git }),
        }),
        fork: (request) => runFork(request, { worker, host: { SessionManager, CURRENT_SESSION_VERSION } }),
        now: () => new Date(),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        progress: () => {},
        timeouts: { shellMs: 15_000, confirmMs: 45_000, pollMs: 25 },
      }).run({
        args: { branch: `bench/reboot-${i}`, base: "HEAD", baseGiven: false, focus: false },
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
        extraPiArgs: ["--extension", join(PROJECT, "pi-extension", "index.ts")],
        env,
      });
      if (outcome.code !== "running") throw new Error(`Bench handoff ${i} ended ${outcome.code}: ${outcome.message}`);
    }
    const ids = (await manifests()).map((manifest) => manifest.id);
    const confirmedAll = async (): Promise<void> => {
      const states = (await manifests()).map((manifest) => manifest.state);
      if (states.some((state) => state !== "running"))
        throw new Error(`Not every child confirmed: ${states.join(", ")}.`);
    };
    const allMs: number[] = [];
    const oneByOneMs: number[] = [];
    for (let r = 0; r < options.runs; r++) {
      // Alternating which goes first, so a slow spell of the machine hits both alike.
      for (const kind of r % 2 === 0 ? (["all", "one"] as const) : (["one", "all"] as const)) {
        inTmux = await reboot();
        const started = performance.now();
        if (kind === "all") {
          const done = await run(NODE_BIN, [CLI, "relaunch", "--all"], inTmux).catch(
            (error: unknown) => error as { stdout?: string; exitCode?: number },
          );
          if ((done as { exitCode?: number }).exitCode !== 0)
            throw new Error(`relaunch --all failed: ${(done as { stdout?: string }).stdout ?? ""}`);
          allMs.push(performance.now() - started);
        } else {
          for (const id of ids) await run(NODE_BIN, [CLI, "relaunch", id, "--no-focus"], inTmux);
          oneByOneMs.push(performance.now() - started);
        }
        await confirmedAll();
      }
    }
    return { handoffs: options.handoffs, allMs, oneByOneMs };
  } finally {
    for (const entry of await store.list().catch(() => [])) {
      const pid = entry.ok ? entry.manifest.child.pid : undefined;
      if (pid !== undefined && alive(pid)) process.kill(pid, "SIGTERM");
    }
    await execa("tmux", ["-S", socket, "kill-server"], { reject: false, timeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (existsSync(root)) rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}
