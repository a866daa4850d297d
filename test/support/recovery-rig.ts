/**
 * Rigs for recovery tests: real handoffs made by the real `HandoffTransaction` (real git, a real
 * fork of a real session file, a real multiplexer: a private tmux server, the Herdr test double,
 * the real Herdr in the herdr-real project, or a real zellij session), whose child is the stand-in Pi (fixtures/stand-in-pi.ts)
 * started by the real launch command, plus the recovery dependencies pointed at the same agent dir.
 *
 * Invariants:
 * - Everything lives in temp dirs and a private tmux server (or the Herdr server's own); `cleanup()`
 *   kills the server (which hangs up every pane process) and removes the dirs. Nothing touches
 *   ~/.pi, ~/.config, ~/.herdr or the user's tmux.
 * - The recovery side runs with an environment without `$TMUX` or `HERDR_*`, as a shell outside
 *   the multiplexer would: handoffs are found through the socket their manifest recorded (for
 *   Herdr, the `herdr` on PATH is the one the handoff used, the double or the real binary).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CURRENT_SESSION_VERSION, SessionManager } from "@earendil-works/pi-coding-agent";
import { GitCli } from "../../src/git/git.ts";
import { HandoffTransaction, type HandoffOutcome } from "../../src/handoff/transaction.ts";
import { shellQuote } from "../../src/child/launch-command.ts";
import type { HandoffStep, Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { muxForLocation } from "../../src/mux/registry.ts";
import { HerdrMultiplexer } from "../../src/mux/herdr/herdr.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux/tmux.ts";
import { ZellijMultiplexer } from "../../src/mux/zellij/zellij.ts";
import type { Multiplexer } from "../../src/mux/types.ts";
import type { RecoveryDeps } from "../../src/cli/deps.ts";
import type { RelaunchDeps } from "../../src/relaunch/relaunch.ts";
import { forkActiveBranch } from "../../src/session/fork.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";
import { createTempRepo, type TempRepo } from "./git-repo.ts";
import { startHerdr, startHerdrDouble, type HerdrDouble, type HerdrServer, type HerdrServerOptions } from "./herdr.ts";
import { NODE_BIN, outsideShellEnv, PROJECT_ROOT, recoveryOnPath } from "./pi.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "./tmux.ts";
import { startZellij, type ZellijSession } from "./zellij.ts";
import { createParentConversation } from "./parent-session.ts";

export const STAND_IN_PI = join(PROJECT_ROOT, "test", "support", "fixtures", "stand-in-pi.ts");

/** What both rigs share: the repository, the agent dir, the parent conversation, recovery's deps. */
export interface RecoveryRigBase {
  repo: TempRepo;
  agentDir: string;
  store: ManifestStore;
  git: GitCli;
  parentSessionFile: string;
  /** The environment of a shell outside the multiplexer using this agent dir (for the CLI and recovery). */
  env: Record<string, string>;
  /** A handoff through the real transaction; its child is the stand-in Pi. */
  handoff(branch: string, options?: HandoffOptions): Promise<HandoffOutcome>;
  recoveryDeps(): RecoveryDeps;
  relaunchDeps(): RelaunchDeps;
  read(id: string): Promise<Manifest>;
  cleanup(): Promise<void>;
}

export interface RecoveryRig extends RecoveryRigBase {
  tmux: PrivateTmux;
}

export interface ZellijRecoveryRig extends RecoveryRigBase {
  zellij: ZellijSession;
}

/** A rig on Herdr: the double (`createHerdrRecoveryRig`), or the one this run is for (`createRunHerdrRecoveryRig`). */
export interface HerdrRecoveryRig<Server extends HerdrServer = HerdrDouble> extends RecoveryRigBase {
  herdr: Server;
}

export interface HandoffOptions {
  faultAt?: HandoffStep;
  confirmMs?: number;
  /** The tmux session to open the window in (default: the rig's session; tmux only). */
  targetSession?: string;
  focus?: boolean;
  /** Hand off into a branch that already exists (`--existing`). */
  existing?: boolean;
  /** The task after ` -- ` (the stand-in child does not start on it). */
  task?: string;
  /** Pi flags mirrored from the parent's command line (default none). */
  extraPiArgs?: string[];
  /** How long to wait for the launcher to start after each typing, and how many typings (launch defaults). */
  startMs?: number;
  attempts?: number;
}

interface RigCore {
  repo: TempRepo;
  agentDir: string;
  store: ManifestStore;
  git: GitCli;
  env: Record<string, string>;
  parentSessionFile: string;
  runHandoff(branch: string, mux: Multiplexer, options: HandoffOptions): Promise<HandoffOutcome>;
}

/** A repository with one extra commit, an agent dir, and a real parent conversation on disk. */
function createRigCore(prefix: string): RigCore {
  const repo = createTempRepo({ prefix, extraCommits: 1 });
  const agentDir = join(repo.dir, "agent");
  mkdirSync(agentDir, { recursive: true });
  const env = outsideShellEnv(repo, agentDir);
  // A shell where `pi-handoff` runs, as every README install route makes it.
  env.PATH = `${recoveryOnPath(repo.dir)}:${env.PATH ?? "/usr/bin:/bin"}`;
  const store = ManifestStore.forAgentDir(agentDir);
  const git = new GitCli({ env, timeoutMs: 15_000 });

  // A real parent conversation in Pi's default session dir for the repository.
  const sessionDir = defaultSessionDir(repo.root, agentDir);
  const parent = createParentConversation(repo.root, sessionDir);
  const parentSessionFile = parent.sessionFile;

  const runHandoff = async (branch: string, mux: Multiplexer, options: HandoffOptions): Promise<HandoffOutcome> => {
    const transaction = new HandoffTransaction({
      git,
      store,
      selectMux: () => ({ ok: true, mux }),
      fork: (request) => forkActiveBranch(request, { SessionManager, CURRENT_SESSION_VERSION }),
      now: () => new Date(),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      progress: () => {},
      timeouts: {
        shellMs: 10_000,
        confirmMs: options.confirmMs ?? 20_000,
        pollMs: 50,
        ...(options.startMs === undefined ? {} : { startMs: options.startMs }),
        ...(options.attempts === undefined ? {} : { attempts: options.attempts }),
      },
      faults: { failAt: options.faultAt },
    });
    const outcome = await transaction.run({
      args: {
        branch,
        base: "HEAD",
        baseGiven: false,
        focus: options.focus ?? true,
        ...(options.existing === true ? { existing: true } : {}),
        ...(options.task === undefined ? {} : { task: options.task }),
      },
      parent: {
        sessionFile: parentSessionFile,
        sessionFileExists: true,
        sessionId: parent.sessionId,
        leafId: parent.leafId,
        cwd: repo.root,
        sessionDir,
      },
      model: { provider: "faux", id: "faux-1", available: true },
      thinkingLevel: "medium",
      projectTrusted: false,
      agentDir,
      piCommand: [NODE_BIN, STAND_IN_PI],
      extraPiArgs: options.extraPiArgs ?? [],
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

  return { repo, agentDir, store, git, env, parentSessionFile, runHandoff };
}

/** The recovery side of a rig, with `env` as the environment of the shell recovery runs in. */
function rigFrom(core: RigCore, handoff: RecoveryRigBase["handoff"], cleanup: () => Promise<void>): RecoveryRigBase {
  const { store, agentDir, git, env } = core;
  const recoveryDeps = (): RecoveryDeps => ({
    store,
    agentDir,
    git,
    env,
    muxFor: (location) => muxForLocation(location, { env, git }),
    now: () => new Date(),
  });
  return {
    repo: core.repo,
    agentDir,
    store,
    git,
    parentSessionFile: core.parentSessionFile,
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
    cleanup,
  };
}

export async function createRecoveryRig(options: { rcFile?: string } = {}): Promise<RecoveryRig> {
  const core = createRigCore("phw-recovery-");
  let tmux: PrivateTmux;
  try {
    tmux = await startPrivateTmux({
      env: { HOME: core.repo.home },
      ...(options.rcFile !== undefined ? { rcFile: options.rcFile } : {}),
    });
  } catch (error) {
    core.repo.cleanup();
    throw error;
  }
  const handoff: RecoveryRigBase["handoff"] = (branch, options = {}) =>
    core.runHandoff(
      branch,
      new TmuxMultiplexer({
        socketPath: tmux.socketPath,
        targetSession: options.targetSession ?? tmux.sessionId,
        git: core.git,
      }),
      options,
    );
  const base = rigFrom(core, handoff, async () => {
    await tmux.kill();
    core.repo.cleanup();
  });
  return { ...base, tmux };
}

/**
 * The same rig on the real zellij: the handoff's backend is the one a Pi in the session's first
 * pane builds (its session and socket dir); the recovery side runs outside zellij, with zellij on
 * PATH, and finds the session through what the manifest recorded.
 */
export async function createZellijRecoveryRig(): Promise<ZellijRecoveryRig> {
  const core = createRigCore("phw-recovery-zj-");
  let zellij: ZellijSession;
  try {
    zellij = await startZellij({ env: { ...core.env, HOME: core.repo.home } });
  } catch (error) {
    core.repo.cleanup();
    throw error;
  }
  core.env.PATH = `${dirname(zellij.bin)}:${core.env.PATH ?? "/usr/bin:/bin"}`;
  const handoff: RecoveryRigBase["handoff"] = (branch, options = {}) =>
    core.runHandoff(
      branch,
      new ZellijMultiplexer({
        sessionName: options.targetSession ?? zellij.sessionName,
        socketDir: zellij.socketDir,
        git: core.git,
        zellijBin: zellij.bin,
        env: zellij.paneEnv(zellij.firstPaneId),
      }),
      options,
    );
  const base = rigFrom(core, handoff, async () => {
    await zellij.kill();
    core.repo.cleanup();
  });
  return { ...base, zellij };
}

/**
 * The same rig on the Herdr double: the handoff's backend is the one a Pi inside a Herdr pane
 * builds (the double's socket and binary named explicitly); the recovery side runs outside Herdr
 * with the double as `herdr` on PATH, and finds the server through the recorded socket.
 * `legacyIds`: the double mints Herdr <= 0.6.10 ids. `piOnPath`: the panes find a `pi` (the stand-in)
 * on PATH, as Herdr's own resume after a restart needs (it types a bare `pi --session <file>`).
 */
export async function createHerdrRecoveryRig(
  options: {
    shellDelayMs?: number;
    legacyIds?: boolean;
    piOnPath?: boolean;
    shellSwallowMs?: number;
    shellSwallowUntil?: string;
    lineCap?: number;
  } = {},
): Promise<HerdrRecoveryRig<HerdrDouble>> {
  return herdrRig(options.piOnPath === true, (env) =>
    startHerdrDouble({
      env,
      shellDelayMs: options.shellDelayMs ?? 0,
      legacyIds: options.legacyIds === true,
      ...(options.shellSwallowMs !== undefined ? { shellSwallowMs: options.shellSwallowMs } : {}),
      ...(options.shellSwallowUntil !== undefined ? { shellSwallowUntil: options.shellSwallowUntil } : {}),
      ...(options.lineCap !== undefined ? { lineCap: options.lineCap } : {}),
    }),
  );
}

/**
 * The same rig on the Herdr this run is for (`startHerdr`: the real one in the herdr-real project,
 * else the double), with only what both offer; the recovery side finds that `herdr` on PATH.
 */
export async function createRunHerdrRecoveryRig(
  options: Omit<HerdrServerOptions, "env"> & { piOnPath?: boolean } = {},
): Promise<HerdrRecoveryRig<HerdrServer>> {
  const { piOnPath, ...serverOptions } = options;
  return herdrRig(piOnPath === true, (env) => startHerdr({ ...serverOptions, env }));
}

async function herdrRig<Server extends HerdrServer>(
  piOnPath: boolean,
  start: (env: Record<string, string>) => Promise<Server>,
): Promise<HerdrRecoveryRig<Server>> {
  const core = createRigCore("phw-recovery-herdr-");
  let herdr: Server;
  try {
    const env = { ...core.env };
    if (piOnPath) {
      const bin = join(core.repo.dir, "pi-bin");
      mkdirSync(bin, { recursive: true });
      writeFileSync(join(bin, "pi"), `#!/bin/sh\nexec ${shellQuote(NODE_BIN)} ${shellQuote(STAND_IN_PI)} "$@"\n`, {
        mode: 0o755,
      });
      env.PATH = `${bin}:${env.PATH ?? "/usr/bin:/bin"}`;
    }
    herdr = await start(env);
  } catch (error) {
    core.repo.cleanup();
    throw error;
  }
  core.env.PATH = `${dirname(herdr.binPath)}:${core.env.PATH ?? "/usr/bin:/bin"}`;
  const handoff: RecoveryRigBase["handoff"] = (branch, handoffOptions = {}) =>
    core.runHandoff(
      branch,
      new HerdrMultiplexer({ herdrBin: herdr.binPath, socketPath: herdr.socketPath, env: herdr.clientEnv }),
      handoffOptions,
    );
  const base = rigFrom(core, handoff, async () => {
    await herdr.kill();
    core.repo.cleanup();
  });
  return { ...base, herdr };
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

/** A pid that belonged to a process that has exited (for "its writer is gone" cases). */
export async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  const pid = child.pid ?? 0;
  await new Promise((resolve) => child.on("exit", resolve));
  return pid;
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
