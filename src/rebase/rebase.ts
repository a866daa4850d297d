/**
 * `pi-handoff rebase` / `/handoffs rebase`: follow a base that moved on while the child worked,
 * re-making the branch's commits on its target's tip, and telling the child.
 *
 * Invariants:
 * - Objects first: the new commits are made in the object store (git/land.ts, as a rebase landing
 *   makes them), so every refusal and every `--dry-run` leaves refs, index and files byte-identical.
 * - Refused, before anything changes: while the child's Pi is in a turn (or asking for input);
 *   when the worktree has uncommitted or untracked files; when a commit would conflict with the
 *   target (the paths listed); when there is nothing to follow (the branch already has the
 *   target's tip); a branch with merge commits; hooks git rebase would run (without `noVerify`).
 * - The branch moves once: `update-ref <new> <old>` (refused if it moved), then the worktree
 *   follows (`read-tree -m -u`), or the branch goes back. The intent (old and new tip) is recorded
 *   before the move, so a rebase killed at any step leaves the old or the new tip and a record that
 *   `inspect` resolves; the next rebase settles it (and finishes a worktree left behind).
 * - The child is told once, at its next idle point: a note in the handoff store (handoff-notes.ts)
 *   whose id comes from the rebase, which the child's own Pi delivers (adoption/notes.ts).
 * - One actor: the whole command holds the handoff's action lock.
 * - What it says is rendered in words.ts, from the refusal's code and facts.
 */
import { CheckoutMoveError, type LandGit } from "../git/land.ts";
import type { GitCli } from "../git/git.ts";
import { canSettleRebase, type Manifest, type Rebase } from "../manifest/schema.ts";
import type { HandoffNoteStore } from "../manifest/handoff-notes.ts";
import { isActionBusy, type ManifestStore } from "../manifest/store.ts";
import { errorClause, errorSentence } from "../errors.ts";
import { checkpoint, NO_FAULTS, type FaultPlan } from "../faults.ts";
import { isInProgress } from "../inventory/classify.ts";
import type { GatherDeps } from "../inventory/gather.ts";
import { inspectHandoff } from "../inventory/inventory.ts";
import { defaultTarget, HOOKS_RUN_BY, rebaseCommits } from "../land/land-plan.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";
import { BUSY_CHILD_STATES, CHILD_STATE_LABELS } from "../inventory/status.ts";
import type { Failed, Succeeded } from "../outcome.ts";
import {
  describeRebasePlan,
  rebasedNoteText,
  rebasedSentence,
  rebaseRefusalSentence,
  type RebaseRefusalFacts,
} from "./words.ts";

export interface RebaseDeps extends GatherDeps {
  git: GitCli;
  landGit: LandGit;
  store: ManifestStore;
  notes: HandoffNoteStore;
  faults?: FaultPlan;
}

export interface RebaseRequest {
  dryRun: boolean;
  /** Re-make the commits even though the repository has hooks git rebase would run (`--no-verify`). */
  noVerify?: boolean;
  /** The plan the user was shown and confirmed (a dry run's): nothing is rebased unless the plan made now is the same. */
  confirmed?: RebasePlan;
}

export interface RebasePlan {
  handoffId: string;
  branch: string;
  repo: string;
  worktree: string;
  onto: { ref: string; sha: string };
  from: string;
  to: string;
  /** The branch's commits the target lacks, oldest first (re-made on `onto`). */
  commits: { sha: string; subject: string }[];
  /** How many commits the target moved past the branch. */
  behind: number;
  /** Files whose content changes in the worktree. */
  touched: string[];
}

export type RebaseRefusal =
  | "busy"
  | "not_found"
  | "invalid"
  | "removed"
  | "in_progress"
  | "child_working"
  | "no_worktree"
  | "worktree_dirty"
  | "branch_gone"
  | "no_target"
  | "up_to_date"
  | "not_linear"
  | "hooks"
  | "conflict"
  | "moved"
  | "failed";

export type RebaseOutcome =
  | Succeeded<{ code: "dry_run"; plan: RebasePlan; message: string }>
  | Succeeded<{ code: "rebased"; plan: RebasePlan; message: string }>
  /** Nothing new to follow, but a rebase killed after its branch moved was recorded (and told) now. */
  | Succeeded<{ code: "settled"; message: string }>
  | Failed<RebaseRefusal, { conflicts?: string[]; plan?: RebasePlan }>;

type Refused = Extract<RebaseOutcome, { ok: false }>;

/** What rebasing handoff `id` would do, or why it may not. Writes only unreferenced objects. */
export async function planRebase(
  deps: RebaseDeps,
  id: string,
  request: Pick<RebaseRequest, "noVerify">,
): Promise<{ ok: true; plan: RebasePlan; manifest: Manifest } | Refused> {
  try {
    return await planOf(deps, id, request);
  } catch (error) {
    return {
      ok: false,
      code: "failed",
      message: `Could not plan the rebase: ${errorClause(error)}; nothing was rebased.`,
    };
  }
}

/** A refusal with its sentence (words.ts); a conflict lists its paths. */
function refused(facts: RebaseRefusalFacts): Refused {
  const refusal: Refused = { ok: false, code: facts.code, message: rebaseRefusalSentence(facts) };
  return facts.code === "conflict" ? { ...refusal, conflicts: facts.conflicts } : refusal;
}

async function planOf(
  deps: RebaseDeps,
  id: string,
  request: Pick<RebaseRequest, "noVerify">,
): Promise<{ ok: true; plan: RebasePlan; manifest: Manifest } | Refused> {
  const inspected = await inspectHandoff(deps, id);
  if (inspected.code !== "found") return { ok: false, code: inspected.code, message: inspected.message };
  const { report, manifest } = inspected;
  if (manifest.state === "removed") return refused({ code: "removed", id, branch: manifest.branch });
  if (isInProgress(report)) return refused({ code: "in_progress", id, state: report.state });
  const child = report.child;
  // The same rule as a landing's: a Pi starting, in a turn or compacting is busy with its session.
  if (child !== undefined && BUSY_CHILD_STATES.has(child.state))
    return refused({ code: "child_working", id, label: CHILD_STATE_LABELS[child.state], basis: child.basis });
  if (report.worktree.code !== "present")
    return refused({ code: "no_worktree", id, path: manifest.worktree.path, fact: report.worktree.code });
  const changes = report.changes;
  const uncommitted = changes === undefined ? undefined : [...changes.dirtyFiles, ...changes.untrackedFiles];
  if (uncommitted === undefined || uncommitted.length > 0)
    return refused({ code: "worktree_dirty", path: manifest.worktree.path, files: uncommitted });
  const branchState = report.branchState;
  if (branchState.code !== "present") return refused({ code: "branch_gone", id, branch: manifest.branch });
  const repo = manifest.repo.root;
  const into = await defaultTarget(deps, manifest);
  const ontoSha =
    into === undefined || into === manifest.branch
      ? undefined
      : await deps.git.resolveCommit(repo, `refs/heads/${into}`);
  if (into === undefined || ontoSha === undefined)
    return refused({ code: "no_target", id, baseRef: manifest.base.ref });
  const from = branchState.tip;
  if (await deps.git.isAncestor(repo, ontoSha, from))
    return refused({ code: "up_to_date", branch: manifest.branch, into, ontoSha });
  const details = await deps.landGit.commitsBetween(repo, ontoSha, from);
  if (details.some((commit) => commit.parents.length > 1))
    return refused({ code: "not_linear", branch: manifest.branch, into });
  if (request.noVerify !== true && details.length > 0) {
    const hooks = await deps.landGit.hooksFor(manifest.worktree.path, HOOKS_RUN_BY.rebase);
    if (hooks.names.length > 0) return refused({ code: "hooks", names: hooks.names, dir: hooks.dir, into });
  }
  // The forecast first (one merge), then the commits re-made one by one.
  const forecast = await deps.landGit.mergeTree(repo, ontoSha, from);
  const rebased = forecast.clean
    ? await rebaseCommits(deps.landGit, repo, ontoSha, details, await deps.landGit.signsCommits(repo))
    : { ok: false as const, conflicts: forecast.conflicts };
  if (!rebased.ok) return refused({ code: "conflict", branch: manifest.branch, into, conflicts: rebased.conflicts });
  const to = details.length === 0 ? ontoSha : rebased.to;
  const plan: RebasePlan = {
    handoffId: id,
    branch: manifest.branch,
    repo,
    worktree: manifest.worktree.path,
    onto: { ref: into, sha: ontoSha },
    from,
    to,
    commits: details.map((commit) => ({ sha: commit.sha, subject: commit.subject })),
    behind: branchState.behind ?? (await deps.git.commitsNotIn(repo, ontoSha, [from], { limit: 0 })).total,
    touched: await deps.landGit.changedPaths(repo, from, to),
  };
  return { ok: true, plan, manifest };
}

/** Whether `/handoffs` offers a rebase: its target moved past it and no Pi is in a turn there. */
export function canOfferRebase(report: HandoffReport): boolean {
  const busy = report.child !== undefined && BUSY_CHILD_STATES.has(report.child.state);
  return (
    report.state !== "removed" &&
    !busy &&
    report.worktree.code === "present" &&
    report.branchState.code === "present" &&
    (report.branchState.behind ?? 0) > 0
  );
}

/** Rebases handoff `id` (or, with `dryRun`, says what it would do), as the one actor on it. */
export async function rebaseHandoff(
  deps: RebaseDeps,
  id: string,
  request: RebaseRequest,
  now: () => Date = () => new Date(),
): Promise<RebaseOutcome> {
  const done = await deps.store.withActionLock(id, "rebase", () => rebaseLocked(deps, id, request, now));
  return isActionBusy(done) ? { ok: false, code: "busy", message: done.message } : done;
}

/** `rebaseHandoff` for a caller that already holds handoff `id`'s action lock (the queue, queue/queue.ts). */
export async function rebaseLocked(
  deps: RebaseDeps,
  id: string,
  request: RebaseRequest,
  now: () => Date,
): Promise<RebaseOutcome> {
  const settled = await settleInterrupted(deps, id, now);
  const planned = await planRebase(deps, id, request);
  if (!planned.ok && planned.code === "up_to_date" && settled !== undefined)
    return {
      ok: true,
      code: "settled",
      message: `An interrupted rebase had already moved ${settled.branch} to ${settled.to}; it is recorded now. ${planned.message}`,
    };
  if (!planned.ok) return planned;
  const { plan, manifest } = planned;
  if (request.dryRun)
    return {
      ok: true,
      code: "dry_run",
      plan,
      message: `Dry run, nothing changed. Would:\n${describeRebasePlan(plan).join("\n")}`,
    };
  if (request.confirmed !== undefined && !sameRebase(plan, request.confirmed)) {
    return {
      ok: false,
      code: "moved",
      plan,
      message: `${plan.onto.ref} or ${plan.branch} changed since the rebase was shown; nothing was rebased. Look at it again.`,
    };
  }
  // The steps below are the crash-safe sequence of the header: intent, move, record, tell.
  const intent: Rebase = {
    state: "intended",
    at: now().toISOString(),
    onto: plan.onto,
    from: plan.from,
    to: plan.to,
    commits: plan.commits,
  };
  await deps.store.update(id, (m) => {
    m.rebases = [...(m.rebases ?? []), intent];
  });
  const faults = deps.faults ?? NO_FAULTS;
  checkpoint(faults, "rebase-intent");
  try {
    await deps.landGit.moveCheckedOutBranch(plan.worktree, plan.branch, {
      from: plan.from,
      to: plan.to,
      touched: plan.touched,
      tag: id,
      reason: `pi-handoff rebase ${id} onto ${plan.onto.ref}`,
    });
  } catch (error) {
    const state = await settleRebase(deps, id, now);
    const files = error instanceof CheckoutMoveError ? `; ${error.checkout}` : "";
    return {
      ok: false,
      code: "failed",
      plan,
      message: `Could not move ${plan.branch}: ${errorClause(error)}${files}; ${state === "abandoned" ? `${plan.branch} is still at ${plan.from.slice(0, 12)}` : `pi-handoff inspect ${id} shows where it is`}.`,
    };
  }
  checkpoint(faults, "rebase-move");
  await settleRebase(deps, id, now);
  checkpoint(faults, "rebase-record");
  const told = await tellChild(deps, manifest, intent, now);
  return {
    ok: true,
    code: "rebased",
    plan,
    message: rebasedSentence(plan, told),
  };
}

/**
 * Settles the latest rebase if it is still `intended`: `rebased` when the branch is at the new
 * tip (its worktree brought along if a kill left it behind), `abandoned` when still at the old one.
 */
export async function settleRebase(
  deps: Pick<RebaseDeps, "store" | "git" | "landGit">,
  id: string,
  now: () => Date,
): Promise<"rebased" | "abandoned" | "unsettled"> {
  const read = await deps.store.read(id);
  if (!read.ok) return "unsettled";
  const manifest = read.manifest;
  const rebase = manifest.rebases?.at(-1);
  if (rebase?.state !== "intended") return "unsettled";
  const at = await deps.git.resolveCommit(manifest.repo.root, `refs/heads/${manifest.branch}`);
  const outcome = at === rebase.to ? "rebased" : at === rebase.from ? "abandoned" : undefined;
  if (outcome === undefined || !canSettleRebase(rebase.state, outcome)) return "unsettled";
  // Killed between the branch's move and its worktree's: the worktree's index is still the old tip's tree.
  if (outcome === "rebased" && (await deps.landGit.indexIs(manifest.worktree.path, rebase.from).catch(() => false)))
    await deps.landGit.followBranch(manifest.worktree.path, { from: rebase.from, to: rebase.to });
  await deps.store.update(id, (m) => {
    const last = m.rebases?.at(-1);
    if (last !== undefined && last.state === "intended" && last.to === rebase.to) {
      last.state = outcome;
      last.settledAt = now().toISOString();
    }
  });
  return outcome;
}

/** A rebase interrupted earlier is settled before a new one is planned; returns it when it turns out to have moved the branch. */
async function settleInterrupted(
  deps: RebaseDeps,
  id: string,
  now: () => Date,
): Promise<{ branch: string; to: string } | undefined> {
  const read = await deps.store.read(id);
  const rebase = read.ok ? read.manifest.rebases?.at(-1) : undefined;
  if (!read.ok || rebase === undefined) return undefined;
  const state = rebase.state === "intended" ? await settleRebase(deps, id, now) : rebase.state;
  // Killed after the branch moved, the child may not have been told yet (telling twice writes nothing).
  if (state === "rebased") await tellChild(deps, read.manifest, rebase, now);
  return rebase.state === "intended" && state === "rebased"
    ? { branch: read.manifest.branch, to: rebase.to }
    : undefined;
}

/** The note the child's Pi delivers once (its id comes from the rebase, so telling again writes nothing). */
async function tellChild(
  deps: Pick<RebaseDeps, "notes">,
  manifest: Manifest,
  rebase: Pick<Rebase, "at" | "onto" | "from" | "to" | "commits">,
  now: () => Date,
): Promise<string | undefined> {
  const text = rebasedNoteText(manifest, rebase);
  try {
    await deps.notes.write(
      {
        handoffId: manifest.id,
        kind: "rebased",
        branch: manifest.branch,
        text,
        rebase: { onto: rebase.onto, from: rebase.from, to: rebase.to, commits: rebase.commits.length },
        fixedId: { at: new Date(rebase.at), hex: rebase.to },
      },
      now(),
    );
    return undefined;
  } catch (error) {
    return `(Its Pi could not be told: ${errorSentence(error)})`;
  }
}

/** The same rebase as the one shown: the same target tip, the same branch tip and the same commits. */
function sameRebase(a: RebasePlan, b: RebasePlan): boolean {
  return (
    a.onto.sha === b.onto.sha &&
    a.from === b.from &&
    a.commits.map((commit) => commit.sha).join(" ") === b.commits.map((commit) => commit.sha).join(" ")
  );
}
