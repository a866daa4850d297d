/**
 * What the handoff transaction stands on, and the composition root that builds the real ports:
 * git, the manifest store, the multiplexer choice, the fork (off the event loop where it can),
 * the clock, the launch waits and the fault plan, all from the environment.
 *
 * Invariants:
 * - Constructs only: decides nothing about a handoff. The Pi adapter hands in what only Pi has
 *   (its session module, the status line) and the environment; everything else is built here.
 * - Every port it builds carries its own per-call timeout.
 * - The fork worker started here is disposed by `dispose()`, whatever the handoff's outcome.
 */
import { gitCallMs, readWaits } from "../config/waits.ts";
import { setTimeout as sleep } from "node:timers/promises";
import { GitCli } from "../git/git.ts";
import { CheckoutGit } from "../git/checkout-git.ts";
import type { GitPort, CheckoutGitPort } from "../git/types.ts";
import { launchTimeoutsFromEnv, type LaunchTimeouts } from "../child/timeouts.ts";
import type { HandoffStep, MuxKind } from "../manifest/schema.ts";
import { ManifestStore } from "../manifest/store.ts";
import { selectMultiplexer } from "../mux/registry.ts";
import type { Multiplexer } from "../mux/types.ts";
import type { ForkRequest, ForkResult, SessionHost } from "../session/fork.ts";
import { ForkWorker, locatePiSessionModule, runFork } from "../session/fork-runner.ts";
import { faultPlanFromEnv, type FaultPlan } from "../faults.ts";
import type { PortProbe } from "../ports/probe.ts";
import { formatWait } from "../text.ts";

export type MuxChoice = { ok: true; mux: Multiplexer } | { ok: false; message: string };

export interface HandoffDeps {
  git: GitPort;
  store: ManifestStore;
  /** May ask the backend whether its server answers (Herdr), so it may be asynchronous. */
  selectMux(explicit: MuxKind | undefined): MuxChoice | Promise<MuxChoice>;
  fork(request: ForkRequest): Promise<ForkResult>;
  now(): Date;
  sleep(ms: number): Promise<void>;
  progress(step: HandoffStep, text: string): void;
  timeouts: LaunchTimeouts;
  /** Git for the setup (carry, copy guards, base freshness); a handoff that needs it is refused without it. */
  checkoutGit?: CheckoutGitPort;
  /** Where tests make a step fail or the process die (`PI_HANDOFF_FAULT`, faults.ts); none by default. */
  faults?: FaultPlan;
  /** The bind test a port reservation asks (ports/probe.ts); the real one on 127.0.0.1 and ::1 by default. */
  portProbe?: PortProbe;
}

export interface HandoffHost {
  env: NodeJS.ProcessEnv;
  agentDir: string;
  /** Pi's session classes, for a fork on this thread. */
  session: SessionHost;
  /** Pi's package directory, where its session module can be loaded by path for the worker. */
  piPackageDir: string | undefined;
  /** The status line: each step, and the fork's phases, as they run. */
  status(text: string): void;
}

/** Per git call of a handoff (PI_HANDOFF_GIT_TIMEOUT_MS raises both): a read of refs and state... */
const HANDOFF_GIT_TIMEOUT_MS = 30_000;
/** ...and a snapshot, patch or apply of the parent checkout's changes (`--carry`), which may be large. */
const CHECKOUT_GIT_TIMEOUT_MS = 60_000;

/** The real deps of one handoff; `dispose` stops the fork worker (unused when it was refused early). */
export function createHandoffDeps(host: HandoffHost): { deps: HandoffDeps; dispose(): void } {
  const { env } = host;
  const waits = readWaits(env, ["gitFetchMs", "gitWorktreeMs"]);
  const git = new GitCli({
    env,
    timeoutMs: gitCallMs(env, HANDOFF_GIT_TIMEOUT_MS),
    addWorktreeTimeoutMs: waits.gitWorktreeMs,
  });
  const started = Date.now();
  const elapsed = (): string => formatWait(Date.now() - started);
  const sessionModulePath = locatePiSessionModule(host.piPackageDir);
  // The worker starts now and loads its modules while the worktree is being created, so the fork
  // runs off the event loop and the TUI stays responsive.
  const forkWorker =
    sessionModulePath !== undefined
      ? ForkWorker.start(sessionModulePath, host.session.CURRENT_SESSION_VERSION)
      : undefined;
  const deps: HandoffDeps = {
    git,
    store: ManifestStore.forAgentDir(host.agentDir),
    selectMux: (explicit) => selectMultiplexer(explicit, env, git),
    checkoutGit: new CheckoutGit({
      env,
      timeoutMs: gitCallMs(env, CHECKOUT_GIT_TIMEOUT_MS),
      fetchTimeoutMs: waits.gitFetchMs,
    }),
    fork: (request) =>
      runFork(request, {
        worker: forkWorker,
        host: host.session,
        onPhase: (phase) => host.status(`handoff fork (${elapsed()}): ${phase}`),
      }),
    now: () => new Date(),
    sleep: (ms) => sleep(ms),
    progress: (step, text) => host.status(`handoff ${step} (${elapsed()}): ${text}`),
    timeouts: launchTimeoutsFromEnv(env),
    faults: faultPlanFromEnv(env),
  };
  return { deps, dispose: () => forkWorker?.dispose() };
}
