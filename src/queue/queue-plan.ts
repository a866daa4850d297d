/**
 * The plan of the merge queue (queue.ts): which children of a repository are ready to land, in
 * which order, and why the others wait. Reads only (git merge-tree writes unreferenced objects);
 * the dry run says this plan, and the real run acts on the same plan.
 *
 * Invariants:
 * - Ready: commits of its own the target lacks, a clean worktree present, its Pi not in a turn,
 *   set up, a target branch. Every other handoff of the repository is listed as waiting, with why.
 * - Order (from the forecast, forecast/forecast.ts): those that merge cleanly into the target now
 *   before those that do not; among them, fewer predicted clashes with the other ready siblings
 *   first; then by creation time, then id.
 */
import { createHash } from "node:crypto";
import type { ChildReportStore } from "../manifest/child-reports.ts";
import type { HandoffNoteStore } from "../manifest/handoff-notes.ts";
import type { Manifest } from "../manifest/schema.ts";
import { isInProgress } from "../inventory/classify.ts";
import { forecastHandoffs } from "../forecast/forecast.ts";
import { buildInventory, type InventoryDeps } from "../inventory/inventory.ts";
import { defaultTarget, type LandDeps } from "../land/land-plan.ts";
import type { WaitReason } from "./queue-journal.ts";
import type { RebaseDeps } from "../rebase/rebase.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";
import { BUSY_CHILD_STATES, CHILD_STATE_LABELS } from "../inventory/status.ts";

export type QueueDeps = LandDeps & RebaseDeps & InventoryDeps & { reports: ChildReportStore; notes: HandoffNoteStore };

export interface QueueMember {
  id: string;
  branch: string;
  worktree: string;
  into: string;
  createdAt: string;
  /** Its branch's commits the target lacks, now. */
  commits: number;
  /** Whether its branch already has the target's tip (the first one lands by fast-forward then). */
  onTip: boolean;
  /** Files the forecast says conflict merging it into the target now. */
  targetConflicts: string[];
  /** The other ready members the forecast says it clashes with. */
  clashesWith: string[];
}

export interface QueuePlan {
  members: QueueMember[];
  waiting: { id: string; branch: string; reason: WaitReason }[];
  /** What the forecast could not say (one sentence each); those members go last. */
  problems: string[];
  /**
   * Git cannot make the commits the run would make (the rebase of each child after the first onto
   * the moved target): it has no identity. The sentence; a run stops before anything, a dry run says it.
   */
  noIdentity?: string;
}

/** The key of a repository's queue in the store's action locks (a handoff id's shape, never one's value). */
export function queueLockId(repoCommonDir: string): string {
  return `queue-${createHash("sha256").update(repoCommonDir).digest("hex").slice(0, 16)}`;
}

/** What the queue would do now, in order. Reads only (git merge-tree writes unreferenced objects). */
export async function planQueue(
  deps: QueueDeps,
  request: { repoCommonDir: string; ids?: readonly string[] | undefined },
): Promise<QueuePlan> {
  const only = request.ids === undefined ? undefined : new Set(request.ids);
  const entries = await deps.store.list();
  const inventory = await buildInventory(deps, {
    repoCommonDir: request.repoCommonDir,
    entries,
    ...(only === undefined ? {} : { only: (manifest: Manifest) => only.has(manifest.id) }),
  });
  const manifests = new Map<string, Manifest>();
  for (const entry of entries)
    if (entry.ok && entry.manifest.repo.commonDir === request.repoCommonDir) manifests.set(entry.id, entry.manifest);
  const waiting: QueuePlan["waiting"] = [];
  const ready: { report: HandoffReport; manifest: Manifest; into: string }[] = [];
  for (const report of inventory.handoffs) {
    const manifest = manifests.get(report.id);
    if (manifest === undefined) continue;
    const reason = waitReason(report);
    const into = reason === undefined ? await defaultTarget(deps, manifest) : undefined;
    if (reason !== undefined || into === undefined || into === manifest.branch)
      waiting.push({ id: report.id, branch: report.branch, reason: reason ?? { code: "no_target" } });
    else ready.push({ report, manifest, into });
  }
  // The forecast of every live handoff of the repository (the siblings of the ready ones included).
  const forecast = await forecastHandoffs(deps, [...manifests.values()]);
  const readyIds = new Set(ready.map((entry) => entry.report.id));
  const byId = new Map(forecast.entries.map((entry) => [entry.id, entry]));
  const members = ready.map(({ report, manifest, into }): QueueMember => {
    const entry = byId.get(report.id);
    const toLand = entry?.code === "to-land" ? entry : undefined;
    const branchState = report.branchState;
    return {
      id: report.id,
      branch: report.branch,
      worktree: manifest.worktree.path,
      into,
      createdAt: report.createdAt,
      commits: branchState.code === "present" ? branchState.unmerged.total : 0,
      onTip: branchState.code === "present" && (branchState.behind ?? 0) === 0,
      targetConflicts: toLand?.conflicts ?? [],
      clashesWith: (toLand?.siblings ?? [])
        .filter((sibling) => sibling.conflicts.length > 0 && readyIds.has(sibling.id))
        .map((sibling) => sibling.id),
    };
  });
  members.sort(
    (a, b) =>
      Number(a.targetConflicts.length > 0) - Number(b.targetConflicts.length > 0) ||
      a.clashesWith.length - b.clashesWith.length ||
      a.createdAt.localeCompare(b.createdAt) ||
      a.id.localeCompare(b.id),
  );
  // A rebase makes commits: without an identity git refuses each one, and every child after the
  // first would be sent back (and told) for what is this machine's setting.
  const makesCommits = members.length > 1 || members.some((member) => !member.onTip);
  const repo = ready[0]?.manifest.repo.root;
  const missing = makesCommits && repo !== undefined ? await deps.landGit.missingIdentity(repo) : undefined;
  return {
    members,
    waiting,
    problems: forecast.problems,
    ...(missing === undefined
      ? {}
      : {
          noIdentity: `git has no identity to make the rebased commits with in ${repo} (${missing}); set one (git config --global user.name "Your Name", git config --global user.email you@example.com), then run pi-handoff land --all again`,
        }),
  };
}

/** Why a handoff as the inventory sees it is not ready to queue; undefined: it is (its target aside). */
function waitReason(report: HandoffReport): WaitReason | undefined {
  if (isInProgress(report)) return { code: "in_progress", state: report.state };
  const branchState = report.branchState;
  if (branchState.code !== "present") return { code: "branch_gone" };
  if (branchState.unmerged.total === 0) return { code: "nothing_to_land" };
  const child = report.child;
  if (child !== undefined && BUSY_CHILD_STATES.has(child.state))
    return { code: "child_working", label: CHILD_STATE_LABELS[child.state] };
  if (report.worktree.code !== "present") return { code: "no_worktree" };
  const changes = report.changes;
  const uncommitted = changes === undefined ? [] : [...changes.dirtyFiles, ...changes.untrackedFiles];
  if (changes === undefined || uncommitted.length > 0) return { code: "worktree_dirty", files: uncommitted };
  return undefined;
}
