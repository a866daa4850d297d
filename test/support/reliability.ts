/**
 * Support for the reliability tests (crash points, concurrency, hostile input): handoffs run as
 * separate processes (the driver fixture, or the real Pi), the recovery CLI run as a real process,
 * and an inventory of everything a handoff can leave on disk, in git and in tmux, so a test can
 * prove that `pi-handoff list` accounts for all of it.
 *
 * Invariants: every process started here has a timeout and is killed when it runs over; nothing
 * here touches ~/.pi, ~/.config or the user's tmux (callers pass sandboxed environments).
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { CURRENT_SESSION_VERSION, SessionManager } from "@earendil-works/pi-coding-agent";
import { GitCli } from "../../src/git/git.ts";
import { HandoffTransaction, type HandoffOutcome } from "../../src/handoff/transaction.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux/tmux.ts";
import { InventoryReportSchema, type HandoffReport, type InventoryReport } from "../../src/inventory/report-schema.ts";
import { forkActiveBranch } from "../../src/session/fork.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";
import { launchFileOwner } from "../../src/child/launcher-file.ts";
import type { DriverConfig, DriverResult } from "./fixtures/handoff-driver.ts";
import { isolatedGitEnv, makeTempDir, removeTempDir, type TempRepo } from "./git-repo.ts";
import { keptInSandbox, NODE_BIN, PROJECT_ROOT, readEntries } from "./pi.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "./tmux.ts";
import { createParentConversation } from "./parent-session.ts";

export const HANDOFF_DRIVER = join(PROJECT_ROOT, "test", "support", "fixtures", "handoff-driver.ts");
export const STAND_IN = join(PROJECT_ROOT, "test", "support", "fixtures", "stand-in-pi.ts");
export const PI_HANDOFF_BIN = join(PROJECT_ROOT, "bin", "pi-handoff.mjs");

export interface ProcessRun {
  /** Exit code, or null when the process was killed by a signal. */
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

/** Runs `command args` without a shell; SIGKILLed after `timeoutMs`. */
export function runProcess(
  command: string,
  args: readonly string[],
  options: { env: Record<string, string>; cwd?: string; timeoutMs?: number },
): Promise<ProcessRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { env: options.env, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 90_000);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr, elapsedMs: Date.now() - started });
    });
  });
}

export interface DriverRun extends ProcessRun {
  /** The outcome the driver printed; undefined when it was killed (a crash point) or failed. */
  result?: DriverResult;
}

/** One handoff in its own process through the real transaction (see fixtures/handoff-driver.ts). */
export async function runDriver(
  config: DriverConfig,
  env: Record<string, string>,
  timeoutMs = 90_000,
): Promise<DriverRun> {
  const run = await runProcess(NODE_BIN, [HANDOFF_DRIVER, JSON.stringify(config)], { env, timeoutMs });
  const last = run.stdout.trim().split("\n").at(-1);
  if (run.status === 0 && last !== undefined && last.startsWith("{"))
    return { ...run, result: JSON.parse(last) as DriverResult };
  return run;
}

/** `pi-handoff <args>` as a real process. */
export function runCli(args: readonly string[], env: Record<string, string>, cwd?: string): Promise<ProcessRun> {
  return runProcess(NODE_BIN, [PI_HANDOFF_BIN, ...args], {
    env,
    timeoutMs: 120_000,
    ...(cwd === undefined ? {} : { cwd }),
  });
}

/** `pi-handoff list --json` (all handoffs, removed ones included with `all`), validated against the published schema. */
export async function listInventory(
  env: Record<string, string>,
  options: { all?: boolean } = {},
): Promise<InventoryReport> {
  const run = await runCli(["list", "--json", ...(options.all === true ? ["--all"] : [])], env);
  if (run.status !== 0) throw new Error(`pi-handoff list failed (${run.status}): ${run.stderr}`);
  return InventoryReportSchema.parse(JSON.parse(run.stdout));
}

/** The parent session as the transaction sees it: header id and last entry as the active leaf. */
export function parentOf(sessionFile: string, cwd: string): DriverConfig["parent"] {
  const entries = readEntries(sessionFile);
  const header = entries[0];
  const leaf = entries.at(-1);
  if (
    header === undefined ||
    header.type !== "session" ||
    leaf === undefined ||
    !("id" in leaf) ||
    leaf.type === "session"
  ) {
    throw new Error(`${sessionFile} is not a session with entries.`);
  }
  return { sessionFile, sessionId: header.id, leafId: leaf.id, cwd, sessionDir: dirname(sessionFile) };
}

/**
 * A directory holding an executable `pi` that is the stand-in child: put it first on PATH and
 * `pi-handoff relaunch` starts the stand-in (as it would start the user's `pi`).
 */
export function standInPiOnPath(dir: string, options: { ackGate?: string } = {}): string {
  const bin = join(dir, options.ackGate === undefined ? "stand-in-bin" : "stand-in-bin-gated");
  mkdirSync(bin, { recursive: true });
  const pi = join(bin, "pi");
  // The pane's environment is the tmux server's, so the gate is set by the script itself.
  const delay =
    options.ackGate === undefined ? "" : `process.env.STAND_IN_PI_ACK_GATE = ${JSON.stringify(options.ackGate)};\n`;
  // An extensionless script with a node shebang is run by the CLI with its own Node (pi-command.ts).
  writeFileSync(pi, `#!/usr/bin/env node\n${delay}import(${JSON.stringify(pathToFileURL(STAND_IN).href)});\n`);
  chmodSync(pi, 0o755);
  return bin;
}

/** Everything a handoff can create, by kind. */
export interface Artifacts {
  manifests: string[];
  /** Entries of the manifest dir other than manifests: temp files, lock dirs. */
  storeLeftovers: string[];
  /** Linked worktrees git lists (paths). */
  gitWorktrees: string[];
  /** Directories under `<repo>.worktrees/`. */
  worktreeDirs: string[];
  branches: string[];
  /** Every pane of every tmux window on the server. */
  panes: string[];
  /** Session files under the agent dir's sessions/ (except `exclude`). */
  sessions: string[];
}

export async function collectArtifacts(input: {
  repo: TempRepo;
  agentDir: string;
  tmux: PrivateTmux;
  excludeSessions?: readonly string[];
}): Promise<Artifacts> {
  const { repo, agentDir, tmux } = input;
  const manifestDir = join(agentDir, "handoff-worktree", "manifests");
  const storeEntries = existsSync(manifestDir) ? readdirSync(manifestDir) : [];
  const worktreeRoot = `${repo.root}.worktrees`;
  const porcelain = repo.run(["worktree", "list", "--porcelain"]);
  const gitWorktrees = porcelain
    .split("\n")
    .filter((line) => line.startsWith("worktree "))
    .map((line) => line.slice("worktree ".length))
    .filter((path) => path !== repo.root);
  const panes = (await tmux.tmux(["list-panes", "-a", "-F", "#{pane_id}"])).split("\n").filter((line) => line !== "");
  const exclude = new Set(input.excludeSessions ?? []);
  return {
    manifests: storeEntries
      .filter((name) => name.endsWith(".json") && !name.startsWith("."))
      .map((name) => name.slice(0, -5))
      .sort(),
    // A manifest's own launch files (launcher, params, start notes, postCreate runner) are explained by it.
    storeLeftovers: storeEntries
      .filter((name) => !(name.endsWith(".json") && !name.startsWith(".")))
      .filter((name) => {
        const owner = launchFileOwner(name);
        return owner === undefined || !storeEntries.includes(`${owner}.json`);
      })
      .sort(),
    gitWorktrees: gitWorktrees.sort(),
    worktreeDirs: existsSync(worktreeRoot)
      ? readdirSync(worktreeRoot)
          .map((name) => join(worktreeRoot, name))
          .sort()
      : [],
    branches: repo
      .run(["for-each-ref", "--format=%(refname:short)", "refs/heads"])
      .split("\n")
      .filter((line) => line !== "")
      .sort(),
    panes: panes.sort(),
    sessions: sessionFiles(join(agentDir, "sessions"))
      .filter((file) => !exclude.has(file))
      .sort(),
  };
}

function sessionFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sessionFiles(join(dir, entry.name))
      : entry.name.endsWith(".jsonl")
        ? [join(dir, entry.name)]
        : [],
  );
}

/** What is in `after` and not in `before`, kind by kind. */
export function newArtifacts(before: Artifacts, after: Artifacts): Artifacts {
  const added = (key: keyof Artifacts) => after[key].filter((item) => !before[key].includes(item));
  return {
    manifests: added("manifests"),
    storeLeftovers: added("storeLeftovers"),
    gitWorktrees: added("gitWorktrees"),
    worktreeDirs: added("worktreeDirs"),
    branches: added("branches"),
    panes: added("panes"),
    sessions: added("sessions"),
  };
}

/**
 * Every artifact in `found` that no report accounts for (by id, worktree path, branch, pane and
 * child session file). An empty result means `pi-handoff list` shows everything that exists.
 */
export function unaccounted(found: Artifacts, reports: readonly HandoffReport[]): string[] {
  const ids = new Set(reports.map((report) => report.id));
  const paths = new Set(reports.map((report) => report.worktreePath));
  const branches = new Set(reports.map((report) => report.branch));
  const panes = new Set(reports.map((report) => report.mux.paneId).filter((pane) => pane !== undefined));
  const sessions = new Set(reports.map((report) => report.childSessionFile).filter((file) => file !== undefined));
  return [
    ...found.manifests.filter((id) => !ids.has(id)).map((id) => `manifest ${id}`),
    ...found.storeLeftovers.map((name) => `store entry ${name}`),
    ...found.gitWorktrees.filter((path) => !paths.has(path)).map((path) => `git worktree ${path}`),
    ...found.worktreeDirs.filter((path) => !paths.has(path)).map((path) => `directory ${path}`),
    ...found.branches.filter((branch) => !branches.has(branch)).map((branch) => `branch ${branch}`),
    ...found.panes.filter((pane) => !panes.has(pane)).map((pane) => `tmux pane ${pane}`),
    ...found.sessions.filter((file) => !sessions.has(file)).map((file) => `session ${basename(file)}`),
  ];
}

/**
 * A repository (at `<temp>/<repoName>`, so a name may hold spaces, quotes or `$()`), an agent dir,
 * a private tmux server and a real parent conversation on disk: what a handoff needs, without the
 * real Pi. Handoffs run in this process (`handoff`) or as driver processes (`driverConfig`).
 */
export interface World {
  dir: string;
  repo: TempRepo;
  agentDir: string;
  tmux: PrivateTmux;
  store: ManifestStore;
  git: GitCli;
  parent: DriverConfig["parent"];
  /** For handoff drivers and the recovery CLI: a shell outside tmux with this agent dir. */
  env: Record<string, string>;
  driverConfig(branch: string, extra?: Partial<DriverConfig>): DriverConfig;
  /** One handoff through the real transaction in this process; the child is the stand-in Pi. */
  handoff(input: { branch: string; base?: string; task?: string; confirmMs?: number }): Promise<HandoffOutcome>;
  artifacts(): Promise<Artifacts>;
  cleanup(): Promise<void>;
}

export async function createWorld(options: { repoName?: string; prefix?: string } = {}): Promise<World> {
  const dir = makeTempDir(options.prefix ?? "phw-world-");
  try {
    const home = join(dir, "home");
    const agentDir = join(dir, "agent");
    const root = join(dir, options.repoName ?? "repo");
    mkdirSync(home);
    mkdirSync(agentDir);
    mkdirSync(root);
    const gitEnv = isolatedGitEnv(home);
    const run = (args: readonly string[], runOptions: { cwd?: string } = {}): string =>
      execFileSync("git", args, {
        cwd: runOptions.cwd ?? root,
        env: gitEnv,
        encoding: "utf8",
        timeout: 30_000,
        stdio: ["ignore", "pipe", "pipe"],
      }).replace(/\n$/, "");
    const commitFile = (
      file: string,
      content: string,
      message: string,
      commitOptions: { cwd?: string } = {},
    ): string => {
      const cwd = commitOptions.cwd ?? root;
      mkdirSync(dirname(join(cwd, file)), { recursive: true });
      writeFileSync(join(cwd, file), content);
      run(["add", "--", file], { cwd });
      run(["commit", "--quiet", "--no-verify", "-m", message], { cwd });
      return run(["rev-parse", "HEAD"], { cwd });
    };
    run(["init", "--quiet"]);
    commitFile("README.md", "# test repository\n", "initial commit");
    commitFile("file-1.txt", "1\n", "commit 1");
    run(["tag", "v1"]);
    const repo: TempRepo = {
      root: realpathSync(root),
      dir,
      home,
      env: gitEnv,
      run,
      commitFile,
      cleanup: () => removeTempDir(dir),
    };

    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(gitEnv)) {
      if (value !== undefined && keptInSandbox(key)) env[key] = value;
    }
    env.PI_CODING_AGENT_DIR = agentDir;
    const tmux = await startPrivateTmux({ env: { HOME: home } });
    const store = ManifestStore.forAgentDir(agentDir);
    const git = new GitCli({ env, timeoutMs: 30_000 });

    const sessionDir = defaultSessionDir(repo.root, agentDir);
    const parent = parentOf(createParentConversation(repo.root, sessionDir).sessionFile, repo.root);

    const handoff: World["handoff"] = async (input) => {
      const outcome = await runTransaction(input);
      // The child lets go of the manifest's lock just after its acknowledgement, which the launch
      // may see first: wait for that, so a lock left behind means a real stale one.
      if ("manifest" in outcome) {
        const lock = `${store.pathFor(outcome.manifest.id)}.lock`;
        await waitFor(() => !existsSync(lock), { timeoutMs: 10_000, description: `the lock ${lock} to be released` });
      }
      return outcome;
    };
    const runTransaction: World["handoff"] = (input) =>
      new HandoffTransaction({
        git,
        store,
        selectMux: () => ({
          ok: true,
          mux: new TmuxMultiplexer({
            socketPath: tmux.socketPath,
            targetSession: tmux.sessionId,
            git,
            timeoutMs: 15_000,
          }),
        }),
        fork: (request) => forkActiveBranch(request, { SessionManager, CURRENT_SESSION_VERSION }),
        now: () => new Date(),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        progress: () => {},
        timeouts: { shellMs: 15_000, confirmMs: input.confirmMs ?? 20_000, pollMs: 50 },
      }).run({
        args: {
          branch: input.branch,
          base: input.base ?? "HEAD",
          baseGiven: input.base !== undefined,
          focus: false,
          ...(input.task !== undefined ? { task: input.task } : {}),
        },
        parent: { ...parent, sessionFileExists: true },
        model: { provider: "faux", id: "faux-1", available: true },
        thinkingLevel: "medium",
        projectTrusted: false,
        agentDir,
        piCommand: [NODE_BIN, STAND_IN],
        extraPiArgs: [],
        env,
      });

    return {
      dir,
      repo,
      agentDir,
      tmux,
      store,
      git,
      parent,
      env,
      driverConfig: (branch, extra = {}) => ({
        agentDir,
        parent,
        tmux: { socketPath: tmux.socketPath, sessionId: tmux.sessionId },
        branch,
        piCommand: [NODE_BIN, STAND_IN],
        ...extra,
      }),
      handoff,
      artifacts: () => collectArtifacts({ repo, agentDir, tmux, excludeSessions: [parent.sessionFile] }),
      cleanup: async () => {
        await tmux.kill();
        removeTempDir(dir);
      },
    };
  } catch (error) {
    removeTempDir(dir);
    throw error;
  }
}
