/**
 * Steps 4 to 6 of the handoff (launch, confirm, focus) through the shared `ChildLauncher`
 * (child/launcher.ts), the same path recovery's relaunch takes.
 *
 * Invariants:
 * - What to start is derived from the manifest (`launchCommandFor`), as a relaunch derives it.
 * - postCreate commands run in the launcher before Pi, through a runner that records how they
 *   ended (child/post-create.ts); a failed one is recorded with its exit status, and fails the step.
 * - From confirmation on the child may be running (`reachLateStep`): an unexpected error then is
 *   not recorded as a launch failure.
 */
import type { Manifest } from "../../manifest/schema.ts";
import type { MuxResult } from "../../mux/types.ts";
import { ChildLauncher, type LaunchOutcome, type LaunchRequest } from "../../child/launcher.ts";
import { launchCommandFor } from "../../child/launch-command.ts";
import { postCreateFiles, postCreatePrelude, writeRunner } from "../../child/post-create.ts";
import { errorMessage } from "../../errors.ts";
import { failsAt } from "../../faults.ts";
import type { HandoffRequest, Plan } from "../preconditions.ts";
import { launchEnvironment, type StepContext, StepFailure } from "./step.ts";

/**
 * Steps 4 to 6 through the shared `ChildLauncher`: what to start is derived from the manifest
 * (`launchCommandFor`), the launcher started (by the window itself, or a short typed line once
 * the pane's shell is ready), then the child is confirmed and, if asked, focused.
 */
export async function launchChild(
  ctx: StepContext,
  plan: Plan,
  manifest: Manifest,
  request: HandoffRequest,
  shellReady: Promise<MuxResult<object>> | undefined,
): Promise<LaunchOutcome> {
  const derived = launchCommandFor(manifest, launchEnvironment(request));
  if (!derived.ok) throw new StepFailure("launch", derived.message);
  const postCreate = await preparePostCreate(ctx, plan, manifest);
  const outcome = await childLauncher(ctx).launch({
    mux: plan.mux,
    manifest,
    command: derived.command,
    windowCommand: manifest.launch?.windowCommand === true,
    ...(shellReady !== undefined ? { shellReady } : {}),
    focus: request.args.focus,
    recoveryCommand: ctx.recoveryCli,
    ...postCreate,
  });
  if (outcome.code === "shell_not_ready" || outcome.code === "launcher_not_written" || outcome.code === "type_failed")
    throw new StepFailure("launch", outcome.message);
  if (outcome.code === "post_create_failed") {
    await ctx.deps.store.update(outcome.manifest.id, (m) => {
      if (m.setup?.postCreate !== undefined) {
        m.setup.postCreate = {
          ...m.setup.postCreate,
          exitStatus: outcome.exitStatus,
          failedCommand: outcome.command,
        };
      }
    });
    throw new StepFailure("launch", outcome.message);
  }
  return outcome;
}

/**
 * postCreate commands run in the launcher before Pi, through a runner that records how they
 * ended (post-create.ts): the runner written, and what the launch request carries for them. Not
 * with the confirm fault, whose launcher starts nothing at all.
 */
async function preparePostCreate(
  ctx: StepContext,
  plan: Plan,
  manifest: Manifest,
): Promise<Pick<LaunchRequest, "patch" | "postCreate">> {
  const commands = failsAt(ctx.faults, "confirm") ? undefined : plan.config.postCreate;
  if (commands === undefined) return {};
  const hookFiles = postCreateFiles(ctx.deps.store.pathFor(manifest.id));
  try {
    await writeRunner(hookFiles, {
      handoffId: manifest.id,
      mainCheckout: plan.repo.mainCheckout,
      worktreePath: manifest.worktree.path,
      branch: plan.branch,
    });
  } catch (error) {
    throw new StepFailure(
      "launch",
      `Could not write the postCreate runner ${hookFiles.runnerFile}: ${errorMessage(error)}`,
    );
  }
  return {
    patch: (m: Manifest) => {
      m.setup = { ...m.setup, postCreate: { commands: [...commands], statusFile: hookFiles.statusFile } };
    },
    postCreate: {
      prelude: postCreatePrelude(hookFiles, commands),
      statusFile: hookFiles.statusFile,
      commands,
    },
  };
}

/** The shared launcher, its progress feeding this transaction's steps and status line. */
function childLauncher(ctx: StepContext): ChildLauncher {
  return new ChildLauncher({
    store: ctx.deps.store,
    now: () => ctx.deps.now(),
    sleep: (ms) => ctx.deps.sleep(ms),
    timeouts: ctx.deps.timeouts,
    progress: (step, text) => {
      if (step === "confirm" || step === "focus") ctx.reachLateStep(step);
      ctx.enter(step, text);
    },
    // The status line shows each wait as it runs.
    tick: (step, text) => ctx.deps.progress(step, text),
    faults: ctx.faults,
  });
}
