/**
 * The real dependencies of recovery (git, the manifest store, multiplexers by location, process facts),
 * assembled the same way for `pi-handoff` and for `/handoffs` inside Pi.
 *
 * Invariants: constructs only; every port it builds carries its own per-call timeout.
 */
import { readHandoffEnv, type HandoffEnvName } from "../config/env.ts";
import { gitCallMs } from "../config/waits.ts";
import { GitCli } from "../git/git.ts";
import { LandGit } from "../git/land.ts";
import { ChildReportStore } from "../manifest/child-reports.ts";
import { ManifestStore } from "../manifest/store.ts";
import { muxForLocation } from "../mux/registry.ts";
import { agentDirFromEnv } from "../session/paths.ts";
import type { InventoryDeps } from "../inventory/inventory.ts";
import { faultPlanFromEnv, NO_FAULTS } from "../faults.ts";
import type { LandDeps } from "../land/land.ts";
import type { QueueDeps } from "../queue/queue.ts";
import type { RebaseDeps } from "../rebase/rebase.ts";
import { HandoffNoteStore } from "../manifest/handoff-notes.ts";

/** Per git call (unless PI_HANDOFF_GIT_TIMEOUT_MS is set); recovery only reads and removes, never checks out a whole tree. */
const RECOVERY_GIT_TIMEOUT_MS = 15_000;

/** The waits recovery's ports read from the environment, checked before a command acts. */
const RECOVERY_ENV: readonly HandoffEnvName[] = [
  "PI_HANDOFF_GIT_TIMEOUT_MS",
  "PI_HANDOFF_MUX_TIMEOUT_MS",
  "PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS",
  "PI_HANDOFF_HERDR_PING_TIMEOUT_MS",
];

/** The sentence refusing an unusable wait variable, so a command never runs on a default the user did not choose; undefined: all usable. */
export function recoveryEnvProblem(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const read = readHandoffEnv(env, RECOVERY_ENV);
  return read.ok ? undefined : read.message;
}

export type RecoveryDeps = InventoryDeps & { git: GitCli; env: NodeJS.ProcessEnv };

export function createRecoveryDeps(env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): RecoveryDeps {
  const agentDir = agentDirFromEnv(env);
  const git = new GitCli({ env, timeoutMs: gitCallMs(env, RECOVERY_GIT_TIMEOUT_MS) });
  return {
    store: ManifestStore.forAgentDir(agentDir),
    agentDir,
    git,
    env,
    // Per multiplexer call: PI_HANDOFF_MUX_TIMEOUT_MS, else 5 s (config/waits.ts).
    muxFor: (location, context) =>
      muxForLocation(location, { env, git, ...(context?.askOnce === undefined ? {} : { askOnce: context.askOnce }) }),
    now,
  };
}

/** Per git call of a landing: a merge or a checkout update of a large tree takes longer than a read. */
export const LAND_GIT_TIMEOUT_MS = 120_000;

/** Recovery's dependencies plus what `land` and `rebase` need: their git, the report store (to tell the parent), the fault plan for tests. */
export function createLandDeps(env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): LandDeps {
  const deps = createRecoveryDeps(env, now);
  // The one fault plan (faults.ts): PI_HANDOFF_FAULT is read there, once, for tests' crash points.
  const faults = faultPlanFromEnv(env);
  return {
    ...deps,
    landGit: new LandGit({ env, timeoutMs: gitCallMs(env, LAND_GIT_TIMEOUT_MS) }),
    reports: ChildReportStore.forAgentDir(deps.agentDir),
    ...(faults === NO_FAULTS ? {} : { faults }),
  };
}

/** What `rebase` needs besides the landing's: the note store through which the child is told. */
export function createRebaseDeps(env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): RebaseDeps {
  const deps = createLandDeps(env, now);
  return { ...deps, notes: HandoffNoteStore.forAgentDir(deps.agentDir) };
}

/** What `land --all` (the queue) needs: a landing's and a rebase's. */
export function createQueueDeps(env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): QueueDeps {
  const deps = createLandDeps(env, now);
  return { ...deps, notes: HandoffNoteStore.forAgentDir(deps.agentDir) };
}
