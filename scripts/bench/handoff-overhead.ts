/**
 * Benchmark (c): a whole handoff against the bare minimum a user could do by hand in tmux
 * (git worktree add, a tmux window, `pi --session <copy>` until its session starts), on a
 * repository of many files, with the real Pi on the offline faux model.
 *
 * Invariants: everything lives in one temp dir with a private tmux server and agent dir; both
 * sides are timed until the new Pi's `session_start`; the tmux server is always killed.
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
import { enableCompileCache } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { benchEnv } from "./bench-env.ts";
import { CURRENT_SESSION_VERSION, SessionManager } from "@earendil-works/pi-coding-agent";
import { getPackageDir } from "@earendil-works/pi-coding-agent";
import { GitCli } from "../../src/git/git.ts";
import { HandoffTransaction } from "../../src/handoff/transaction.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux/tmux.ts";
import { ForkWorker, locatePiSessionModule, runFork } from "../../src/session/fork-runner.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";

const PROJECT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const NODE_BIN = realpathSync(join(PROJECT, "node_modules", ".bin", "node"));
const PI_CLI = realpathSync(join(PROJECT, "node_modules", ".bin", "pi"));
const FAUX_EXTENSION = join(PROJECT, "test", "support", "fixtures", "faux-provider.ts");
const TIMEOUT_MS = 60_000;

const READY_EXTENSION = `
import { writeFileSync } from "node:fs";
import { join } from "node:path";
export default function (pi: { on(event: string, handler: () => void): void }) {
  pi.on("session_start", () => {
    const dir = process.env.BENCH_READY_DIR;
    if (dir) writeFileSync(join(dir, String(process.pid)), String(Date.now()));
  });
}
`;

export interface OverheadResult {
  files: number;
  oursMs: number[];
  baselineMs: number[];
}

async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function measureHandoffOverhead(options: { runs: number; files: number }): Promise<OverheadResult> {
  // The transaction runs here as it runs in Pi, whose own start enables Node's compile cache: the
  // fork's worker, started by each handoff, loads its modules from it there (and so here).
  enableCompileCache();
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-")));
  const home = join(root, "home");
  const agentDir = join(root, "agent");
  const repo = join(root, "repo");
  const readyDir = join(root, "ready");
  for (const dir of [home, join(agentDir, "extensions"), repo, readyDir]) mkdirSync(dir, { recursive: true });
  copyFileSync(FAUX_EXTENSION, join(agentDir, "extensions", "faux-provider.ts"));
  writeFileSync(join(agentDir, "extensions", "bench-ready.ts"), READY_EXTENSION);
  const env = benchEnv(PROJECT, { root, home, agentDir }, { BENCH_READY_DIR: readyDir });

  const run = (file: string, args: string[], cwd = repo) =>
    execa(file, args, { cwd, env, extendEnv: false, stdin: "ignore", timeout: TIMEOUT_MS });
  const socket = join(root, "tmux.sock");
  const tmux = (args: string[]) => run("tmux", ["-S", socket, ...args]);
  try {
    // A repository of `files` files in nested directories, one commit.
    await run("git", ["init", "-q", "-b", "main"]);
    for (let i = 0; i < options.files; i++) {
      const dir = join(repo, "src", `pkg${i % 25}`, `mod${i % 7}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `file${i}.ts`), `export const value${i} = ${i};\n`.repeat(20));
    }
    await run("git", ["add", "-A"]);
    await run("git", ["commit", "-q", "-m", "bench repository"]);
    const sha = (await run("git", ["rev-parse", "HEAD"])).stdout.trim();

    // A parent conversation made by the real Pi.
    await run(NODE_BIN, [PI_CLI, "-p", "--model", "faux/faux-1", "describe this repository"]);
    const sessionDir = defaultSessionDir(repo, agentDir);
    const parentFile = join(sessionDir, readdirSync(sessionDir)[0] ?? "");
    const parent = SessionManager.open(parentFile);
    const leafId = parent.getLeafId();
    if (leafId === null) throw new Error("The bench parent session is empty.");

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
    const sessionId = (await tmux(["display-message", "-p", "-t", "bench:", "#{session_id}"])).stdout.trim();
    const git = new GitCli({ env });
    const store = ManifestStore.forAgentDir(agentDir);
    const sessionModulePath = locatePiSessionModule(getPackageDir());

    const oursMs: number[] = [];
    const baselineMs: number[] = [];
    for (let i = 0; i < options.runs; i++) {
      // Ours: the whole transaction, as the /handoff-worktree command runs it.
      const started = performance.now();
      const worker =
        sessionModulePath !== undefined ? ForkWorker.start(sessionModulePath, CURRENT_SESSION_VERSION) : undefined;
      const mux = new TmuxMultiplexer({ socketPath: socket, targetSession: sessionId, git });
      const outcome = await new HandoffTransaction({
        git,
        store,
        selectMux: () => ({ ok: true, mux }),
        fork: (request) => runFork(request, { worker, host: { SessionManager, CURRENT_SESSION_VERSION } }),
        now: () => new Date(),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        progress: (step) => {
          if (process.env.BENCH_TRACE) console.error(`  ${(performance.now() - started).toFixed(0)} ms: ${step}`);
        },
        timeouts: { shellMs: 15_000, confirmMs: 45_000, pollMs: 25 },
      }).run({
        args: { branch: `bench/ours-${i}`, base: "HEAD", baseGiven: false, focus: true },
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
        // The child loads this package as an installed user has it, so it acknowledges.
        extraPiArgs: ["--extension", join(PROJECT, "pi-extension", "index.ts")],
        env,
      });
      if (outcome.code !== "running")
        throw new Error(`The benchmark handoff ended ${outcome.code}: ${outcome.message}`);
      oursMs.push(performance.now() - started);
      if (outcome.manifest.mux.kind === "tmux") await tmux(["kill-window", "-t", outcome.manifest.mux.windowId ?? ""]);

      // Baseline: the same steps by hand, timed until the new Pi's session_start.
      const before = new Set(readdirSync(readyDir));
      const baseStarted = performance.now();
      const path = join(root, "repo.worktrees", `base-${i}`);
      await run("git", ["worktree", "add", "-q", "-b", `bench/base-${i}`, path, sha]);
      const pane = (
        await tmux(["new-window", "-d", "-t", `${sessionId}:`, "-c", path, "-P", "-F", "#{pane_id}"])
      ).stdout.trim();
      const copy = join(root, `baseline-${i}.jsonl`);
      copyFileSync(parentFile, copy);
      // The user's installed packages load in every Pi they start; this one included.
      await tmux([
        "send-keys",
        "-t",
        pane,
        "-l",
        `${NODE_BIN} ${PI_CLI} --session ${copy} --model faux/faux-1 --extension ${join(PROJECT, "pi-extension", "index.ts")}`,
      ]);
      await tmux(["send-keys", "-t", pane, "Enter"]);
      await waitFor(
        () => (readdirSync(readyDir).some((name) => !before.has(name)) ? true : undefined),
        "the baseline Pi",
      );
      baselineMs.push(performance.now() - baseStarted);
      await tmux(["kill-window", "-t", pane]);
    }
    return { files: options.files, oursMs, baselineMs };
  } finally {
    await execa("tmux", ["-S", socket, "kill-server"], { reject: false, timeout: 10_000 });
    // Child Pis get SIGHUP with their panes; give them a moment before removing their files.
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (existsSync(root)) rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}
