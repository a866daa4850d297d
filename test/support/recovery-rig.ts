/**
 * A rig for recovery tests: real handoffs made by the real `HandoffTransaction` (real git, a real
 * fork of a real session file, a private tmux server), whose child is the stand-in Pi
 * (fixtures/stand-in-pi.ts) started by the real launch command, plus the recovery dependencies
 * pointed at the same agent dir.
 *
 * Invariants:
 * - Everything lives in temp dirs and a private tmux server; `cleanup()` kills the server (which
 *   hangs up every pane process) and removes the dirs. Nothing touches ~/.pi, ~/.config or the
 *   user's tmux.
 * - The recovery side runs with an environment without `$TMUX`, as a shell outside tmux would:
 *   handoffs are found through the socket their manifest recorded.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CURRENT_SESSION_VERSION, SessionManager } from "@earendil-works/pi-coding-agent";
import { SimpleGitPort } from "../../src/git/git.ts";
import { HandoffTransaction, type HandoffOutcome } from "../../src/handoff/transaction.ts";
import type { HandoffStep, Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { muxForLocation } from "../../src/mux/for-location.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux.ts";
import type { RecoveryDeps } from "../../src/recovery/deps.ts";
import type { RelaunchDeps } from "../../src/recovery/relaunch.ts";
import { forkActiveBranch } from "../../src/session/fork.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";
import { createTempRepo, type TempRepo } from "./git-repo.ts";
import { NODE_BIN, PROJECT_ROOT } from "./pi.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "./tmux.ts";

export const STAND_IN_PI = join(PROJECT_ROOT, "test", "support", "fixtures", "stand-in-pi.ts");

export interface RecoveryRig {
  repo: TempRepo;
  tmux: PrivateTmux;
  agentDir: string;
  store: ManifestStore;
  git: SimpleGitPort;
  parentSessionFile: string;
  /** The environment of a shell outside tmux using this agent dir (for the CLI and recovery). */
  env: Record<string, string>;
  /** A handoff through the real transaction; its child is the stand-in Pi. */
  handoff(branch: string, options?: HandoffOptions): Promise<HandoffOutcome>;
  recoveryDeps(): RecoveryDeps;
  relaunchDeps(): RelaunchDeps;
  read(id: string): Promise<Manifest>;
  cleanup(): Promise<void>;
}

export interface HandoffOptions {
  faultAt?: HandoffStep;
  confirmMs?: number;
  /** The tmux session to open the window in (default: the rig's session). */
  targetSession?: string;
  focus?: boolean;
}

export async function createRecoveryRig(): Promise<RecoveryRig> {
  const repo = createTempRepo({ prefix: "phw-recovery-", extraCommits: 1 });
  const agentDir = join(repo.dir, "agent");
  mkdirSync(agentDir, { recursive: true });
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(repo.env)) {
    if (value !== undefined && !key.startsWith("TMUX") && !key.startsWith("HERDR") && !key.startsWith("PI_")) env[key] = value;
  }
  env.PI_CODING_AGENT_DIR = agentDir;
  const tmux = await startPrivateTmux({ env: { HOME: repo.home } });
  const store = ManifestStore.forAgentDir(agentDir);
  const git = new SimpleGitPort({ env, timeoutMs: 15_000 });

  // A real parent conversation in Pi's default session dir for the repository.
  const sessionDir = defaultSessionDir(repo.root, agentDir);
  const parent = SessionManager.create(repo.root, sessionDir);
  parent.appendMessage({ role: "user", content: [{ type: "text", text: "what is in this repository?" }], timestamp: Date.now() });
  const leafId = parent.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "a README and one file" }],
    api: "faux",
    provider: "faux",
    model: "faux-1",
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "stop",
    timestamp: Date.now(),
  });
  const parentSessionFile = parent.getSessionFile() ?? "";
  readFileSync(parentSessionFile); // on disk, or this throws

  const handoff = async (branch: string, options: HandoffOptions = {}): Promise<HandoffOutcome> => {
    const transaction = new HandoffTransaction({
      git,
      store,
      selectMux: () => ({
        ok: true,
        mux: new TmuxMultiplexer({ socketPath: tmux.socketPath, targetSession: options.targetSession ?? tmux.sessionId, git }),
      }),
      fork: (request) => forkActiveBranch(request, { SessionManager, CURRENT_SESSION_VERSION }),
      now: () => new Date(),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      progress: () => {},
      timeouts: { shellMs: 10_000, confirmMs: options.confirmMs ?? 20_000, pollMs: 50 },
      faultAt: options.faultAt,
    });
    const outcome = await transaction.run({
      args: { branch, base: "HEAD", baseGiven: false, focus: options.focus ?? true },
      parent: { sessionFile: parentSessionFile, sessionFileExists: true, sessionId: parent.getSessionId(), leafId, cwd: repo.root, sessionDir },
      model: { provider: "faux", id: "faux-1", available: true },
      thinkingLevel: "medium",
      projectTrusted: false,
      agentDir,
      piCommand: [NODE_BIN, STAND_IN_PI],
      extraPiArgs: [],
      env,
    });
    // The child may still be letting go of the manifest's lock after its acknowledgement; a test
    // that kills it right away would leave the lock to go stale (10 s) under the next update.
    if ("manifest" in outcome) {
      const lock = `${store.pathFor(outcome.manifest.id)}.lock`;
      await waitFor(() => !existsSync(lock), { timeoutMs: 10_000, description: `the lock ${lock} to be released` });
    }
    return outcome;
  };

  const recoveryDeps = (): RecoveryDeps => ({
    store,
    agentDir,
    git,
    env,
    muxFor: (location) => muxForLocation(location, { env, git }),
    now: () => new Date(),
  });

  return {
    repo,
    tmux,
    agentDir,
    store,
    git,
    parentSessionFile,
    env,
    handoff,
    recoveryDeps,
    relaunchDeps: () => ({
      ...recoveryDeps(),
      piCommand: [NODE_BIN, STAND_IN_PI],
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      progress: () => {},
      timeouts: { shellMs: 10_000, confirmMs: 20_000, pollMs: 50 },
    }),
    read: async (id) => {
      const read = await store.read(id);
      if (!read.ok) throw new Error(read.message);
      return read.manifest;
    },
    cleanup: async () => {
      await tmux.kill();
      repo.cleanup();
    },
  };
}

/** The manifest of a handoff that must have reached `running`. */
export function runningManifest(outcome: HandoffOutcome): Manifest {
  if (outcome.code !== "running") throw new Error(`The handoff did not run: ${outcome.code}: ${outcome.message}`);
  return outcome.manifest;
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Signals a process and waits until it is gone (or a zombie, which writes nothing). */
export async function killAndWait(pid: number, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  await waitFor(() => !isProcessAlive(pid), { timeoutMs: 10_000, description: `pid ${pid} to exit` });
}
