/**
 * The handoff transaction: preconditions -> manifest -> worktree -> fork -> launch -> confirm -> focus.
 *
 * Invariants:
 * - Nothing is written before every precondition holds; a refusal leaves no trace.
 * - The manifest exists before any other resource, and records each step before the next begins.
 * - Any failure after the manifest is written keeps every resource, records the step, the error
 *   and the git state, and is reported with what exists and how to go on. Nothing is deleted.
 * - Focus happens only after the child is confirmed; a focus failure is not a launch failure.
 *   Steps 4-6 run through `ChildLauncher` (launch.ts), the same path recovery's relaunch takes.
 * - The launch settings (model, thinking level, mirrored flags, approval) are recorded with the
 *   child session, so recovery can rebuild the launch command instead of guessing them.
 * - The parent session file is only ever read.
 * - Worktree setup (settings, `--carry`, `--existing`, `--fetch`, postCreate): every input it
 *   needs is read and checked before the manifest exists (settings, the changes to carry, a fetch the
 *   user asked for); the setup step runs between the worktree and the fork and writes only inside the
 *   new worktree; postCreate commands run in the pane before Pi, and their failure is a failed launch.
 */
import { existsSync } from "node:fs";
import { branchNameLengthProblem } from "../git/ref-name.ts";
import { applyBranchPrefix, type HandoffConfig } from "../config/schema.ts";
import type { ChangesSnapshot, GitPort, RepositoryInfo, WorktreeSetupGitPort } from "../git/types.ts";
import type { HandoffStep, Manifest, MuxKind, MuxLocation } from "../manifest/schema.ts";
import { newManifest } from "../manifest/factory.ts";
import type { ManifestStore } from "../manifest/store.ts";
import type { Multiplexer, MuxResult } from "../mux/types.ts";
import type { ForkRequest, ForkResult } from "../session/fork.ts";
import { buildHandoffMessage, prepareTask } from "../session/handoff-message.ts";
import { childSessionDir } from "../session/paths.ts";
import type { HandoffArgs } from "./args.ts";
import { crashAt, killPointFromEnv, type KillPoint } from "./fault.ts";
import { ChildLauncher, type LaunchOutcome } from "../launch/launcher.ts";
import { buildLaunchCommand, shellQuote } from "../launch/launch-command.ts";
import { ownerOf } from "../launch/owner.ts";
import { checkBaseFreshness } from "./freshness.ts";
import { postCreateFiles, postCreatePrelude, writeRunner } from "../launch/post-create.ts";
import { describeSetup, hasSetupWork, setUpWorktree, type SetupResult } from "./setup.ts";
import { chooseWorktreePath } from "./worktree-path.ts";

export interface ParentSnapshot {
  /** Undefined with `--no-session`. */
  sessionFile: string | undefined;
  sessionFileExists: boolean;
  sessionId: string;
  leafId: string | null;
  cwd: string;
  sessionDir: string;
}

export interface HandoffRequest {
  args: HandoffArgs;
  parent: ParentSnapshot;
  /** The selected model; `available` is false when this Pi's registry does not know it. */
  model: { provider: string; id: string; available: boolean } | undefined;
  thinkingLevel: string | undefined;
  projectTrusted: boolean;
  agentDir: string;
  piCommand: readonly string[];
  extraPiArgs: readonly string[];
  env: NodeJS.ProcessEnv;
  /** The merged settings (config/load.ts); absent: none. */
  config?: HandoffConfig;
}

export type MuxChoice = { ok: true; mux: Multiplexer } | { ok: false; message: string };

export interface HandoffDeps {
  git: GitPort;
  store: ManifestStore;
  /** May ask the backend whether its server answers (Herdr), so it may be asynchronous. */
  selectMux(explicit: MuxKind | undefined): MuxChoice | Promise<MuxChoice>;
  fork(request: ForkRequest): Promise<ForkResult>;
  now(): Date;
  sleep(ms: number): Promise<void>;
  progress(step: HandoffStep, text: string): void;
  timeouts: { shellMs: number; confirmMs: number; pollMs: number; postCreateMs?: number };
  /** Git for the setup (carry, copy guards, base freshness); a handoff that needs it is refused without it. */
  setupGit?: WorktreeSetupGitPort;
  /** Test hook: make one step fail (`PI_HANDOFF_FAULT=<step>`). */
  faultAt?: HandoffStep | undefined;
}

export type HandoffOutcome =
  | { code: "refused"; message: string }
  | { code: "running"; manifest: Manifest; message: string }
  | { code: "launch_unconfirmed"; manifest: Manifest; message: string }
  | { code: "failed"; step: HandoffStep; manifest: Manifest; message: string };

interface Plan {
  id: string;
  repo: RepositoryInfo;
  branch: string;
  base: { ref: string; sha: string };
  worktreePath: string;
  parentSessionFile: string;
  leafId: string;
  model: { provider: string; id: string };
  mux: Multiplexer;
  config: HandoffConfig;
  /** `--existing`: `branch` exists and `base` is its commit. */
  existing: boolean;
  /** `--carry`: the parent checkout's changes, read before anything was written. */
  carry: ChangesSnapshot | undefined;
  /** Lines for the user and the handoff message (base freshness, setup), in order. */
  notes: string[];
}

class StepFailure extends Error {
  readonly step: HandoffStep;
  constructor(step: HandoffStep, message: string) {
    super(message);
    this.step = step;
  }
}

export const DEFAULT_TIMEOUTS = { shellMs: 15_000, confirmMs: 45_000, pollMs: 50, postCreateMs: 600_000 } as const;

export class HandoffTransaction {
  private readonly deps: HandoffDeps;
  /** Set once the launch reaches confirmation: from then on the child may be running. */
  private lateStep: "confirm" | "focus" | undefined;
  /** The step under way, so an unexpected error is recorded where it happened. */
  private currentStep: HandoffStep = "preconditions";
  /** Test hook: the crash point `PI_HANDOFF_FAULT=kill-after:<point>` names (fault.ts); SIGKILL there. */
  private killAfter: KillPoint | undefined;

  constructor(deps: HandoffDeps) {
    this.deps = deps;
  }

  async run(request: HandoffRequest): Promise<HandoffOutcome> {
    this.lateStep = undefined;
    this.currentStep = "preconditions";
    this.killAfter = killPointFromEnv(request.env);
    this.enter("preconditions", "Checking the session, the repository and the branch");
    const planned = await this.plan(request);
    if (!planned.ok) return { code: "refused", message: planned.message };
    const plan = planned.plan;

    this.enter("manifest", "Recording the handoff");
    const created = await this.createManifest(plan, request);
    if (!created.ok) return { code: "refused", message: created.message };
    let manifest = created.manifest;
    crashAt(this.killAfter, "manifest");

    let launched: LaunchOutcome;
    try {
      manifest = await this.provision(plan, manifest);
      crashAt(this.killAfter, "worktree");
      // The new pane's shell starts up while the worktree is set up and the conversation is copied.
      const shellReady = plan.mux.waitForShell(manifest.mux, { timeoutMs: this.deps.timeouts.shellMs });
      manifest = await this.setUp(plan, manifest);
      manifest = await this.forkSession(plan, manifest, request);
      crashAt(this.killAfter, "fork");
      launched = await this.launch(plan, manifest, request, shellReady);
    } catch (error) {
      if (!(error instanceof StepFailure) && this.lateStep !== undefined) {
        // The child may already be running: an unexpected error while confirming or focusing is
        // not a launch failure, so it is not recorded as one.
        throw error;
      }
      const step = error instanceof StepFailure ? error.step : this.currentStep;
      const message = error instanceof Error ? error.message : String(error);
      const failed = await this.fail(plan, manifest.id, step, message);
      return { ...failed, message: withNotes(failed.message, plan.notes) };
    }

    if (launched.code === "launch_unconfirmed") {
      return {
        code: "launch_unconfirmed",
        manifest: launched.manifest,
        message: withNotes(`${launched.message} ${describeRetained(launched.manifest)}`, plan.notes),
      };
    }
    if (launched.code !== "running") throw new Error(`Unexpected launch outcome ${launched.code}.`);
    return { code: "running", manifest: launched.manifest, message: withNotes(describeSuccess(launched.manifest), plan.notes) };
  }

  /** Step 0: every check, nothing written. */
  private async plan(request: HandoffRequest): Promise<{ ok: true; plan: Plan } | { ok: false; message: string }> {
    const { args, parent } = request;
    if (parent.sessionFile === undefined) {
      return { ok: false, message: "This session is not saved (--no-session), so there is nothing to hand off; start Pi with a saved session." };
    }
    if (!parent.sessionFileExists || parent.leafId === null) {
      return { ok: false, message: "This session has no messages on disk yet; send a message first, then hand off." };
    }
    if (request.model === undefined) {
      return { ok: false, message: "No model is selected; choose one with /model, then hand off." };
    }
    if (!request.model.available) {
      return {
        ok: false,
        message: `No usable model is selected (${request.model.provider}/${request.model.id} is not available in this Pi); choose one with /model, then hand off.`,
      };
    }
    const config = request.config ?? {};
    const mux = await this.deps.selectMux(args.mux ?? config.mux);
    if (!mux.ok) return { ok: false, message: mux.message };

    const repo = await this.deps.git.findRepository(parent.cwd);
    if (repo === undefined) {
      return { ok: false, message: `${parent.cwd} is not inside a git repository; start Pi in a repository to hand off into a worktree.` };
    }
    const existing = args.existing === true;
    const setupGit = this.deps.setupGit;
    const needsSetupGit = args.carry !== undefined || args.fetch === true || (config.copy?.length ?? 0) > 0 || (config.symlink?.length ?? 0) > 0;
    if (needsSetupGit && setupGit === undefined) {
      return { ok: false, message: "This Pi cannot carry changes, copy files or fetch for a handoff (no setup git); hand off without --carry, --fetch and copy/symlink settings." };
    }
    // The prefix goes in front of a new branch's name. An existing branch is found with the prefix
    // first (as a new one would have been named), else as typed.
    let branch = applyBranchPrefix(args.branch, config.branchPrefix);
    if (existing && branch !== args.branch && !(await this.deps.git.branchExists(repo.mainCheckout, branch))) branch = args.branch;
    // The git checks only read and do not depend on each other: ask them all at once, then
    // report the first that fails in this order. With --fetch the base is resolved after the fetch.
    const baseLooksLikeOption = !existing && args.base.startsWith("-");
    const resolveBase = (): Promise<string | undefined> =>
      existing
        ? this.deps.git.resolveCommit(repo.mainCheckout, `refs/heads/${branch}`)
        : this.deps.git.resolveCommit(repo.currentCheckout, args.base);
    // Base freshness (and the fetch the user asked for) runs before the base is resolved; without a
    // fetch it only reads, so it runs alongside the checks.
    const freshnessInput = { ref: existing ? `refs/heads/${branch}` : args.base, label: existing ? branch : args.base, fetch: args.fetch === true };
    const early = setupGit !== undefined && args.fetch !== true && !baseLooksLikeOption ? checkBaseFreshness(setupGit, repo.currentCheckout, freshnessInput) : undefined;
    const [validName, worktrees, exists, resolved] = await Promise.all([
      this.deps.git.isValidBranchName(branch),
      this.deps.git.listWorktrees(repo.mainCheckout),
      this.deps.git.branchExists(repo.mainCheckout, branch),
      baseLooksLikeOption || (args.fetch === true && !existing) ? Promise.resolve(undefined) : resolveBase(),
    ]);
    if (!validName) {
      return { ok: false, message: `${JSON.stringify(branch)} is not a valid branch name; pick a name git accepts (see git check-ref-format).` };
    }
    // check-ref-format accepts names the file system cannot store; refuse them here, not at the worktree step.
    const tooLong = branchNameLengthProblem(branch, repo.commonDir);
    if (tooLong !== undefined) return { ok: false, message: tooLong };
    const checkedOut = worktrees.find((worktree) => worktree.branch === branch);
    if (checkedOut !== undefined) {
      return {
        ok: false,
        message: existing
          ? `Branch ${branch} is already checked out at ${checkedOut.path}; work on it there, or hand off to another branch.`
          : `Branch ${branch} is already checked out at ${checkedOut.path}; pick a new branch name.`,
      };
    }
    if (!existing && exists) {
      return { ok: false, message: `Branch ${branch} already exists; pick a new branch name (or add --existing to hand off into it).` };
    }
    if (existing && !exists) {
      return { ok: false, message: `Branch ${branch} does not exist; leave out --existing to create it.` };
    }
    if (baseLooksLikeOption) {
      return { ok: false, message: `Base ${JSON.stringify(args.base)} does not name a commit; give a branch, tag or commit.` };
    }
    const notes: string[] = [];
    if (setupGit !== undefined) {
      const freshness = await (early ?? checkBaseFreshness(setupGit, repo.currentCheckout, freshnessInput));
      if (!freshness.ok) return { ok: false, message: freshness.message };
      notes.push(...freshness.notes);
    }
    const sha = args.fetch === true && !existing ? await resolveBase() : resolved;
    if (sha === undefined) {
      if (existing) return { ok: false, message: `Branch ${branch} does not point at a commit; check it with git log ${branch}.` };
      return { ok: false, message: `Base ${JSON.stringify(args.base)} does not resolve to a commit; give a branch, tag or commit.` };
    }
    if (existing && args.baseGiven) {
      notes.unshift(`Base ${args.base} was ignored: --existing checks out ${branch} as it is (at ${sha.slice(0, 12)}).`);
    }
    let worktreePath: string;
    try {
      worktreePath = chooseWorktreePath({ mainCheckout: repo.mainCheckout, branch, env: request.env, template: config.worktreeDir });
    } catch (error) {
      return { ok: false, message: error instanceof Error ? error.message : String(error) };
    }
    // The launch types this path into a terminal, where a control character (a tab, a newline in a
    // directory name) would be a keystroke: refuse now rather than fail at the launch step.
    if (/[\u0000-\u001f\u007f]/.test(worktreePath)) {
      return { ok: false, message: `The worktree path ${JSON.stringify(worktreePath)} would contain a control character, which cannot be typed into a terminal; rename the repository's directory first.` };
    }
    // The changes to carry are read now, so a checkout that cannot be carried is refused before
    // anything exists; they are applied in the setup step.
    let carry: ChangesSnapshot | undefined;
    if (args.carry !== undefined && setupGit !== undefined) {
      try {
        carry = await setupGit.snapshotChanges(repo.currentCheckout, args.carry);
      } catch (error) {
        return { ok: false, message: `Cannot carry the changes: ${error instanceof Error ? error.message : String(error)}` };
      }
    }
    return {
      ok: true,
      plan: {
        id: this.deps.store.newId(branch),
        repo,
        branch,
        base: { ref: existing ? branch : args.base, sha },
        worktreePath,
        parentSessionFile: parent.sessionFile,
        leafId: parent.leafId,
        model: { provider: request.model.provider, id: request.model.id },
        mux: mux.mux,
        config,
        existing,
        carry,
        notes,
      },
    };
  }

  /** Step 1: the ownership record, claimed under the store lock so two handoffs cannot take one branch. */
  private async createManifest(
    plan: Plan,
    request: HandoffRequest,
  ): Promise<{ ok: true; manifest: Manifest } | { ok: false; message: string }> {
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
      mux: { kind: plan.mux.kind },
      ...(task !== undefined ? { task } : {}),
      ...(plan.existing ? { setup: { existingBranch: true } } : {}),
      // Recovery waits for an unfinished handoff only while this process lives (owner.ts).
      owner: await ownerOf(),
    });
    const created = await this.deps.store.create(manifest, {
      conflictsWith: (existing) => existing.repo.commonDir === plan.repo.commonDir && existing.branch === plan.branch && holdsBranch(existing),
    });
    if (!created.ok) {
      return {
        ok: false,
        message: `Branch ${plan.branch} is already claimed by handoff ${created.conflicting.id} (${created.conflicting.state}); pick a new branch name.`,
      };
    }
    return { ok: true, manifest };
  }

  /** Step 2: worktree and pane, unfocused. */
  private async provision(plan: Plan, manifest: Manifest): Promise<Manifest> {
    this.enter("worktree", `Creating worktree ${plan.worktreePath}`);
    const created = await plan.mux.createWorkspace({
      mainCheckout: plan.repo.mainCheckout,
      branch: plan.branch,
      baseSha: plan.base.sha,
      worktreePath: plan.worktreePath,
      label: plan.branch,
      ...(plan.existing ? { existingBranch: true } : {}),
    });
    if (!created.ok) {
      if (created.partial !== undefined) {
        const partial = created.partial;
        await this.deps.store.update(manifest.id, (m) => {
          if (partial.location !== undefined) m.mux = partial.location;
          if (partial.worktreePath !== undefined) m.worktree = { path: partial.worktreePath };
        });
      }
      throw new StepFailure("worktree", created.message);
    }
    const recordWorkspace = (m: Manifest): void => {
      m.mux = created.location;
      m.worktree = { path: created.worktreePath };
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
    if (this.deps.faultAt === "worktree") {
      await this.deps.store.update(manifest.id, recordWorkspace);
      this.injectFault("worktree");
    }
    return this.deps.store.transition(manifest.id, "provisioned", recordWorkspace);
  }

  /**
   * Step 2b: carried changes, then the settings' copy and symlink entries, all inside the new
   * worktree; skipped (and not recorded) when there is nothing to do.
   */
  private async setUp(plan: Plan, manifest: Manifest): Promise<Manifest> {
    const work = { carry: plan.carry, copy: plan.config.copy, symlink: plan.config.symlink };
    if (!hasSetupWork(work) || this.deps.setupGit === undefined) {
      this.injectFault("setup");
      return manifest;
    }
    this.enter("setup", plan.carry !== undefined ? "Carrying the uncommitted changes into the worktree" : "Copying files into the worktree");
    let result: SetupResult;
    try {
      result = await setUpWorktree({ git: this.deps.setupGit, mainCheckout: plan.repo.mainCheckout, worktreePath: manifest.worktree.path, ...work });
    } catch (error) {
      throw new StepFailure("setup", error instanceof Error ? error.message : String(error));
    }
    plan.notes.push(...describeSetup(result));
    const recorded = await this.deps.store.update(manifest.id, (m) => {
      m.setup = {
        ...m.setup,
        ...(result.carried !== undefined
          ? { carried: { mode: result.carried.mode, from: result.carried.from, changes: result.carried.changes.length, untracked: result.carried.untracked.length } }
          : {}),
        ...(result.copied.length > 0 ? { copied: result.copied.slice(0, 100) } : {}),
        ...(result.symlinked.length > 0 ? { symlinked: result.symlinked.slice(0, 100) } : {}),
      };
    });
    this.injectFault("setup");
    return recorded;
  }

  /** Step 3: the child session (active branch plus one handoff message). */
  private async forkSession(plan: Plan, manifest: Manifest, request: HandoffRequest): Promise<Manifest> {
    this.enter("fork", "Copying the conversation into the worktree's session");
    const sessionDir = childSessionDir({
      parentSessionDir: request.parent.sessionDir,
      parentCwd: request.parent.cwd,
      worktreePath: manifest.worktree.path,
      agentDir: request.agentDir,
    });
    const message = buildHandoffMessage({
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
          ? [`Before this Pi started, these postCreate commands ran in this worktree and succeeded: ${plan.config.postCreate.join("; ")}`]
          : []),
      ],
    });
    let forked: ForkResult;
    try {
      forked = await this.deps.fork({
        parentSessionFile: plan.parentSessionFile,
        leafId: plan.leafId,
        childCwd: manifest.worktree.path,
        childSessionDir: sessionDir.dir,
        message,
      });
    } catch (error) {
      throw new StepFailure("fork", error instanceof Error ? error.message : String(error));
    }
    // With the session, how its Pi is to be started: recovery rebuilds the launch command from
    // these if this launch never completes.
    const recordChild = (m: Manifest): void => {
      m.child = {
        ...m.child,
        sessionFile: forked.childSessionFile,
        sessionId: forked.childSessionId,
        model: plan.model,
        ...(request.thinkingLevel !== undefined ? { thinkingLevel: request.thinkingLevel } : {}),
        extraArgs: [...request.extraPiArgs],
        approve: request.projectTrusted,
      };
    };
    if (this.deps.faultAt === "fork") {
      await this.deps.store.update(manifest.id, recordChild);
      this.injectFault("fork");
    }
    return this.deps.store.transition(manifest.id, "forked", recordChild);
  }

  /**
   * Steps 4 to 6 through the shared `ChildLauncher`: the command is built, recorded and typed
   * once the pane's shell is ready, then the child is confirmed and, if asked, focused.
   */
  private async launch(
    plan: Plan,
    manifest: Manifest,
    request: HandoffRequest,
    shellReady: Promise<MuxResult<object>>,
  ): Promise<LaunchOutcome> {
    const childSessionFile = manifest.child.sessionFile;
    if (childSessionFile === undefined) throw new StepFailure("launch", "The child session file was not recorded.");
    const sessionDir = childSessionDir({
      parentSessionDir: request.parent.sessionDir,
      parentCwd: request.parent.cwd,
      worktreePath: manifest.worktree.path,
      agentDir: request.agentDir,
    });
    // postCreate commands go on the typed line before Pi, through a runner that records how they
    // ended (post-create.ts). Not with the confirm fault, whose line starts nothing at all.
    const commands = this.deps.faultAt === "confirm" ? undefined : plan.config.postCreate;
    const hookFiles = postCreateFiles(this.deps.store.pathFor(manifest.id));
    if (commands !== undefined) {
      try {
        await writeRunner(hookFiles, { handoffId: manifest.id, mainCheckout: plan.repo.mainCheckout, worktreePath: manifest.worktree.path, branch: plan.branch });
      } catch (error) {
        throw new StepFailure("launch", `Could not write the postCreate runner ${hookFiles.runnerFile}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    let command: string;
    try {
      command = buildLaunchCommand({
        piCommand: request.piCommand,
        worktreePath: manifest.worktree.path,
        childSessionFile,
        ...(sessionDir.custom ? { sessionDir: sessionDir.dir } : {}),
        agentDir: request.agentDir,
        handoffId: manifest.id,
        model: plan.model,
        ...(request.thinkingLevel !== undefined ? { thinkingLevel: request.thinkingLevel } : {}),
        approve: request.projectTrusted,
        extraArgs: request.extraPiArgs,
        parentEnv: request.env,
        ...(commands !== undefined ? { prelude: postCreatePrelude(hookFiles, commands) } : {}),
      });
    } catch (error) {
      throw new StepFailure("launch", error instanceof Error ? error.message : String(error));
    }
    const launcher = new ChildLauncher({
      store: this.deps.store,
      now: () => this.deps.now(),
      sleep: (ms) => this.deps.sleep(ms),
      timeouts: this.deps.timeouts,
      progress: (step, text) => {
        if (step === "confirm" || step === "focus") this.lateStep = step;
        this.enter(step, text);
      },
    });
    const outcome = await launcher.launch({
      mux: plan.mux,
      manifest,
      command,
      shellReady,
      focus: request.args.focus,
      beforeType: () => {
        this.injectFault("launch");
        crashAt(this.killAfter, "launching");
      },
      afterStep: (step) => crashAt(this.killAfter, step),
      // The confirm fault types a harmless line instead of Pi, so no child ever acknowledges.
      ...(this.deps.faultAt === "confirm" ? { typedLine: ": pi-handoff-worktree fault: no child" } : {}),
      ...(commands !== undefined
        ? {
            patch: (m: Manifest) => {
              m.setup = { ...m.setup, postCreate: { commands: [...commands], statusFile: hookFiles.statusFile } };
            },
            postCreate: { statusFile: hookFiles.statusFile, commands, timeoutMs: this.deps.timeouts.postCreateMs ?? DEFAULT_TIMEOUTS.postCreateMs },
          }
        : {}),
    });
    if (outcome.code === "shell_not_ready" || outcome.code === "type_failed") throw new StepFailure("launch", outcome.message);
    if (outcome.code === "post_create_failed") {
      await this.deps.store.update(outcome.manifest.id, (m) => {
        if (m.setup?.postCreate !== undefined) {
          m.setup.postCreate = { ...m.setup.postCreate, exitStatus: outcome.exitStatus, failedCommand: outcome.command };
        }
      });
      throw new StepFailure("launch", outcome.message);
    }
    return outcome;
  }

  private enter(step: HandoffStep, text: string): void {
    this.currentStep = step;
    this.deps.progress(step, text);
  }

  private async fail(plan: Plan, id: string, step: HandoffStep, message: string): Promise<HandoffOutcome> {
    // The backend may have put the worktree somewhere other than planned (Herdr reports its
    // realpath, a reconciled create its own path): the recorded path is the one that exists.
    const recorded = await this.deps.store.read(id);
    const worktreePath = recorded.ok ? recorded.manifest.worktree.path : plan.worktreePath;
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
    );
    return { code: "failed", step, manifest: failed, message: `The handoff failed at the ${step} step: ${message} ${describeRetained(failed)}` };
  }

  /**
   * Fault points for tests (`PI_HANDOFF_FAULT=<step>`), each where a real failure hurts most:
   * worktree and fork fail after their resource exists; launch fails with the shell ready and
   * nothing typed; confirm types a harmless line instead of Pi, so no child ever acknowledges.
   */
  private injectFault(step: HandoffStep): void {
    if (this.deps.faultAt === step) throw new StepFailure(step, `Injected fault at the ${step} step (PI_HANDOFF_FAULT).`);
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

export function describeLocation(location: MuxLocation): string {
  if (location.kind === "tmux") {
    return location.windowId !== undefined ? `tmux window ${location.windowId} (pane ${location.paneId ?? "?"})` : "no tmux window";
  }
  return location.workspaceId !== undefined ? `Herdr workspace ${location.workspaceId} (pane ${location.paneId ?? "?"})` : "no Herdr workspace";
}

/** A message followed by the plan's notes (base freshness, what the setup did), one per line. */
function withNotes(message: string, notes: readonly string[]): string {
  return notes.length > 0 ? `${message}\n${notes.join("\n")}` : message;
}

function describeSuccess(manifest: Manifest): string {
  const lines = [
    manifest.setup?.existingBranch === true
      ? `Handed off to the existing branch ${manifest.branch} (at ${manifest.base.sha.slice(0, 12)}).`
      : `Handed off to branch ${manifest.branch} (from ${manifest.base.ref} at ${manifest.base.sha.slice(0, 12)}).`,
    `Worktree: ${manifest.worktree.path}`,
    `Child session: ${manifest.child.sessionFile ?? "?"}`,
    `Window: ${describeLocation(manifest.mux)}${manifest.child.pid !== undefined ? `, Pi pid ${manifest.child.pid}` : ""}`,
  ];
  if (manifest.focus !== undefined && "error" in manifest.focus) lines.push(`Could not switch to it: ${manifest.focus.error}`);
  lines.push(`Handoff id: ${manifest.id}`);
  return lines.join("\n");
}

/** A path or name as a user would type it in a shell; one with control characters is shown JSON-escaped. */
function quoteForDisplay(word: string): string {
  try {
    return shellQuote(word);
  } catch {
    return JSON.stringify(word);
  }
}

/** What exists after a failure, and what the user can do about it. */
export function describeRetained(manifest: Manifest): string {
  const kept: string[] = [];
  const worktreeExists = existsSync(manifest.worktree.path);
  if (worktreeExists) kept.push(`worktree ${manifest.worktree.path} on branch ${manifest.branch}`);
  const location = describeLocation(manifest.mux);
  if (!location.startsWith("no ")) kept.push(location);
  if (manifest.child.sessionFile !== undefined && existsSync(manifest.child.sessionFile)) {
    kept.push(`child session ${manifest.child.sessionFile}`);
  }
  const lines = [
    kept.length > 0 ? `Kept (nothing was deleted): ${kept.join("; ")}.` : "No worktree or session was created.",
    `Manifest: handoff ${manifest.id}.`,
  ];
  if (manifest.child.command !== undefined) lines.push(`To start the child by hand, run in its pane: ${manifest.child.command}`);
  if (worktreeExists) {
    const root = quoteForDisplay(manifest.repo.root);
    lines.push(
      `To clean up by hand: git -C ${root} worktree remove ${quoteForDisplay(manifest.worktree.path)} (add --force to drop its changes), then git -C ${root} branch -d ${quoteForDisplay(manifest.branch)}.`,
    );
  }
  return lines.join("\n");
}
