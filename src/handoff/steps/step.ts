/**
 * What every step of the handoff transaction gets from it (`StepContext`), and how a step fails.
 * The steps (manifest-step.ts, worktree-step.ts, setup-step.ts, fork-step.ts, launch-step.ts) are
 * functions of this context; the transaction (../transaction.ts) only sequences them.
 *
 * Invariants:
 * - A step says it has begun through `enter` (the progress line and the step's timing) and hands
 *   `takeSteps` to the store when it records its state, so each history entry carries the times
 *   of the steps since the last one.
 * - A step fails by throwing `StepFailure` with its step and one sentence; the transaction records
 *   it (state `failed`, the git state) and keeps every resource.
 * - Faults are injected only where a test's plan asks (faults.ts); nothing without a plan.
 */
import type { HandoffStep, StepTime } from "../../manifest/schema.ts";
import type { LaunchEnvironment } from "../../child/launch-command.ts";
import { failsAt, InjectedFault, type FaultPlan } from "../../faults.ts";
import type { HandoffDeps } from "../deps.ts";
import type { HandoffRequest } from "../preconditions.ts";

export interface StepContext {
  readonly deps: HandoffDeps;
  /** How the user runs `pi-handoff` (the request's PATH decides), for the messages that name it. */
  readonly recoveryCli: string;
  readonly faults: FaultPlan;
  /** The step begins (or goes on): its progress line, and its time from now. */
  enter(step: HandoffStep, text: string): void;
  /** A step's outside wait, shown in the status line as it runs (the elapsed seconds). */
  whileStep<T>(step: HandoffStep, text: string, promise: Promise<T>): Promise<T>;
  /** The steps for the history entry being written now (the step under way counted up to now). */
  readonly takeSteps: () => StepTime[];
  /** The steps already ended and not yet recorded (the checks before the first entry), taken. */
  takeEarlierSteps(): StepTime[];
  /** The launch reached confirmation (or focus): from then on the child may be running. */
  reachLateStep(step: "confirm" | "focus"): void;
}

export class StepFailure extends Error {
  readonly step: HandoffStep;
  constructor(step: HandoffStep, message: string) {
    super(message);
    this.step = step;
  }
}

/** Where tests make a step fail (faults.ts); nothing without a plan. */
export function injectFault(faults: FaultPlan, step: HandoffStep): void {
  if (failsAt(faults, step)) throw new InjectedFault(step);
}

/** How the child is started, from what the command was given. */
export function launchEnvironment(request: HandoffRequest): LaunchEnvironment {
  return { piCommand: request.piCommand, agentDir: request.agentDir, env: request.env };
}
