/**
 * Step 2b of the handoff: carried changes, then the settings' copy and symlink entries, all inside
 * the new worktree only.
 *
 * Invariants:
 * - Skipped, and not recorded, when there is nothing to do (or no checkout git to do it with).
 * - What was done is recorded in the manifest's `setup` (at most 100 names of each kind) and told
 *   to the user and the child as notes (setup.ts `describeSetup`).
 */
import type { Manifest } from "../../manifest/schema.ts";
import { errorMessage } from "../../errors.ts";
import { describeSetup, hasSetupWork, setUpWorktree, type SetupResult } from "../setup.ts";
import type { Plan } from "../preconditions.ts";
import { injectFault, type StepContext, StepFailure } from "./step.ts";

/**
 * Step 2b: carried changes, then the settings' copy and symlink entries, all inside the new
 * worktree; skipped (and not recorded) when there is nothing to do.
 */
export async function setUpStep(ctx: StepContext, plan: Plan, manifest: Manifest): Promise<Manifest> {
  const work = { carry: plan.carry, copy: plan.config.copy, symlink: plan.config.symlink };
  if (!hasSetupWork(work) || ctx.deps.checkoutGit === undefined) {
    injectFault(ctx.faults, "setup");
    return manifest;
  }
  ctx.enter(
    "setup",
    plan.carry !== undefined ? "Carrying the uncommitted changes into the worktree" : "Copying files into the worktree",
  );
  let result: SetupResult;
  try {
    result = await setUpWorktree({
      git: ctx.deps.checkoutGit,
      mainCheckout: plan.repo.mainCheckout,
      worktreePath: manifest.worktree.path,
      ...work,
    });
  } catch (error) {
    throw new StepFailure("setup", errorMessage(error));
  }
  plan.notes.push(...describeSetup(result));
  const recorded = await ctx.deps.store.update(manifest.id, (m) => {
    m.setup = {
      ...m.setup,
      ...(result.carried !== undefined
        ? {
            carried: {
              mode: result.carried.mode,
              from: result.carried.from,
              changes: result.carried.changes.length,
              untracked: result.carried.untracked.length,
            },
          }
        : {}),
      ...(result.copied.length > 0 ? { copied: result.copied.slice(0, 100) } : {}),
      ...(result.symlinked.length > 0 ? { symlinked: result.symlinked.slice(0, 100) } : {}),
    };
  });
  injectFault(ctx.faults, "setup");
  return recorded;
}
