/**
 * The fault plan: how tests make a handoff fail or die at a chosen point, through one variable,
 * `PI_HANDOFF_FAULT`, read once by the composition root (deps.ts) and carried in the deps.
 *
 * Grammar (anything else means no fault):
 * - `<step>`: the step fails with an injected error where a real failure hurts most: worktree and
 *   fork fail after their resource exists; launch fails with the shell ready and nothing typed;
 *   confirm types a harmless line instead of Pi, so no child ever acknowledges.
 * - `kill-after:<point>`: the process kills itself with SIGKILL right after that point, so no
 *   `catch`, `finally`, exit handler or flush runs (a power cut, an OOM kill, `kill -9` of the
 *   parent Pi). Points, in order, each after the named step recorded its state in the manifest:
 *   `manifest` (`provisioning` exists, nothing else), `worktree` (`provisioned`: worktree, branch
 *   and window exist), `fork` (`forked`: the child session exists), `launching` (recorded, nothing
 *   typed yet), `launch` (typed: the child Pi is starting), `confirm` (`running`, focus not yet
 *   done), `focus` (focus recorded: only the transaction's return is missing). Two points lie
 *   inside a step, where a resource exists that the manifest does not name yet (only its intent):
 *   `window` (the worktree, branch and window were made, `provisioned` not yet recorded) and
 *   `session` (the fork wrote the child session, `forked` not yet recorded). `pi-handoff land` and
 *   `pi-handoff rebase` have their own (`land-*`, `rebase-*`: after the intent, after the one
 *   move, after the record), and so has `pi-handoff land --all` (`queue-*`, between its steps).
 * - `kill-random:<seed>[:<max ms>]`: SIGKILL at a delay drawn from the seed (0 to max ms, default
 *   3000) after the transaction starts: a random point inside some step (a timer fires between two
 *   awaits, not inside a synchronous write). The same seed gives the same delay.
 *
 * Invariants: without a plan (the default) nothing here does anything; production requests carry
 * no fault fields, only the deps do.
 */
import { HANDOFF_STEPS, type HandoffStep } from "./manifest/schema.ts";

export const KILL_POINTS = [
  "manifest",
  "window",
  "worktree",
  "session",
  "fork",
  "launching",
  "launch",
  "confirm",
  "focus",
  // pi-handoff land: the intent recorded (target not moved), the target moved (still `intended`),
  // the landing recorded (the parent not told yet).
  "land-intent",
  "land-target",
  "land-record",
  // pi-handoff rebase: the intent recorded (branch not moved), the branch moved (still `intended`),
  // the rebase recorded (the child not told yet).
  "rebase-intent",
  "rebase-move",
  "rebase-record",
  // pi-handoff land --all, for each child (its rebase and landing have the points above too): the
  // branch rebased (journal: rebasing), the check about to run (journal: checking), the target
  // moved (journal: landing), the move back intended (journal and manifest: undoing), the branch
  // moved back (manifest still undoing), the outcome recorded (the child not told yet).
  "queue-rebased",
  "queue-checking",
  "queue-landed",
  "queue-undo-intent",
  "queue-undone",
  "queue-decided",
] as const;
export type KillPoint = (typeof KILL_POINTS)[number];

export const FAULT_ENV = "PI_HANDOFF_FAULT";
const KILL_PREFIX = "kill-after:";
const RANDOM_KILL = /^kill-random:(\d{1,9})(?::(\d{1,7}))?$/;
const DEFAULT_RANDOM_KILL_MAX_MS = 3_000;

export interface FaultPlan {
  /** The step that fails with an injected error. */
  readonly failAt?: HandoffStep | undefined;
  /** The point right after which the process is killed. */
  readonly killAfter?: KillPoint;
  /** Milliseconds after the transaction starts at which the process is killed (`kill-random`). */
  readonly killAtMs?: number;
}

export const NO_FAULTS: FaultPlan = Object.freeze({});

/** The plan `PI_HANDOFF_FAULT` names (no fault when it names none). */
export function faultPlanFromEnv(env: NodeJS.ProcessEnv): FaultPlan {
  const value = env[FAULT_ENV];
  if (value === undefined) return NO_FAULTS;
  const random = RANDOM_KILL.exec(value);
  if (random !== null) {
    const max = Number(random[2] ?? DEFAULT_RANDOM_KILL_MAX_MS);
    return { killAtMs: Math.floor(seededFraction(Number(random[1])) * max) };
  }
  if (value.startsWith(KILL_PREFIX)) {
    const point = KILL_POINTS.find((candidate) => candidate === value.slice(KILL_PREFIX.length));
    return point !== undefined ? { killAfter: point } : NO_FAULTS;
  }
  const step = HANDOFF_STEPS.find((candidate) => candidate === value);
  return step !== undefined ? { failAt: step } : NO_FAULTS;
}

/** The error an injected fault throws; the transaction records it at its step. */
export class InjectedFault extends Error {
  override readonly name = "InjectedFault";
  readonly step: HandoffStep;
  constructor(step: HandoffStep) {
    super(`Injected fault at the ${step} step (${FAULT_ENV}).`);
    this.step = step;
  }
}

/** Whether the plan makes `step` fail. */
export function failsAt(plan: FaultPlan, step: HandoffStep): boolean {
  return plan.failAt === step;
}

/** Throws the injected fault when the plan makes `step` fail. */
export function injectFault(plan: FaultPlan, step: HandoffStep): void {
  if (failsAt(plan, step)) throw new InjectedFault(step);
}

/** A step boundary: dies at once when the plan's crash point is `point`. */
export function checkpoint(plan: FaultPlan, point: KillPoint): void {
  if (plan.killAfter === point) process.kill(process.pid, "SIGKILL");
}

/** Arms the plan's timed kill (`kill-random`); the timer does not keep the process alive. */
export function armTimedKill(plan: FaultPlan): void {
  if (plan.killAtMs === undefined) return;
  setTimeout(() => process.kill(process.pid, "SIGKILL"), plan.killAtMs).unref();
}

/** A number in [0, 1) from `seed` (mulberry32, first draw): reproducible, well spread for small seeds. */
export function seededFraction(seed: number): number {
  let t = (seed + 0x6d2b79f5) | 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
