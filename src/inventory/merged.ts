/**
 * The one "merged" rule: whether a branch's commits are all in its target, and by which rule.
 * `list`, `inspect`, `remove`, `prune`, `land --all` (through gather.ts's branch fact), `land`
 * (land/land.ts, against the target it lands into) and the forecast (forecast/forecast.ts) ask it.
 *
 * Invariants:
 * - Read-only: git is only asked (through the port), never changed.
 * - The rules are asked cheapest first (report-schema.ts `MERGE_RULES`, git/types.ts `MergedBy`):
 *   `ancestry` (nothing the target lacks), `landing` (this package landed exactly this tip and the
 *   branch it landed into still holds the commit it made), `patch` (every commit's patch is in the
 *   target: a rebase, a cherry-pick), `tree` (merging it would change nothing: a squash). `patch`
 *   and `tree` are asked only when the target has moved since the branch (otherwise the branch's
 *   commits cannot be there another way).
 * - "No commits of its own" (the tip is still where the handoff started) is not "merged": the
 *   callers leave it out before asking (gather.ts, forecast.ts), so such a branch is never said to
 *   have been landed.
 */
import type { RecoveryGitPort } from "../git/types.ts";
import type { Manifest } from "../manifest/schema.ts";
import type { MergedFact } from "./report-schema.ts";

/** The git questions the rule asks. */
export type MergedGit = Pick<
  RecoveryGitPort,
  "resolveCommit" | "isAncestor" | "patchesMissing" | "mergeChangesNothing"
>;

export interface MergedQuestion {
  tip: string;
  /** The target's commit. */
  target: string;
  /** How many commits the tip has that the target lacks (0: merged by ancestry). */
  unmerged: number;
  /** Whether the target has commits the tip lacks. */
  targetMoved: boolean;
  /** Only landings into this branch count (`land` asks about the one target it lands into); else any. */
  landedInto?: string;
}

/** Whether the branch's changes are all in the target, and by which rule; undefined when some are not. */
export async function mergedOf(
  git: MergedGit,
  manifest: Manifest,
  question: MergedQuestion,
): Promise<MergedFact | undefined> {
  const root = manifest.repo.root;
  const { tip, target } = question;
  if (question.unmerged === 0) return { rule: "ancestry" };
  const landing = [...(manifest.landings ?? [])]
    .reverse()
    .find(
      (entry) => entry.state === "landed" && (question.landedInto === undefined || entry.into === question.landedInto),
    );
  if (landing !== undefined && landing.branchTip === tip) {
    const into = await git.resolveCommit(root, `refs/heads/${landing.into}`);
    if (into !== undefined && (await git.isAncestor(root, landing.to, into)))
      return { rule: "landing", landed: landing.to };
  }
  if (!question.targetMoved) return undefined;
  if ((await git.patchesMissing(root, target, tip)) === 0) return { rule: "patch" };
  if (await git.mergeChangesNothing(root, target, tip)) return { rule: "tree" };
  return undefined;
}
