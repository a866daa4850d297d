/**
 * The plan of a landing (`pi-handoff land`, and each member of the queue, queue/queue.ts): what
 * it would do, or why it may not. The dry run and the real run (land.ts) share this plan and its
 * checks by construction: the real run plans, re-plans right before acting, and acts on that plan.
 *
 * Invariants:
 * - Planning changes nothing a person can see: every check reads, and the new commits a rebase,
 *   merge or squash needs are made in the object store only (git/land.ts), so every refusal and
 *   every `--dry-run` leaves refs, index and files byte-identical.
 * - Refused, before anything changes: while the child Pi is in a turn (or asking for input); when
 *   the worktree has uncommitted or untracked files; when the target's checkout has uncommitted
 *   changes, or files git ignores, at the paths the landing touches; while the target is being
 *   rebased or bisected; on conflicts (found with `git merge-tree`, paths listed); when a merge,
 *   squash or rebase would bypass hooks git runs for it (unless `noVerify`); with `--remove` while
 *   the child Pi still runs. Each refusal names the reason and the way on.
 * - Commits are made as the person's git would (their identity, `commit.gpgSign`).
 */
import type { CommitDetail, LandGit } from "../git/land.ts";
import type { GitCli } from "../git/git.ts";
import type { RecoveryGitPort } from "../git/types.ts";
import type { ChildReportStore } from "../manifest/child-reports.ts";
import type { LandStrategy, Manifest } from "../manifest/schema.ts";
import type { ManifestStore } from "../manifest/store.ts";
import { errorClause } from "../errors.ts";
import type { FaultPlan } from "../faults.ts";
import { counted } from "../text.ts";
import { isInProgress } from "../inventory/classify.ts";
import type { GatherDeps } from "../inventory/gather.ts";
import { inspectHandoff } from "../inventory/inventory.ts";
import { mergedOf } from "../inventory/merged.ts";
import { listed } from "./land-words.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";
import { BUSY_CHILD_STATES, CHILD_STATE_LABELS } from "../inventory/status.ts";

export interface LandDeps extends GatherDeps {
  git: GitCli;
  landGit: LandGit;
  store: ManifestStore;
  reports: ChildReportStore;
  /** Where tests make the process die (`PI_HANDOFF_FAULT=kill-after:land-...`, faults.ts); none by default. */
  faults?: FaultPlan;
}

export interface LandRequest {
  into?: string;
  strategy?: LandStrategy;
  dryRun: boolean;
  remove: boolean;
  deleteBranch: boolean;
  /** Make a merge, squash or rebase landing even though the repository has hooks it does not run (`--no-verify`). */
  noVerify?: boolean;
  /** The subject of the commit a merge or squash makes (`--message`/`-m`). */
  message?: string;
  /** The plan the user was shown and confirmed (a dry run's): nothing lands unless the plan made now is the same. */
  confirmed?: LandPlan;
  /** The branch tip that must land (the merge queue's checked tip): any other refuses as `moved`. */
  branchTip?: string;
}

export interface LandPlan {
  handoffId: string;
  branch: string;
  repo: string;
  into: string;
  /** Where `into` is checked out (its files move with it), if anywhere. */
  checkout?: string;
  strategy: LandStrategy;
  from: string;
  to: string;
  branchTip: string;
  /** The branch's commits that `into` lacks, oldest first. */
  commits: { sha: string; subject: string }[];
  /** How many commits the landing creates (0 for a fast-forward). */
  created: number;
  /** Files whose content changes in `into`. */
  touched: string[];
  /** Whether a fast-forward was possible (for the message). */
  fastForward: boolean;
  /** The subject asked for (`--message`), part of what was planned. */
  message?: string;
}

export type LandRefusal =
  /** Another command acts on the handoff right now (its action lock). */
  | "busy"
  | "not_found"
  | "invalid"
  | "removed"
  | "in_progress"
  | "child_working"
  | "child_running"
  | "worktree_dirty"
  | "target_dirty"
  /** The target branch is being rebased or bisected in a checkout (git itself would not move it). */
  | "target_busy"
  /** A merge, squash or rebase would bypass hooks git runs for it (without `--no-verify`). */
  | "hooks"
  | "conflict"
  | "nothing_to_land"
  /** `--message` with a landing that makes no commit of its own (a fast-forward, a rebase). */
  | "message_unused"
  | "needs_strategy"
  | "not_fast_forward"
  | "not_linear"
  | "no_target"
  | "branch_gone"
  | "moved";

export type LandPlanOutcome =
  | { ok: true; plan: LandPlan; manifest: Manifest; report: HandoffReport }
  /** `failed`: git could not compute the plan (it wrote no ref, index or file). */
  | { ok: false; code: LandRefusal | "failed"; message: string; choices?: LandStrategy[]; conflicts?: string[] };

const OTHER_STRATEGIES: readonly LandStrategy[] = ["rebase", "merge", "squash"];

type LandPlanRefusal = Extract<LandPlanOutcome, { ok: false }>;

/**
 * What landing handoff `id` would do, or why it may not. Writes only unreferenced objects; a git
 * failure while planning (no identity to commit with, a signing program that fails) is `failed`.
 */
export async function planLanding(
  deps: LandDeps,
  id: string,
  request: Pick<LandRequest, "into" | "strategy" | "remove" | "noVerify" | "message">,
): Promise<LandPlanOutcome> {
  try {
    return await planLandingOf(deps, id, request);
  } catch (error) {
    return {
      ok: false,
      code: "failed",
      message: `Could not plan the landing: ${errorClause(error)}; nothing was landed.`,
    };
  }
}

async function planLandingOf(
  deps: LandDeps,
  id: string,
  request: Pick<LandRequest, "into" | "strategy" | "remove" | "noVerify" | "message">,
): Promise<LandPlanOutcome> {
  const inspected = await inspectHandoff(deps, id);
  if (inspected.code !== "found") return { ok: false, code: inspected.code, message: inspected.message };
  const { report, manifest } = inspected;
  // The order of the checks is behaviour: when several refusals apply, the first is the one told.
  const refusal = handoffRefusal(report, manifest, id, request.remove);
  if (refusal !== undefined) return refusal;
  const branchState = report.branchState;
  if (branchState.code !== "present") {
    return {
      ok: false,
      code: "branch_gone",
      message: `Branch ${manifest.branch} of handoff ${id} ${branchState.code === "gone" ? "no longer exists" : `could not be read (${branchState.message})`}; nothing to land.`,
    };
  }
  const dirty = worktreeRefusal(report, manifest);
  if (dirty !== undefined) return dirty;
  const repo = manifest.repo.root;
  const target = await landingTarget(deps, manifest, id, request.into);
  if (!target.ok) return target;
  const { into, from } = target;
  const branchTip = branchState.tip;
  const details = await deps.landGit.commitsBetween(repo, from, branchTip);
  const fastForward = details.length === 0 || (await deps.git.isAncestor(repo, from, branchTip));
  // The one merged rule (inventory/merged.ts): a branch landed by rebase or squash, here or by hand, is in `into` too.
  const question = {
    tip: branchTip,
    target: from,
    unmerged: details.length,
    targetMoved: !fastForward,
    landedInto: into,
  };
  if ((await mergedOf(deps.git, manifest, question)) !== undefined)
    return {
      ok: false,
      code: "nothing_to_land",
      message: `Everything on ${manifest.branch} is already in ${into}; nothing to land.`,
    };
  const strategy = strategyFor(request.strategy, fastForward, into, manifest.branch);
  if (!strategy.ok) return strategy;
  const busy = await deps.landGit.branchInUse(repo, into);
  if (busy !== undefined) return busyRefusal(into, busy);
  const makesCommits = strategy.strategy !== "ff" && !(strategy.strategy === "rebase" && fastForward);
  if (request.message !== undefined && strategy.strategy !== "merge" && strategy.strategy !== "squash")
    return {
      ok: false,
      code: "message_unused",
      message: `--message names the commit a merge or a squash makes; landing ${manifest.branch} by ${strategy.strategy === "ff" ? "fast-forward" : "rebase"} makes none of its own. Add --strategy merge or squash, or leave --message out.`,
    };
  if (makesCommits && request.noVerify !== true) {
    const hooks = await deps.landGit.hooksFor(repo, HOOKS_RUN_BY[strategy.strategy]);
    if (hooks.names.length > 0) return hooksRefusal(strategy.strategy, into, hooks);
  }
  const built = await buildResult(deps.landGit, repo, {
    sign: makesCommits && (await deps.landGit.signsCommits(repo)),
    strategy: strategy.strategy,
    from,
    branchTip,
    details,
    fastForward,
    branch: manifest.branch,
    into,
    id,
    ...(request.message === undefined ? {} : { message: request.message }),
  });
  if (!built.ok) return built;
  const touched = await deps.landGit.changedPaths(repo, from, built.to);
  const checkout = await targetCheckout(deps, repo, into, touched);
  if (!checkout.ok) return checkout;
  const plan: LandPlan = {
    handoffId: id,
    branch: manifest.branch,
    repo,
    into,
    ...(checkout.path === undefined ? {} : { checkout: checkout.path }),
    strategy: strategy.strategy,
    from,
    to: built.to,
    branchTip,
    commits: details.map((commit) => ({ sha: commit.sha, subject: commit.subject })),
    created: built.created,
    touched,
    fastForward,
    ...(request.message === undefined ? {} : { message: request.message }),
  };
  return { ok: true, plan, manifest, report };
}

/** Why the handoff as the inventory sees it may not land now (its record, its setup, its Pi); undefined: it may. */
function handoffRefusal(
  report: HandoffReport,
  manifest: Manifest,
  id: string,
  remove: boolean,
): LandPlanRefusal | undefined {
  if (manifest.state === "removed")
    return {
      ok: false,
      code: "removed",
      message: `Handoff ${id} was removed; its branch ${manifest.branch} can be merged with git directly.`,
    };
  if (isInProgress(report))
    return {
      ok: false,
      code: "in_progress",
      message: `Handoff ${id} is still being set up (${report.state}); land it once it has started.`,
    };
  const child = report.child;
  if (child !== undefined && BUSY_CHILD_STATES.has(child.state)) {
    return {
      ok: false,
      code: "child_working",
      message: `Handoff ${id}'s Pi is in a turn (${CHILD_STATE_LABELS[child.state]}: ${child.basis}); nothing was landed. Let it finish (or stop its turn), then land again.`,
    };
  }
  if (remove && report.status.code === "child_running") {
    const pids = report.status.writers.map((writer) => writer.pid).join(", ");
    return {
      ok: false,
      code: "child_running",
      message: `Handoff ${id}'s Pi still runs (pid ${pids}), so its worktree cannot be removed; nothing was landed. Quit that Pi first, or land without --remove.`,
    };
  }
  return undefined;
}

/** Uncommitted work in the handoff's worktree (or work that could not be read) refuses the landing. */
export function worktreeRefusal(report: HandoffReport, manifest: Manifest): LandPlanRefusal | undefined {
  if (report.worktree.code !== "present") return undefined;
  const changes = report.changes;
  if (changes === undefined)
    return {
      ok: false,
      code: "worktree_dirty",
      message: `Could not read the uncommitted changes in ${manifest.worktree.path}; nothing was landed.`,
    };
  const uncommitted = [...changes.dirtyFiles, ...changes.untrackedFiles];
  if (uncommitted.length === 0) return undefined;
  return {
    ok: false,
    code: "worktree_dirty",
    message: `The worktree ${manifest.worktree.path} has uncommitted changes (${listed(uncommitted)}); nothing was landed. Commit or stash them there, then land again.`,
  };
}

/** The branch to land into (`--into`, else the default) and its commit now. */
async function landingTarget(
  deps: LandDeps,
  manifest: Manifest,
  id: string,
  requested: string | undefined,
): Promise<{ ok: true; into: string; from: string } | LandPlanRefusal> {
  const repo = manifest.repo.root;
  const into = requested ?? (await defaultTarget(deps, manifest));
  if (into === undefined) {
    return {
      ok: false,
      code: "no_target",
      message: `Handoff ${id} started from ${manifest.base.ref}, which is not a branch; say which branch to land into with --into <branch>.`,
    };
  }
  if (into === manifest.branch)
    return {
      ok: false,
      code: "no_target",
      message: `Cannot land ${manifest.branch} into itself; give another branch with --into.`,
    };
  const from = (await deps.git.branchExists(repo, into))
    ? await deps.git.resolveCommit(repo, `refs/heads/${into}`)
    : undefined;
  if (from === undefined)
    return {
      ok: false,
      code: "no_target",
      message: `There is no local branch ${JSON.stringify(into)} in ${repo}; give an existing one with --into.`,
    };
  return { ok: true, into, from };
}

/** The strategy asked for, else a fast-forward where one is possible; a target that moved on needs a choice. */
function strategyFor(
  requested: LandStrategy | undefined,
  fastForward: boolean,
  into: string,
  branch: string,
): { ok: true; strategy: LandStrategy } | LandPlanRefusal {
  const strategy = requested ?? (fastForward ? "ff" : undefined);
  if (strategy === undefined) {
    return {
      ok: false,
      code: "needs_strategy",
      choices: [...OTHER_STRATEGIES],
      message: `${into} has moved on since ${branch} left it, so it cannot be fast-forwarded; nothing was landed. Choose how: --strategy rebase, merge or squash.`,
    };
  }
  if (strategy === "ff" && !fastForward) {
    return {
      ok: false,
      code: "not_fast_forward",
      choices: [...OTHER_STRATEGIES],
      message: `${into} cannot be fast-forwarded to ${branch} (it has commits ${branch} lacks); nothing was landed. Use --strategy rebase, merge or squash.`,
    };
  }
  return { ok: true, strategy };
}

/** The hooks git runs for the command each strategy stands for (`git merge`, `git merge --squash` + `git commit`, `git rebase`). */
export const HOOKS_RUN_BY: Record<LandStrategy, readonly string[]> = {
  ff: [],
  merge: ["pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-merge"],
  squash: ["pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-merge"],
  rebase: ["pre-rebase", "prepare-commit-msg", "post-commit", "post-rewrite"],
};
const GIT_COMMAND_OF: Record<LandStrategy, string> = {
  ff: "git merge --ff-only",
  merge: "git merge",
  squash: "git merge --squash and git commit",
  rebase: "git rebase",
};

function hooksRefusal(strategy: LandStrategy, into: string, hooks: { dir: string; names: string[] }): LandPlanRefusal {
  return {
    ok: false,
    code: "hooks",
    message: `Landing by ${strategy} makes ${strategy === "rebase" ? "commits" : "a commit"} without running the repository's hooks that ${GIT_COMMAND_OF[strategy]} ${strategy === "squash" ? "run" : "runs"} (${hooks.names.join(", ")} in ${hooks.dir}); nothing was landed. Land by fast-forward (rebase the branch onto ${into} in its worktree, where the hooks run), or pass --no-verify to land without them.`,
  };
}

function busyRefusal(into: string, busy: { operation: "rebase" | "bisect"; checkout: string }): LandPlanRefusal {
  return {
    ok: false,
    code: "target_busy",
    message:
      busy.operation === "rebase"
        ? `${into} is being rebased in ${busy.checkout}; nothing was landed. Finish the rebase there (git rebase --continue) or abort it (git rebase --abort), then land again.`
        : `${into} is being bisected in ${busy.checkout}; nothing was landed. End the bisect there (git bisect reset), then land again.`,
  };
}

/**
 * Where `into` is checked out, if anywhere; uncommitted changes there in files the landing
 * touches refuse it, and so do files git ignores at those paths (git would overwrite them).
 */
async function targetCheckout(
  deps: LandDeps,
  repo: string,
  into: string,
  touched: readonly string[],
): Promise<{ ok: true; path: string | undefined } | LandPlanRefusal> {
  const checkout = (await deps.git.listWorktrees(repo)).find(
    (worktree) => worktree.branch === into && !worktree.prunable,
  )?.path;
  if (checkout === undefined) return { ok: true, path: undefined };
  const status = await deps.git.worktreeStatus(checkout, { ignored: true });
  const clashes = (paths: readonly string[]): string[] =>
    paths.filter((path) => touched.some((file) => touches(file, path)));
  const clashing = clashes([...status.dirtyFiles, ...status.untrackedFiles]);
  if (clashing.length > 0)
    return {
      ok: false,
      code: "target_dirty",
      message: `${checkout} (where ${into} is checked out) has uncommitted changes in files the landing changes (${listed(clashing)}); nothing was landed. Commit or stash them there, then land again.`,
    };
  const ignored = clashes(status.ignoredFiles ?? []);
  if (ignored.length > 0)
    return {
      ok: false,
      code: "target_dirty",
      message: `${checkout} (where ${into} is checked out) has files git ignores that the landing would overwrite (${listed(ignored)}); nothing was landed. Move them away (or commit them), then land again.`,
    };
  return { ok: true, path: checkout };
}

/** Whether a touched file and a dirty path (an untracked directory ends in `/`) are the same file. */
function touches(file: string, dirty: string): boolean {
  return dirty.endsWith("/")
    ? file.startsWith(dirty)
    : file === dirty || file.startsWith(`${dirty}/`) || dirty.startsWith(`${file}/`);
}

/**
 * The branch the handoff started from: its base when that is a branch, else what its parent's
 * checkout has out. `tips` (the repository's branch tips, when the caller has them) saves a git call.
 */
export async function defaultTarget(
  deps: { git: Pick<RecoveryGitPort, "branchExists" | "currentBranch"> },
  manifest: Manifest,
  tips?: ReadonlyMap<string, string>,
): Promise<string | undefined> {
  const ref = manifest.base.ref.replace(/^refs\/heads\//, "");
  const isBranch = (name: string): Promise<boolean> =>
    tips !== undefined ? Promise.resolve(tips.has(name)) : deps.git.branchExists(manifest.repo.root, name);
  if (ref !== "HEAD" && ref !== manifest.branch && (await isBranch(ref))) return ref;
  try {
    return await deps.git.currentBranch(manifest.parent.cwd);
  } catch {
    return undefined;
  }
}

type BuildInput = {
  strategy: LandStrategy;
  /** Sign the commits made (the person's `commit.gpgSign`). */
  sign: boolean;
  from: string;
  branchTip: string;
  details: CommitDetail[];
  fastForward: boolean;
  branch: string;
  into: string;
  id: string;
  /** The subject asked for (`--message`). */
  message?: string;
};

/** The commit the target will point at, made in the object store only. */
async function buildResult(
  landGit: LandGit,
  repo: string,
  input: BuildInput,
): Promise<{ ok: true; to: string; created: number } | LandPlanRefusal> {
  const { strategy, from, branchTip, details } = input;
  // A fast-forward, or a rebase onto a target that has not moved, keeps the branch's own commits.
  if (strategy === "ff" || (strategy === "rebase" && input.fastForward)) return { ok: true, to: branchTip, created: 0 };
  if (strategy === "rebase") {
    if (details.some((commit) => commit.parents.length > 1)) {
      return {
        ok: false,
        code: "not_linear",
        message: `${input.branch} contains merge commits, which a rebase would flatten; nothing was landed. Use --strategy merge or squash.`,
      };
    }
    const rebased = await rebaseCommits(landGit, repo, from, details, input.sign);
    if (!rebased.ok) return conflictRefusal(input, rebased.conflicts);
    return { ok: true, to: rebased.to, created: details.length };
  }
  const merged = await landGit.mergeTree(repo, from, branchTip);
  if (!merged.clean) return conflictRefusal(input, merged.conflicts);
  if (strategy === "merge") {
    const to = await landGit.commitTree(repo, {
      tree: merged.tree,
      parents: [from, branchTip],
      message: `${input.message ?? `Merge branch '${input.branch}' into ${input.into}`}\n\nLanded from handoff ${input.id}.`,
      sign: input.sign,
    });
    return { ok: true, to, created: 1 };
  }
  const to = await landGit.commitTree(repo, {
    tree: merged.tree,
    parents: [from],
    message: squashMessage(details, input),
    sign: input.sign,
  });
  return { ok: true, to, created: 1 };
}

/**
 * The branch's commits re-made on `onto` in the object store, authors, dates and messages kept:
 * each new commit's tree is `onto` merged with the branch up to that commit. The new tip, or the
 * paths of the first commit that would conflict.
 */
export async function rebaseCommits(
  landGit: LandGit,
  repo: string,
  onto: string,
  details: readonly CommitDetail[],
  sign: boolean,
): Promise<{ ok: true; to: string } | { ok: false; conflicts: string[] }> {
  let parent = onto;
  for (const commit of details) {
    const merged = await landGit.mergeTree(repo, onto, commit.sha);
    if (!merged.clean) return { ok: false, conflicts: merged.conflicts };
    parent = await landGit.commitTree(repo, {
      tree: merged.tree,
      parents: [parent],
      message: commit.message,
      author: commit,
      sign,
    });
  }
  return { ok: true, to: parent };
}

/**
 * A squash's message: the child's own message when it made one commit, else the first commit's
 * subject and how many more; `--message` sets the subject. The body lists what was squashed.
 */
export function squashMessage(
  details: readonly Pick<CommitDetail, "subject" | "message">[],
  input: Pick<BuildInput, "id" | "branch" | "message">,
): string {
  const only = details.length === 1 ? details[0] : undefined;
  const trailer = `Landed from handoff ${input.id} (branch ${input.branch}).`;
  if (only !== undefined && input.message === undefined) return `${only.message.trimEnd()}\n\n${trailer}`;
  const first = details[0]?.subject ?? input.branch;
  const subject =
    input.message ??
    (details.length === 1 ? first : `${first} (and ${counted(details.length - 1, "more commit", "more commits")})`);
  const listed = details.map((commit) => `* ${commit.subject}`).join("\n");
  return `${subject}\n\n${counted(details.length, "commit")} squashed:\n${listed}\n\n${trailer}`;
}

function conflictRefusal(input: BuildInput, conflicts: string[]): LandPlanRefusal {
  return {
    ok: false,
    code: "conflict",
    conflicts,
    message: `Landing ${input.branch} into ${input.into} (${input.strategy}) would conflict in ${listed(conflicts)}; nothing was landed. Merge ${input.into} into ${input.branch} in the worktree and resolve them there, then land again.`,
  };
}

/** The same landing as one planned before: the same tips, target, checkout, strategy and files. */
export function samePlan(a: LandPlan, b: LandPlan): boolean {
  return (
    a.from === b.from &&
    a.branchTip === b.branchTip &&
    a.into === b.into &&
    a.checkout === b.checkout &&
    a.strategy === b.strategy &&
    a.message === b.message &&
    a.touched.join("\0") === b.touched.join("\0")
  );
}
