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
 *   done), `focus` (focus recorded: only the transaction's return is missing).
 *
 * Invariants: without a plan (the default) nothing here does anything; production requests carry
 * no fault fields, only the deps do.
 */
import { HANDOFF_STEPS, type HandoffStep } from "../manifest/schema.ts";

export const KILL_POINTS = ["manifest", "worktree", "fork", "launching", "launch", "confirm", "focus"] as const;
export type KillPoint = (typeof KILL_POINTS)[number];

export const FAULT_ENV = "PI_HANDOFF_FAULT";
const KILL_PREFIX = "kill-after:";

export interface FaultPlan {
  /** The step that fails with an injected error. */
  readonly failAt?: HandoffStep;
  /** The point right after which the process is killed. */
  readonly killAfter?: KillPoint;
}

export const NO_FAULTS: FaultPlan = Object.freeze({});

/** The plan `PI_HANDOFF_FAULT` names (no fault when it names none). */
export function faultPlanFromEnv(env: NodeJS.ProcessEnv): FaultPlan {
  const value = env[FAULT_ENV];
  if (value === undefined) return NO_FAULTS;
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
