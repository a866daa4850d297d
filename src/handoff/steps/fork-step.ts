/**
 * Step 3 of the handoff: the child session (the parent's active path plus one handoff message),
 * forked as it comes or begun beside the worktree step.
 *
 * Invariants:
 * - The parent session file is only ever read.
 * - The session's directory is recorded before the fork writes into it, so recovery finds a
 *   session a kill left unrecorded; then the session and how its Pi is to be started (model,
 *   thinking level, mirrored flags, approval), so recovery can rebuild the launch command.
 * - The fork overlaps the worktree step only where nothing it writes depends on that step
 *   (`forksEarly`: the backend makes the worktree at the planned path, and no setup's notes go into
 *   the message). It writes into a directory beside the manifest (`<id>.fork`, the handoff's own);
 *   the fork step links the file into the session directory under its own name (never over a file
 *   there). A step failing before the fork step waits for it and removes that directory alone.
 */
import { constants } from "node:fs";
import { copyFile, link, mkdir, rm } from "node:fs/promises";
import { basename, join } from "node:path";
import { fsyncDirectory, tempPathBeside } from "../../fs/atomic-write.ts";
import { errorCode } from "../../fs/probe.ts";
import { errorMessage } from "../../errors.ts";
import type { Manifest } from "../../manifest/schema.ts";
import type { ForkResult } from "../../session/fork.ts";
import { buildHandoffMessage, type HandoffMessage } from "../../session/handoff-message.ts";
import { childSessionDir } from "../../session/paths.ts";
import { forkStagingDir } from "../../child/launcher-file.ts";
import { checkpoint, failsAt } from "../../faults.ts";
import { hasSetupWork } from "../setup.ts";
import type { HandoffRequest, Plan } from "../preconditions.ts";
import { injectFault, type StepContext, StepFailure } from "./step.ts";

/** The fork begun beside the worktree step: for which path, where it writes, how it ended (it never rejects). */
export interface EarlyFork {
  worktreePath: string;
  /** Beside the manifest, the handoff's own (`<id>.fork`). */
  stagingDir: string;
  result: Promise<{ ok: true; forked: ForkResult } | { ok: false; message: string }>;
}

/**
 * The early fork's file put into the session directory under its own name (never over a file
 * there): linked, or across file systems copied beside it and linked from that copy, so the name
 * never shows a partial file; the directory is synced, and the staging directory then removed.
 */
async function moveEarlyFork(early: EarlyFork, forked: ForkResult, sessionDir: string): Promise<ForkResult> {
  const childSessionFile = join(sessionDir, basename(forked.childSessionFile));
  try {
    await mkdir(sessionDir, { recursive: true });
    try {
      await link(forked.childSessionFile, childSessionFile);
    } catch (error) {
      if (errorCode(error) !== "EXDEV") throw error;
      const copy = tempPathBeside(childSessionFile);
      await copyFile(forked.childSessionFile, copy, constants.COPYFILE_EXCL);
      try {
        await link(copy, childSessionFile);
      } finally {
        await rm(copy, { force: true });
      }
    }
    await fsyncDirectory(sessionDir);
  } catch (error) {
    throw new StepFailure("fork", `Could not put the child session into ${sessionDir}: ${errorMessage(error)}`);
  }
  await rm(early.stagingDir, { recursive: true, force: true });
  return { ...forked, childSessionFile };
}

/** Waits for the early fork to end, then removes what it wrote: only its own staging directory. */
export async function discardEarlyFork(early: EarlyFork): Promise<void> {
  await early.result;
  await rm(early.stagingDir, { recursive: true, force: true }).catch(() => undefined);
}

/**
 * The fork, begun beside the worktree step when nothing it writes depends on that step (see the
 * invariants); undefined otherwise, and the fork step forks as it comes.
 */
export function startEarlyFork(
  ctx: StepContext,
  plan: Plan,
  manifest: Manifest,
  request: HandoffRequest,
): EarlyFork | undefined {
  if (!forksEarly(ctx, plan)) return undefined;
  const stagingDir = forkStagingDir(ctx.deps.store.pathFor(manifest.id));
  const result = ctx.deps
    .fork({
      parentSessionFile: plan.parentSessionFile,
      leafId: plan.leafId,
      childCwd: manifest.worktree.path,
      childSessionDir: stagingDir,
      message: handoffMessage(ctx, plan, manifest, request),
    })
    .then(
      (forked) => ({ ok: true as const, forked }),
      (error: unknown) => ({ ok: false as const, message: errorMessage(error) }),
    );
  return { worktreePath: manifest.worktree.path, stagingDir, result };
}

/** Whether the fork can begin beside the worktree step (see the invariants). */
function forksEarly(ctx: StepContext, plan: Plan): boolean {
  const setupWork = { carry: plan.carry, copy: plan.config.copy, symlink: plan.config.symlink };
  return plan.mux.createsAtRequestedPath === true && !(hasSetupWork(setupWork) && ctx.deps.checkoutGit !== undefined);
}

/** Step 3: the child session (active branch plus one handoff message), or the one begun beside step 2. */
export async function forkSession(
  ctx: StepContext,
  plan: Plan,
  manifest: Manifest,
  request: HandoffRequest,
  early: EarlyFork | undefined,
): Promise<Manifest> {
  ctx.enter("fork", "Copying the conversation into the worktree's session");
  const sessionDir = childSessionDir({
    parentSessionDir: request.parent.sessionDir,
    parentCwd: request.parent.cwd,
    worktreePath: manifest.worktree.path,
    agentDir: request.agentDir,
  });
  // The file name is Pi's choice: the directory is recorded first, so recovery can find the file.
  manifest = await ctx.deps.store.update(manifest.id, (m) => {
    m.intent = { ...m.intent, sessionDir: sessionDir.dir };
  });
  let forked: ForkResult | undefined;
  if (early !== undefined) {
    const settled = await early.result;
    if (!settled.ok) {
      await discardEarlyFork(early);
      throw new StepFailure("fork", settled.message);
    }
    if (early.worktreePath === manifest.worktree.path)
      forked = await moveEarlyFork(early, settled.forked, sessionDir.dir);
    // The worktree is elsewhere after all: forked anew there (on this thread, the worker used).
    else await discardEarlyFork(early);
  }
  if (forked === undefined) {
    try {
      forked = await ctx.deps.fork({
        parentSessionFile: plan.parentSessionFile,
        leafId: plan.leafId,
        childCwd: manifest.worktree.path,
        childSessionDir: sessionDir.dir,
        message: handoffMessage(ctx, plan, manifest, request),
      });
    } catch (error) {
      throw new StepFailure("fork", errorMessage(error));
    }
  }
  const child = forked;
  checkpoint(ctx.faults, "session");
  // With the session, how its Pi is to be started: recovery rebuilds the launch command from
  // these if this launch never completes.
  const recordChild = (m: Manifest): void => {
    m.child = {
      ...m.child,
      sessionFile: child.childSessionFile,
      sessionId: child.childSessionId,
      model: plan.model,
      ...(request.thinkingLevel !== undefined ? { thinkingLevel: request.thinkingLevel } : {}),
      extraArgs: [...request.extraPiArgs],
      approve: request.projectTrusted,
      // Chosen once, here: the launch (and any relaunch) passes --session-dir from this record.
      sessionDir,
    };
  };
  if (failsAt(ctx.faults, "fork")) {
    await ctx.deps.store.update(manifest.id, recordChild);
    injectFault(ctx.faults, "fork");
  }
  return ctx.deps.store.transition(manifest.id, "forked", recordChild, undefined, ctx.takeSteps);
}

/** The one message the child session gets: where it is, what it came from, its task and setup notes. */
function handoffMessage(ctx: StepContext, plan: Plan, manifest: Manifest, request: HandoffRequest): HandoffMessage {
  return buildHandoffMessage({
    handoffId: manifest.id,
    manifestPath: ctx.deps.store.pathFor(manifest.id),
    branch: plan.branch,
    baseRef: plan.base.ref,
    baseSha: plan.base.sha,
    worktreePath: manifest.worktree.path,
    mainCheckout: plan.repo.mainCheckout,
    parentSessionFile: plan.parentSessionFile,
    ...(request.args.task !== undefined ? { task: request.args.task } : {}),
    ...(plan.existing ? { existingBranch: true } : {}),
    setupNotes: [
      ...plan.notes,
      ...(plan.config.postCreate !== undefined
        ? [
            `Before this Pi started, these postCreate commands ran in this worktree and succeeded: ${plan.config.postCreate.join("; ")}`,
          ]
        : []),
    ],
  });
}
