/**
 * The handoff transaction: preconditions -> manifest -> worktree -> fork -> launch -> confirm -> focus.
 * It only sequences the steps: the checks are preconditions.ts, the steps steps/ (manifest-step.ts,
 * worktree-step.ts, setup-step.ts, fork-step.ts, launch-step.ts, each a function of the
 * `StepContext` this class gives them: steps/step.ts), the words notice.ts, the ports deps.ts, the
 * launch src/child/. It keeps the step timing and records a failure.
 *
 * Invariants:
 * - Nothing is written before every precondition holds; a refusal leaves no trace.
 * - The manifest exists before any other resource, and records each step before the next begins.
 * - Any failure after the manifest is written keeps every resource, records the step, the error
 *   and the git state, and is reported with what exists and how to go on. Nothing is deleted.
 * - Focus happens only after the child is confirmed; a focus failure is not a launch failure.
 *   Steps 4-6 run through `ChildLauncher` (src/child/), the same path recovery's relaunch takes.
 * - The launch settings (model, thinking level, mirrored flags, approval) are recorded with the
 *   child session, so recovery can rebuild the launch command instead of guessing them.
 * - One actor: from the manifest's creation to the end of confirm/focus the transaction holds the
 *   handoff's action lock (`ManifestStore.withActionLock`), so recovery (relaunch, remove, prune)
 *   is refused at once while it runs, and takes the lock over once its process is dead.
 * - Intent before creation: the window's name and server are in the manifest from its creation,
 *   the child session's directory before the fork, so recovery finds and names a window or a
 *   session a kill inside a step left unrecorded (inventory/gather.ts).
 * - The parent session file is only ever read.
 * - The fork overlaps the worktree step where nothing it writes depends on that step: the backend
 *   makes the worktree at the planned path and there is no setup whose notes the handoff message
 *   carries. It writes into a directory beside the manifest (`<id>.fork`, the handoff's own, like
 *   its launcher); the fork step records the session directory, then links the file there, as its
 *   own fork would write it. So what exists after a failure or a kill is what it was without the
 *   overlap: a step failing before the fork step waits for it and removes that directory.
 */
import { errorMessage } from "../errors.ts";
import type { HandoffStep, Manifest, StepTime } from "../manifest/schema.ts";
import type { SwitchKeys } from "../mux/types.ts";
import { isActionBusy } from "../manifest/store.ts";
import { cancelWindowLauncher, type LaunchOutcome } from "../child/launcher.ts";
import type { HandoffDeps } from "./deps.ts";
import { armTimedKill, checkpoint, InjectedFault, NO_FAULTS, type FaultPlan } from "../faults.ts";
import {
  describeFailure,
  describeRetained,
  describeSuccess,
  refusalText,
  withNotes,
  type Refusal,
  type RefusalCode,
} from "./notice.ts";
import { planHandoff, type HandoffRequest, type Plan } from "./preconditions.ts";
import { whileWaiting } from "../mux/backoff.ts";
import { formatWait } from "../text.ts";
import { recoveryCommand } from "../child/pi-command.ts";
import type { Failed, Succeeded } from "../outcome.ts";
import { createManifest } from "./steps/manifest-step.ts";
import { provisionWorktree } from "./steps/worktree-step.ts";
import { setUpStep } from "./steps/setup-step.ts";
import { discardEarlyFork, forkSession, startEarlyFork } from "./steps/fork-step.ts";
import { launchChild } from "./steps/launch-step.ts";
import { type StepContext, StepFailure } from "./steps/step.ts";

export type { HandoffDeps, MuxChoice } from "./deps.ts";
export type { HandoffRequest, ParentSnapshot } from "./preconditions.ts";

/** What the user is told; `ok` only when the child confirmed. */
export type HandoffOutcome =
  | Failed<"refused", { reason: RefusalCode }>
  | Succeeded<{ code: "running"; manifest: Manifest; message: string; keys?: SwitchKeys }>
  | Failed<"launch_unconfirmed", { manifest: Manifest; keys?: SwitchKeys }>
  | Failed<"failed", { step: HandoffStep; manifest: Manifest }>;

function refused(refusal: Refusal): HandoffOutcome {
  return { ok: false, code: "refused", reason: refusal.code, message: refusalText(refusal) };
}

export class HandoffTransaction {
  private readonly deps: HandoffDeps;
  /** Set once the launch reaches confirmation: from then on the child may be running. */
  private lateStep: "confirm" | "focus" | undefined;
  /** The step under way, so an unexpected error is recorded where it happened. */
  private currentStep: HandoffStep = "preconditions";
  /** When the step under way (or its part not yet recorded) began, on a monotonic clock. */
  private stepStartedAt = 0;
  /** Steps that ended since the last history entry this transaction wrote, with their times. */
  private unrecordedSteps: StepTime[] = [];
  /** How the user runs `pi-handoff` (the request's PATH decides), for the messages that name it. */
  private recoveryCli = "";

  constructor(deps: HandoffDeps) {
    this.deps = deps;
  }

  async run(request: HandoffRequest): Promise<HandoffOutcome> {
    this.recoveryCli = recoveryCommand(request.env);
    this.lateStep = undefined;
    this.currentStep = "preconditions";
    this.unrecordedSteps = [];
    this.stepStartedAt = performance.now();
    armTimedKill(this.faults);
    this.enter("preconditions", "Checking the session, the repository and the branch");
    const planned = await planHandoff(this.deps, request);
    if (!planned.ok) return refused(planned.refusal);
    const plan = planned.value;
    // The id is new (time plus random), so no one else can hold it: busy here is a programming error.
    const outcome = await this.deps.store.withActionLock(plan.id, "handoff", () =>
      this.runLocked(plan, request, this.stepContext()),
    );
    if (isActionBusy(outcome)) throw new Error(outcome.message);
    return outcome;
  }

  /** Steps 1 to 6, holding the handoff's action lock. */
  private async runLocked(plan: Plan, request: HandoffRequest, steps: StepContext): Promise<HandoffOutcome> {
    this.enter("manifest", "Recording the handoff");
    const created = await createManifest(steps, plan, request);
    if (!created.ok) return refused(created.refusal);
    let manifest = created.manifest;
    checkpoint(this.faults, "manifest");

    let launched: LaunchOutcome;
    // Started with the worktree where it can be (see the invariants); awaited by the fork step.
    const early = startEarlyFork(steps, plan, manifest, request);
    try {
      manifest = await provisionWorktree(steps, plan, manifest, request);
      checkpoint(this.faults, "worktree");
      // A pane that runs a shell (not the launcher) starts it up while the worktree is set up and
      // the conversation is copied.
      const shellReady =
        manifest.launch?.windowCommand === true
          ? undefined
          : plan.mux.waitForShell(manifest.mux, { timeoutMs: this.deps.timeouts.shellMs });
      manifest = await setUpStep(steps, plan, manifest);
      manifest = await forkSession(steps, plan, manifest, request, early);
      checkpoint(this.faults, "fork");
      launched = await launchChild(steps, plan, manifest, request, shellReady);
    } catch (error) {
      if (!(error instanceof StepFailure) && !(error instanceof InjectedFault) && this.lateStep !== undefined) {
        // The child may already be running: an unexpected error while confirming or focusing is
        // not a launch failure, so it is not recorded as one.
        throw error;
      }
      const step = error instanceof StepFailure || error instanceof InjectedFault ? error.step : this.currentStep;
      const message = errorMessage(error);
      if (early !== undefined) await discardEarlyFork(early);
      const failed = await this.fail(plan, manifest.id, step, message);
      return { ...failed, message: withNotes(failed.message, plan.notes) };
    }

    if (launched.code !== "running" && launched.code !== "launch_unconfirmed")
      throw new Error(`Unexpected launch outcome ${launched.code}.`);
    // The keys that switch between the two windows, for the next steps (where the terminal has them).
    const keys = (await plan.mux.switchKeys?.(launched.manifest.mux)) ?? {};
    if (launched.code === "launch_unconfirmed") {
      return {
        ok: false,
        code: "launch_unconfirmed",
        manifest: launched.manifest,
        message: withNotes(`${launched.message} ${describeRetained(launched.manifest)}`, plan.notes),
        keys,
      };
    }
    return {
      ok: true,
      code: "running",
      manifest: launched.manifest,
      message: withNotes(describeSuccess(launched.manifest), plan.notes),
      keys,
    };
  }

  /** What the steps get of this run (steps/step.ts): its deps, its words' command, its timing. */
  private stepContext(): StepContext {
    return {
      deps: this.deps,
      recoveryCli: this.recoveryCli,
      faults: this.faults,
      enter: (step, text) => this.enter(step, text),
      whileStep: <T>(step: HandoffStep, text: string, promise: Promise<T>) => this.whileStep(step, text, promise),
      takeSteps: this.takeSteps,
      takeEarlierSteps: () => this.unrecordedSteps.splice(0),
      reachLateStep: (step) => {
        this.lateStep = step;
      },
    };
  }

  /** A step's outside wait, shown in the status line as it runs (the elapsed seconds). */
  private whileStep<T>(step: HandoffStep, text: string, promise: Promise<T>): Promise<T> {
    return whileWaiting(
      promise,
      () => this.deps.now().getTime(),
      (elapsed) => this.deps.progress(step, `${text} (${formatWait(elapsed)})`),
    );
  }

  private enter(step: HandoffStep, text: string): void {
    // Entering the step under way again (the first, said as the command starts) goes on timing it.
    if (step !== this.currentStep) this.closeStep();
    this.currentStep = step;
    this.deps.progress(step, text);
  }

  /** The time of the step under way so far joins the unrecorded ones; it goes on from now. */
  private closeStep(): void {
    const now = performance.now();
    this.unrecordedSteps.push({ step: this.currentStep, ms: Math.max(0, Math.round(now - this.stepStartedAt)) });
    this.stepStartedAt = now;
  }

  /** The steps for the history entry being written now (the step under way counted up to now). */
  private readonly takeSteps = (): StepTime[] => {
    this.closeStep();
    const steps = this.unrecordedSteps;
    this.unrecordedSteps = [];
    return steps;
  };

  private async fail(plan: Plan, id: string, step: HandoffStep, message: string): Promise<HandoffOutcome> {
    // The backend may have put the worktree somewhere other than planned (Herdr reports its
    // realpath, a reconciled create its own path): the recorded path is the one that exists.
    const recorded = await this.deps.store.read(id);
    const worktreePath = recorded.ok ? recorded.manifest.worktree.path : plan.worktreePath;
    // A window whose launcher waits for the launch step is told that none comes: it leaves the
    // user's shell in the pane at once.
    if (recorded.ok)
      await cancelWindowLauncher(
        this.deps.store,
        recorded.manifest,
        `Handoff ${id} failed at the ${step} step, so no Pi was started here; ${this.recoveryCli} inspect ${id} shows what exists.`,
      );
    let gitState: Manifest["gitState"];
    try {
      gitState = await this.deps.git.captureState(worktreePath, plan.base.sha);
    } catch {
      gitState = undefined; // The worktree may not exist: nothing to capture.
    }
    const failed = await this.deps.store.transition(
      id,
      "failed",
      (m) => {
        m.error = { step, message, at: this.isoNow() };
        if (gitState !== undefined) m.gitState = gitState;
      },
      `failed at ${step}`,
      this.takeSteps,
    );
    return { ok: false, code: "failed", step, manifest: failed, message: describeFailure(step, message, failed) };
  }

  private get faults(): FaultPlan {
    return this.deps.faults ?? NO_FAULTS;
  }

  private isoNow(): string {
    return this.deps.now().toISOString();
  }
}
