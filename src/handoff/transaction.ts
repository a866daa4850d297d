/**
 * The handoff transaction: preconditions -> manifest -> worktree -> fork -> launch -> confirm -> focus.
 * It only sequences the steps: the checks are preconditions.ts, the words notice.ts, the ports
 * deps.ts, the launch src/child/.
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
import { constants } from "node:fs";
import { copyFile, link, mkdir, rm } from "node:fs/promises";
import { fsyncDirectory, tempPathBeside } from "../fs/atomic-write.ts";
import { basename, join } from "node:path";
import { errorMessage } from "../errors.ts";
import { errorCode } from "../fs/probe.ts";
import type { HandoffStep, Manifest, StepTime } from "../manifest/schema.ts";
import { newManifest } from "../manifest/factory.ts";
import type { MuxResult, SwitchKeys } from "../mux/types.ts";
import { muxLabel } from "../mux/label.ts";
import { isActionBusy } from "../manifest/store.ts";
import type { ForkResult } from "../session/fork.ts";
import { buildHandoffMessage, prepareTask, type HandoffMessage } from "../session/handoff-message.ts";
import { childSessionDir } from "../session/paths.ts";
import {
  cancelWindowLauncher,
  ChildLauncher,
  prepareWindowLauncher,
  type LaunchOutcome,
  type LaunchRequest,
  type WindowLauncher,
} from "../child/launcher.ts";
import { launchCommandFor, type LaunchEnvironment } from "../child/launch-command.ts";
import { forkStagingDir } from "../child/launcher-file.ts";
import { ownerOf } from "../manifest/owner.ts";
import { postCreateFiles, postCreatePrelude, writeRunner } from "../child/post-create.ts";
import type { HandoffDeps } from "./deps.ts";
import { armTimedKill, checkpoint, failsAt, InjectedFault, NO_FAULTS, type FaultPlan } from "../faults.ts";
import {
  describeFailure,
  describeRetained,
  describeSuccess,
  environmentNote,
  refusalText,
  withNotes,
  type Refusal,
  type RefusalCode,
} from "./notice.ts";
import { planHandoff, type HandoffRequest, type Plan } from "./preconditions.ts";
import { fillPortPlaceholders } from "../config/schema.ts";
import { choosePorts, portsHeldBy } from "../ports/reserve.ts";
import { loopbackProbe } from "../ports/probe.ts";
import { describeSetup, hasSetupWork, setUpWorktree, type SetupResult } from "./setup.ts";
import { whileWaiting } from "../mux/backoff.ts";
import { formatWait } from "../text.ts";
import { recoveryCommand } from "../child/pi-command.ts";

export type { HandoffDeps, MuxChoice } from "./deps.ts";
export type { HandoffRequest, ParentSnapshot } from "./preconditions.ts";

/** What the user is told; `ok` only when the child confirmed. */
export type HandoffOutcome =
  | { ok: false; code: "refused"; reason: RefusalCode; message: string }
  | { ok: true; code: "running"; manifest: Manifest; message: string; keys?: SwitchKeys }
  | { ok: false; code: "launch_unconfirmed"; manifest: Manifest; message: string; keys?: SwitchKeys }
  | { ok: false; code: "failed"; step: HandoffStep; manifest: Manifest; message: string };

function refused(refusal: Refusal): HandoffOutcome {
  return { ok: false, code: "refused", reason: refusal.code, message: refusalText(refusal) };
}

/** The fork begun beside the worktree step: for which path, where it writes, how it ended (it never rejects). */
interface EarlyFork {
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
async function discardEarlyFork(early: EarlyFork): Promise<void> {
  await early.result;
  await rm(early.stagingDir, { recursive: true, force: true }).catch(() => undefined);
}

class StepFailure extends Error {
  readonly step: HandoffStep;
  constructor(step: HandoffStep, message: string) {
    super(message);
    this.step = step;
  }
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
    const outcome = await this.deps.store.withActionLock(plan.id, "handoff", () => this.runLocked(plan, request));
    if (isActionBusy(outcome)) throw new Error(outcome.message);
    return outcome;
  }

  /** Steps 1 to 6, holding the handoff's action lock. */
  private async runLocked(plan: Plan, request: HandoffRequest): Promise<HandoffOutcome> {
    this.enter("manifest", "Recording the handoff");
    const created = await this.createManifest(plan, request);
    if (!created.ok) return refused(created.refusal);
    let manifest = created.manifest;
    checkpoint(this.faults, "manifest");

    let launched: LaunchOutcome;
    // Started with the worktree where it can be (see the invariants); awaited by the fork step.
    const early = this.startEarlyFork(plan, manifest, request);
    try {
      manifest = await this.provision(plan, manifest, request);
      checkpoint(this.faults, "worktree");
      // A pane that runs a shell (not the launcher) starts it up while the worktree is set up and
      // the conversation is copied.
      const shellReady =
        manifest.launch?.windowCommand === true
          ? undefined
          : plan.mux.waitForShell(manifest.mux, { timeoutMs: this.deps.timeouts.shellMs });
      manifest = await this.setUp(plan, manifest);
      manifest = await this.forkSession(plan, manifest, request, early);
      checkpoint(this.faults, "fork");
      launched = await this.launch(plan, manifest, request, shellReady);
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

  /**
   * Step 1: the ownership record, claimed under the store lock so two handoffs cannot take one
   * branch, nor one port: the ports are chosen under that lock and recorded with the variables.
   */
  private async createManifest(
    plan: Plan,
    request: HandoffRequest,
  ): Promise<{ ok: true; manifest: Manifest } | { ok: false; refusal: Refusal }> {
    const task = prepareTask(request.args.task).task;
    const manifest = newManifest({
      id: plan.id,
      now: this.deps.now(),
      branch: plan.branch,
      base: plan.base,
      repo: { root: plan.repo.mainCheckout, commonDir: plan.repo.commonDir },
      parent: {
        sessionFile: plan.parentSessionFile,
        sessionId: request.parent.sessionId,
        leafId: plan.leafId,
        cwd: request.parent.cwd,
      },
      worktree: { path: plan.worktreePath },
      // Where the window will be, and its name, before it exists (see the invariants).
      mux: plan.mux.serverLocation?.() ?? { kind: plan.mux.kind },
      intent: { windowLabel: muxLabel(plan.branch) },
      ...(task !== undefined ? { task } : {}),
      ...(plan.existing ? { setup: { existingBranch: true } } : {}),
      // Recovery waits for an unfinished handoff only while this process lives (owner.ts).
      owner: await ownerOf(),
    });
    // The first entry carries the checks before it (the manifest step goes on into the next one).
    const checked = this.unrecordedSteps.splice(0);
    if (checked.length > 0)
      manifest.history = manifest.history.map((entry, index) => (index === 0 ? { ...entry, steps: checked } : entry));
    const ports = plan.config.ports !== undefined && plan.config.ports.count > 0 ? plan.config.ports : undefined;
    const env = plan.config.env;
    const withEnvironment = (m: Manifest, reserved: readonly number[]): Manifest => ({
      ...m,
      ...(reserved.length > 0 ? { ports: [...reserved] } : {}),
      ...(env !== undefined && Object.keys(env).length > 0
        ? {
            env: Object.fromEntries(
              Object.entries(env).map(([name, value]) => [name, fillPortPlaceholders(value, reserved)]),
            ),
          }
        : {}),
    });
    const created = await this.deps.store.create(ports === undefined ? withEnvironment(manifest, []) : manifest, {
      conflictsWith: (existing) =>
        existing.repo.commonDir === plan.repo.commonDir && existing.branch === plan.branch && holdsBranch(existing),
      ...(ports === undefined
        ? {}
        : {
            reserve: async (others) => {
              const chosen = await choosePorts(ports, portsHeldBy(others), this.deps.portProbe ?? loopbackProbe, {
                recoveryCommand: this.recoveryCli,
              });
              return chosen.ok
                ? { ok: true, manifest: withEnvironment(manifest, chosen.ports) }
                : { ok: false, message: chosen.message };
            },
          }),
    });
    if (!created.ok && created.code === "unavailable") {
      return { ok: false, refusal: { code: "ports_unavailable", detail: created.message } };
    }
    if (!created.ok) {
      return {
        ok: false,
        refusal: {
          code: "branch_claimed",
          branch: plan.branch,
          handoffId: created.conflicting.id,
          state: created.conflicting.state,
        },
      };
    }
    const reserved = environmentNote(created.manifest, this.recoveryCli);
    if (reserved !== undefined) plan.notes.push(reserved);
    return { ok: true, manifest: created.manifest };
  }

  /**
   * Step 2: worktree and pane, unfocused. Where the backend can (tmux), the pane's command is the
   * launcher, written first, which waits for the launch step: nothing is ever typed there.
   */
  private async provision(plan: Plan, manifest: Manifest, request: HandoffRequest): Promise<Manifest> {
    this.enter("worktree", `Creating worktree ${plan.worktreePath}`);
    let window: WindowLauncher;
    try {
      window = await prepareWindowLauncher(
        this.deps.store,
        manifest,
        this.deps.timeouts,
        launchEnvironment(request),
        this.recoveryCli,
      );
    } catch (error) {
      throw new StepFailure("worktree", `Could not write the launcher beside the manifest: ${errorMessage(error)}`);
    }
    const created = await this.whileStep(
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
        await this.deps.store.update(manifest.id, (m) => {
          if (partial.location !== undefined) m.mux = partial.location;
          if (partial.worktreePath !== undefined) m.worktree = { path: partial.worktreePath };
          // A window that runs the launcher, left by a failed checkout: `fail` tells its launcher no launch comes.
          if (partial.commandStarted === true) m.launch = { launcherFile: window.files.script, windowCommand: true };
        });
      }
      throw new StepFailure("worktree", created.message);
    }
    checkpoint(this.faults, "window");
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
    const head = await this.deps.git.resolveCommit(created.worktreePath, "HEAD");
    if (head !== plan.base.sha) {
      await this.deps.store.update(manifest.id, recordWorkspace);
      throw new StepFailure(
        "worktree",
        plan.existing
          ? `The new worktree is at ${head ?? "no commit"}, not at ${plan.branch}'s commit ${plan.base.sha}; the branch must have moved meanwhile.`
          : `The new worktree is at ${head ?? "no commit"}, not at the base ${plan.base.sha}; the branch ${plan.branch} must have been created by something else meanwhile.`,
      );
    }
    if (failsAt(this.faults, "worktree")) {
      await this.deps.store.update(manifest.id, recordWorkspace);
      this.injectFault("worktree");
    }
    return this.deps.store.transition(manifest.id, "provisioned", recordWorkspace, undefined, this.takeSteps);
  }

  /**
   * Step 2b: carried changes, then the settings' copy and symlink entries, all inside the new
   * worktree; skipped (and not recorded) when there is nothing to do.
   */
  private async setUp(plan: Plan, manifest: Manifest): Promise<Manifest> {
    const work = { carry: plan.carry, copy: plan.config.copy, symlink: plan.config.symlink };
    if (!hasSetupWork(work) || this.deps.checkoutGit === undefined) {
      this.injectFault("setup");
      return manifest;
    }
    this.enter(
      "setup",
      plan.carry !== undefined
        ? "Carrying the uncommitted changes into the worktree"
        : "Copying files into the worktree",
    );
    let result: SetupResult;
    try {
      result = await setUpWorktree({
        git: this.deps.checkoutGit,
        mainCheckout: plan.repo.mainCheckout,
        worktreePath: manifest.worktree.path,
        ...work,
      });
    } catch (error) {
      throw new StepFailure("setup", errorMessage(error));
    }
    plan.notes.push(...describeSetup(result));
    const recorded = await this.deps.store.update(manifest.id, (m) => {
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
    this.injectFault("setup");
    return recorded;
  }

  /**
   * The fork, begun beside the worktree step when nothing it writes depends on that step (see the
   * invariants); undefined otherwise, and the fork step forks as it comes.
   */
  private startEarlyFork(plan: Plan, manifest: Manifest, request: HandoffRequest): EarlyFork | undefined {
    if (!this.forksEarly(plan)) return undefined;
    const stagingDir = forkStagingDir(this.deps.store.pathFor(manifest.id));
    const result = this.deps
      .fork({
        parentSessionFile: plan.parentSessionFile,
        leafId: plan.leafId,
        childCwd: manifest.worktree.path,
        childSessionDir: stagingDir,
        message: this.handoffMessage(plan, manifest, request),
      })
      .then(
        (forked) => ({ ok: true as const, forked }),
        (error: unknown) => ({ ok: false as const, message: errorMessage(error) }),
      );
    return { worktreePath: manifest.worktree.path, stagingDir, result };
  }

  /** Whether the fork can begin beside the worktree step (see the invariants). */
  private forksEarly(plan: Plan): boolean {
    const setupWork = { carry: plan.carry, copy: plan.config.copy, symlink: plan.config.symlink };
    return (
      plan.mux.createsAtRequestedPath === true && !(hasSetupWork(setupWork) && this.deps.checkoutGit !== undefined)
    );
  }

  /** Step 3: the child session (active branch plus one handoff message), or the one begun beside step 2. */
  private async forkSession(
    plan: Plan,
    manifest: Manifest,
    request: HandoffRequest,
    early: EarlyFork | undefined,
  ): Promise<Manifest> {
    this.enter("fork", "Copying the conversation into the worktree's session");
    const sessionDir = childSessionDir({
      parentSessionDir: request.parent.sessionDir,
      parentCwd: request.parent.cwd,
      worktreePath: manifest.worktree.path,
      agentDir: request.agentDir,
    });
    // The file name is Pi's choice: the directory is recorded first, so recovery can find the file.
    manifest = await this.deps.store.update(manifest.id, (m) => {
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
        forked = await this.deps.fork({
          parentSessionFile: plan.parentSessionFile,
          leafId: plan.leafId,
          childCwd: manifest.worktree.path,
          childSessionDir: sessionDir.dir,
          message: this.handoffMessage(plan, manifest, request),
        });
      } catch (error) {
        throw new StepFailure("fork", errorMessage(error));
      }
    }
    const child = forked;
    checkpoint(this.faults, "session");
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
    if (failsAt(this.faults, "fork")) {
      await this.deps.store.update(manifest.id, recordChild);
      this.injectFault("fork");
    }
    return this.deps.store.transition(manifest.id, "forked", recordChild, undefined, this.takeSteps);
  }

  /** The one message the child session gets: where it is, what it came from, its task and setup notes. */
  private handoffMessage(plan: Plan, manifest: Manifest, request: HandoffRequest): HandoffMessage {
    return buildHandoffMessage({
      handoffId: manifest.id,
      manifestPath: this.deps.store.pathFor(manifest.id),
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

  /**
   * Steps 4 to 6 through the shared `ChildLauncher`: what to start is derived from the manifest
   * (`launchCommandFor`), the launcher started (by the window itself, or a short typed line once
   * the pane's shell is ready), then the child is confirmed and, if asked, focused.
   */
  private async launch(
    plan: Plan,
    manifest: Manifest,
    request: HandoffRequest,
    shellReady: Promise<MuxResult<object>> | undefined,
  ): Promise<LaunchOutcome> {
    const derived = launchCommandFor(manifest, launchEnvironment(request));
    if (!derived.ok) throw new StepFailure("launch", derived.message);
    const postCreate = await this.preparePostCreate(plan, manifest);
    const outcome = await this.childLauncher().launch({
      mux: plan.mux,
      manifest,
      command: derived.command,
      windowCommand: manifest.launch?.windowCommand === true,
      ...(shellReady !== undefined ? { shellReady } : {}),
      focus: request.args.focus,
      recoveryCommand: this.recoveryCli,
      ...postCreate,
    });
    if (outcome.code === "shell_not_ready" || outcome.code === "launcher_not_written" || outcome.code === "type_failed")
      throw new StepFailure("launch", outcome.message);
    if (outcome.code === "post_create_failed") {
      await this.deps.store.update(outcome.manifest.id, (m) => {
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
  private async preparePostCreate(
    plan: Plan,
    manifest: Manifest,
  ): Promise<Pick<LaunchRequest, "patch" | "postCreate">> {
    const commands = failsAt(this.faults, "confirm") ? undefined : plan.config.postCreate;
    if (commands === undefined) return {};
    const hookFiles = postCreateFiles(this.deps.store.pathFor(manifest.id));
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
  private childLauncher(): ChildLauncher {
    return new ChildLauncher({
      store: this.deps.store,
      now: () => this.deps.now(),
      sleep: (ms) => this.deps.sleep(ms),
      timeouts: this.deps.timeouts,
      progress: (step, text) => {
        if (step === "confirm" || step === "focus") this.lateStep = step;
        this.enter(step, text);
      },
      // The status line shows each wait as it runs.
      tick: (step, text) => this.deps.progress(step, text),
      faults: this.faults,
    });
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

  /** Where tests make a step fail (faults.ts); nothing without a plan. */
  private injectFault(step: HandoffStep): void {
    if (failsAt(this.faults, step)) throw new InjectedFault(step);
  }

  private get faults(): FaultPlan {
    return this.deps.faults ?? NO_FAULTS;
  }

  private isoNow(): string {
    return this.deps.now().toISOString();
  }
}

/** Whether a manifest still claims its branch (a failure before the worktree existed does not). */
function holdsBranch(manifest: Manifest): boolean {
  if (manifest.state === "removed") return false;
  if (manifest.state === "failed" && manifest.error?.step === "worktree") return false;
  return true;
}

/** How the child is started, from what the command was given. */
function launchEnvironment(request: HandoffRequest): LaunchEnvironment {
  return { piCommand: request.piCommand, agentDir: request.agentDir, env: request.env };
}
