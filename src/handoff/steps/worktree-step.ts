/**
 * Step 2 of the handoff: the worktree and its window or workspace, unfocused.
 *
 * Invariants:
 * - Where the backend can (tmux), the pane's command is the launcher, written first beside the
 *   manifest, which waits for the launch step: nothing is ever typed there.
 * - What a failed create left (a window, a path, a started launcher) is recorded before the step
 *   fails, so recovery finds it.
 * - The new worktree must sit at the base commit (with `--existing`, the branch's commit when it
 *   was checked); otherwise the step fails, the workspace recorded.
 */
import type { Manifest } from "../../manifest/schema.ts";
import { prepareWindowLauncher, type WindowLauncher } from "../../child/launcher.ts";
import { errorMessage } from "../../errors.ts";
import { checkpoint, failsAt } from "../../faults.ts";
import type { HandoffRequest, Plan } from "../preconditions.ts";
import { injectFault, launchEnvironment, type StepContext, StepFailure } from "./step.ts";

/**
 * Step 2: worktree and pane, unfocused. Where the backend can (tmux), the pane's command is the
 * launcher, written first, which waits for the launch step: nothing is ever typed there.
 */
export async function provisionWorktree(
  ctx: StepContext,
  plan: Plan,
  manifest: Manifest,
  request: HandoffRequest,
): Promise<Manifest> {
  ctx.enter("worktree", `Creating worktree ${plan.worktreePath}`);
  let window: WindowLauncher;
  try {
    window = await prepareWindowLauncher(
      ctx.deps.store,
      manifest,
      ctx.deps.timeouts,
      launchEnvironment(request),
      ctx.recoveryCli,
    );
  } catch (error) {
    throw new StepFailure("worktree", `Could not write the launcher beside the manifest: ${errorMessage(error)}`);
  }
  const created = await ctx.whileStep(
    "worktree",
    `Creating worktree ${plan.worktreePath}`,
    plan.mux.createWorkspace({
      mainCheckout: plan.repo.mainCheckout,
      branch: plan.branch,
      baseSha: plan.base.sha,
      worktreePath: plan.worktreePath,
      label: plan.branch,
      command: window.command,
      ...(plan.existing ? { existingBranch: true } : {}),
    }),
  );
  if (!created.ok) {
    if (created.partial !== undefined) {
      const partial = created.partial;
      await ctx.deps.store.update(manifest.id, (m) => {
        if (partial.location !== undefined) m.mux = partial.location;
        if (partial.worktreePath !== undefined) m.worktree = { path: partial.worktreePath };
        // A window that runs the launcher, left by a failed checkout: `fail` tells its launcher no launch comes.
        if (partial.commandStarted === true) m.launch = { launcherFile: window.files.script, windowCommand: true };
      });
    }
    throw new StepFailure("worktree", created.message);
  }
  checkpoint(ctx.faults, "window");
  const recordWorkspace = (m: Manifest): void => {
    m.mux = created.location;
    m.worktree = { path: created.worktreePath };
    m.launch = {
      launcherFile: window.files.script,
      ...(created.commandStarted === true ? { windowCommand: true } : {}),
    };
  };
  // A branch that appeared between the checks and the create would be checked out as it is
  // (Herdr ignores --base for an existing branch): the worktree must sit at the base commit.
  // With --existing, the branch's commit when it was checked: it must not have moved meanwhile.
  const head = await ctx.deps.git.resolveCommit(created.worktreePath, "HEAD");
  if (head !== plan.base.sha) {
    await ctx.deps.store.update(manifest.id, recordWorkspace);
    throw new StepFailure(
      "worktree",
      plan.existing
        ? `The new worktree is at ${head ?? "no commit"}, not at ${plan.branch}'s commit ${plan.base.sha}; the branch must have moved meanwhile.`
        : `The new worktree is at ${head ?? "no commit"}, not at the base ${plan.base.sha}; the branch ${plan.branch} must have been created by something else meanwhile.`,
    );
  }
  if (failsAt(ctx.faults, "worktree")) {
    await ctx.deps.store.update(manifest.id, recordWorkspace);
    injectFault(ctx.faults, "worktree");
  }
  return ctx.deps.store.transition(manifest.id, "provisioned", recordWorkspace, undefined, ctx.takeSteps);
}
