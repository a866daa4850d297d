/**
 * The conflict forecast (`pi-handoff forecast`, the list's column, the parent's widget mark): for
 * every live handoff, whether it has anything to land (`to-land`, `nothing-to-land`, `landed`) and,
 * for those that do, the files that would conflict landing it into its target now, and between it
 * and each sibling that has something to land too (same repository, same target); and how far the
 * target moved past it.
 *
 * Invariants:
 * - Only a handoff's own commits meet a conflict: one with no commits the target lacks (none since
 *   it started, or all landed) is never merged nor a party to a sibling's clash, and "landed" is
 *   inventory/merged.ts `mergedOf`, the rule every command uses. Siblings are merged as each would land: each
 *   merged into the target first, then the two results from the target's tip (an explicit merge
 *   base), so a sibling that started later does not carry the target's own changes into the pair.
 * - Objects only: every merge is `git merge-tree --write-tree` (git/merge-tree.ts); nothing else is
 *   written, no ref, index or file.
 * - Bounded: per repository one listing of branch tips, one ahead-behind count per target, and two
 *   merge-tree processes (into the targets, with each target's own tree; then between siblings).
 *   The merged rule's checks run only where that merge cannot answer: a clean merge that changes
 *   the target is something to land, and the rule's "a merge that changes nothing" is read from it;
 *   so a patch-id walk only for a handoff that would conflict, and one `merge-base --is-ancestor`
 *   for one whose tip the target holds. A `ForecastCache` answers again without git while no tip moved.
 * - Only merges whose answer is not known without git are asked, each pair once: a tip the target
 *   already holds is not merged, and two siblings whose merges into the target are one tree merge
 *   cleanly. So a crowd of handoffs still at one commit costs nothing, where their pairs would be quadratic.
 * - Reads manifests only through the store; a handoff it cannot forecast (no target branch, a git
 *   failure) is left out with one sentence in `problems`, never guessed at. Sibling clashes that git
 *   could not merge are one sentence too: the git version only where git said the option is unknown.
 */
import { MergeTreeOptionUnknown, type MergePair, type MergeTreeResult } from "../git/merge-tree.ts";
import type { RecoveryGitPort } from "../git/types.ts";
import type { Manifest } from "../manifest/schema.ts";
import { errorSentence } from "../errors.ts";
import { counted } from "../text.ts";
import { mergedOf } from "../inventory/merged.ts";
import { defaultTarget } from "../land/land-plan.ts";
import type { ForecastEntry, MergedFact } from "../inventory/report-schema.ts";

export interface ForecastDeps {
  git: RecoveryGitPort;
  landGit: { mergeTrees(repo: string, pairs: readonly MergePair[]): Promise<MergeTreeResult[]> };
}

export interface Forecast {
  entries: ForecastEntry[];
  problems: string[];
}

interface Live {
  manifest: Manifest;
  tip: string;
  target: string;
  targetTip: string;
  behind: number;
  /** Commits of the tip that the target lacks, where git counted them. */
  ahead?: number;
}

/** Whether a handoff has commits of its own to land. */
type Standing = { code: "to-land" } | { code: "nothing-to-land" } | { code: "landed"; rule: MergedFact["rule"] };

/** The forecast for these handoffs (removed ones and ones whose branch is gone are not live: left out). */
export async function forecastHandoffs(
  deps: ForecastDeps,
  manifests: readonly Manifest[],
  cache?: ForecastCache,
): Promise<Forecast> {
  const problems: string[] = [];
  const byRepo = new Map<string, Manifest[]>();
  for (const manifest of manifests) {
    if (manifest.state === "removed") continue;
    const list = byRepo.get(manifest.repo.root) ?? [];
    list.push(manifest);
    byRepo.set(manifest.repo.root, list);
  }
  const entries = new Map<string, ForecastEntry>();
  for (const [repo, own] of byRepo) {
    try {
      for (const entry of await forecastRepo(deps, repo, own, problems, cache)) entries.set(entry.id, entry);
    } catch (error) {
      problems.push(`Could not forecast the handoffs of ${repo}: ${errorSentence(error)}`);
    }
  }
  // In the order the handoffs were given.
  return { entries: manifests.flatMap((manifest) => entries.get(manifest.id) ?? []), problems };
}

async function forecastRepo(
  deps: ForecastDeps,
  repo: string,
  manifests: readonly Manifest[],
  problems: string[],
  cache: ForecastCache | undefined,
): Promise<ForecastEntry[]> {
  const tips = await deps.git.branchTips(repo);
  const live: Live[] = [];
  for (const manifest of manifests) {
    const tip = tips.get(manifest.branch);
    if (tip === undefined) continue;
    const target = await defaultTarget(deps, manifest, tips);
    const targetTip = target === undefined ? undefined : tips.get(target);
    if (target === undefined || targetTip === undefined || target === manifest.branch) {
      problems.push(
        `Handoff ${manifest.id} (${manifest.branch}) has no branch to land into (it started from ${manifest.base.ref}); it is not forecast.`,
      );
      continue;
    }
    live.push({ manifest, tip, target, targetTip, behind: 0 });
  }
  const key = live
    .map((handoff) => `${handoff.manifest.id}:${handoff.tip}:${handoff.target}:${handoff.targetTip}`)
    .join("\n");
  const known = cache?.get(repo, key);
  if (known !== undefined) return known;

  // How far each target moved past its handoffs (and they past it): one count per target.
  for (const target of new Set(live.map((handoff) => handoff.target))) {
    const group = live.filter((handoff) => handoff.target === target);
    const counts = await deps.git.aheadBehindCounts(
      repo,
      group[0]?.targetTip ?? "",
      group.map((h) => h.manifest.branch),
    );
    for (const handoff of group) {
      const count = counts.get(handoff.manifest.branch);
      handoff.behind = count?.behind ?? 0;
      // Counted for the tip listed above only: a branch that moved between the two calls is asked.
      if (count?.ahead !== undefined && count.commit === handoff.tip) handoff.ahead = count.ahead;
    }
  }
  // On a git without the ahead count: one count each for a handoff with commits since it started.
  for (const handoff of live)
    if (handoff.ahead === undefined && handoff.tip !== handoff.manifest.base.sha)
      handoff.ahead = (await deps.git.commitsNotIn(repo, handoff.tip, [handoff.targetTip], { limit: 0 })).total;
  // Each handoff with commits its target lacks merged into it, and each target's own tree: one git process.
  const intoTarget = new MergeQuestions();
  const withCommits = live.filter((handoff) => handoff.tip !== handoff.manifest.base.sha && (handoff.ahead ?? 0) > 0);
  const ownQuestion = new Map(
    withCommits.map((handoff) => [handoff, intoTarget.ask({ ours: handoff.targetTip, theirs: handoff.tip })]),
  );
  const targetTreeQuestion = new Map(
    [...new Set(withCommits.map((handoff) => handoff.targetTip))].map((tip) => [tip, intoTarget.treeOf(tip)]),
  );
  const intoTargetResults = await intoTarget.answer(deps, repo);
  const resultOf = (question: number | undefined): MergeTreeResult | undefined =>
    question === undefined ? undefined : intoTargetResults[question];
  const standings = await Promise.all(
    live.map((handoff) => {
      const merged = resultOf(ownQuestion.get(handoff));
      const targetTree = resultOf(targetTreeQuestion.get(handoff.targetTip))?.tree;
      return standingOf(deps.git, handoff, merged === undefined ? undefined : { merged, targetTree });
    }),
  );
  const toLand = live.filter((_, index) => standings[index]?.code === "to-land");

  const conflictsOf = (results: readonly MergeTreeResult[], question: number | undefined): string[] => {
    const result = question === undefined ? undefined : results[question];
    return result === undefined || result.clean ? [] : [...result.conflicts].sort();
  };
  const ownTree = (handoff: Live): string | undefined => resultOf(ownQuestion.get(handoff))?.tree;

  // Each pair of siblings, as each would land: their merges into the target, from the target's tip.
  const between = new MergeQuestions();
  const siblingPairs: { left: Live; right: Live; question: number | undefined }[] = [];
  for (let a = 0; a < toLand.length; a += 1) {
    for (let b = a + 1; b < toLand.length; b += 1) {
      const left = toLand[a];
      const right = toLand[b];
      if (left === undefined || right === undefined || left.target !== right.target) continue;
      const ours = ownTree(left);
      const theirs = ownTree(right);
      if (ours === undefined || theirs === undefined) continue;
      siblingPairs.push({ left, right, question: between.ask({ base: left.targetTip, ours, theirs }) });
    }
  }
  let betweenResults: MergeTreeResult[] = [];
  let complete = true;
  try {
    betweenResults = await between.answer(deps, repo);
  } catch (error) {
    // Each handoff's own forecast still stands. The version is named only where git said it does
    // not know the option (a timeout or another failure is said as it is).
    complete = false;
    siblingPairs.length = 0;
    problems.push(
      `Sibling clashes in ${repo} are not forecast: ${
        error instanceof MergeTreeOptionUnknown
          ? "this git cannot merge from a given base (git merge-tree --merge-base with trees needs git 2.45 or newer)."
          : errorSentence(error)
      }`,
    );
  }
  const siblings = new Map<string, { id: string; branch: string; conflicts: string[] }[]>();
  for (const { left, right, question } of siblingPairs) {
    const conflicts = conflictsOf(betweenResults, question);
    for (const [one, other] of [
      [left, right],
      [right, left],
    ] as const) {
      const list = siblings.get(one.manifest.id) ?? [];
      list.push({ id: other.manifest.id, branch: other.manifest.branch, conflicts });
      siblings.set(one.manifest.id, list);
    }
  }
  const entries = live.map((handoff, index): ForecastEntry => {
    const standing = standings[index] ?? { code: "to-land" };
    const common = {
      id: handoff.manifest.id,
      branch: handoff.manifest.branch,
      target: handoff.target,
      behind: handoff.behind,
    };
    switch (standing.code) {
      case "nothing-to-land":
        return { code: "nothing-to-land", ...common };
      case "landed":
        return { code: "landed", ...common, rule: standing.rule };
      case "to-land":
        return {
          code: "to-land",
          ...common,
          conflicts: conflictsOf(intoTargetResults, ownQuestion.get(handoff)),
          siblings: siblings.get(handoff.manifest.id) ?? [],
        };
    }
  });
  if (complete) cache?.set(repo, key, entries);
  return entries;
}

/**
 * Whether the handoff has commits of its own to land: none since it started, or none its target
 * lacks, is nothing to land; commits since it started that are all in the target (by the one
 * merged rule, inventory/merged.ts) are landed. `intoTarget` is its merge into the target, already made: a clean one
 * that changes the target is what landing would make (something to land, no check needed), and
 * the rule's "a merge that changes nothing" is read from it instead of merging again.
 */
async function standingOf(
  git: RecoveryGitPort,
  handoff: Live,
  intoTarget: { merged: MergeTreeResult; targetTree: string | undefined } | undefined,
): Promise<Standing> {
  const { manifest, tip, targetTip, ahead } = handoff;
  const root = manifest.repo.root;
  if (tip === manifest.base.sha) return { code: "nothing-to-land" };
  if (ahead === 0 || ahead === undefined || intoTarget === undefined) {
    // All in the target: landed when it made commits since it started, else it never had any.
    return (await git.isAncestor(root, manifest.base.sha, tip))
      ? { code: "landed", rule: "ancestry" }
      : { code: "nothing-to-land" };
  }
  const { merged, targetTree } = intoTarget;
  const changesNothing = merged.clean && targetTree !== undefined && merged.tree === targetTree;
  if (merged.clean && !changesNothing) return { code: "to-land" };
  const rule = await mergedOf(
    {
      resolveCommit: (repo, ref) => git.resolveCommit(repo, ref),
      isAncestor: (repo, ancestor, descendant) => git.isAncestor(repo, ancestor, descendant),
      patchesMissing: (repo, target, branchTip) => git.patchesMissing(repo, target, branchTip),
      mergeChangesNothing: () => Promise.resolve(changesNothing),
    },
    manifest,
    { tip, target: targetTip, unmerged: ahead, targetMoved: handoff.behind > 0 },
  );
  return rule === undefined ? { code: "to-land" } : { code: "landed", rule: rule.rule };
}

/** The merges one git process is asked, each once; two equal sides are not asked (clean by definition). */
class MergeQuestions {
  readonly pairs: MergePair[] = [];
  private readonly asked = new Map<string, number>();

  /** The index of this merge in `pairs`, undefined where it needs no asking. */
  ask(pair: MergePair): number | undefined {
    if (pair.ours === pair.theirs) return undefined;
    const key = `${pair.base ?? ""} ${pair.ours} ${pair.theirs}`;
    let index = this.asked.get(key);
    if (index === undefined) {
      index = this.pairs.push(pair) - 1;
      this.asked.set(key, index);
    }
    return index;
  }

  /** The index of `commit`'s own tree in `pairs` (its merge with itself, which git answers with its tree). */
  treeOf(commit: string): number {
    const key = `tree ${commit}`;
    let index = this.asked.get(key);
    if (index === undefined) {
      index = this.pairs.push({ ours: commit, theirs: commit }) - 1;
      this.asked.set(key, index);
    }
    return index;
  }

  /** The answers, in the order asked: one git process, none when nothing was asked. */
  answer(deps: ForecastDeps, repo: string): Promise<MergeTreeResult[]> {
    return this.pairs.length === 0 ? Promise.resolve([]) : deps.landGit.mergeTrees(repo, this.pairs);
  }
}

/** The last forecast of each repository, kept while none of its handoffs' tips or targets moved. */
export class ForecastCache {
  private readonly byRepo = new Map<string, { key: string; entries: ForecastEntry[] }>();

  get(repo: string, key: string): ForecastEntry[] | undefined {
    const known = this.byRepo.get(repo);
    return known?.key === key ? known.entries : undefined;
  }

  set(repo: string, key: string, entries: ForecastEntry[]): void {
    this.byRepo.set(repo, { key, entries });
  }
}

/**
 * The short mark of one handoff's forecast (`behind 3, conflicts 2, clashes with feat/b`; `landed`;
 * `nothing to land`), empty when nothing is to say.
 */
export function forecastMark(entry: ForecastEntry | undefined): string {
  if (entry === undefined) return "";
  // Landed: how far the target moved past it says nothing more (its own landing moved it).
  if (entry.code === "landed") return "landed";
  const parts: string[] = [];
  if (entry.behind > 0) parts.push(`behind ${entry.behind}`);
  if (entry.code === "nothing-to-land") return [...parts, "nothing to land"].join(", ");
  if (entry.conflicts.length > 0) parts.push(`conflicts ${entry.conflicts.length}`);
  const clashing = entry.siblings.filter((sibling) => sibling.conflicts.length > 0).map((sibling) => sibling.branch);
  if (clashing.length > 0) parts.push(`clashes with ${clashing.join(", ")}`);
  return parts.join(", ");
}

/** `pi-handoff forecast`'s text: one line per handoff, then what landing it would meet. */
export function formatForecast(forecast: Forecast): string {
  if (forecast.entries.length === 0) return "No live handoffs to forecast.";
  const lines: string[] = [];
  for (const entry of forecast.entries) {
    const moved =
      entry.behind > 0
        ? `${entry.target} has moved ${counted(entry.behind, "commit")} past it`
        : `${entry.target} has not moved past it`;
    lines.push(`${entry.branch} (${entry.id}) into ${entry.target}: ${moved}`);
    switch (entry.code) {
      case "nothing-to-land":
        lines.push("  nothing to land: it has no commits of its own");
        break;
      case "landed":
        lines.push(`  already landed: its commits are in ${entry.target} (${LANDED_RULE_WORDS[entry.rule]})`);
        break;
      case "to-land":
        lines.push(
          entry.conflicts.length === 0
            ? `  lands cleanly into ${entry.target}`
            : `  would conflict with ${entry.target} in ${entry.conflicts.join(", ")}`,
        );
        for (const sibling of entry.siblings)
          lines.push(
            sibling.conflicts.length === 0
              ? `  merges cleanly with ${sibling.branch} (${sibling.id})`
              : `  would conflict with ${sibling.branch} (${sibling.id}) in ${sibling.conflicts.join(", ")}`,
          );
        break;
    }
  }
  return lines.join("\n");
}

/** How the merged rule found it landed, in a word or two. */
const LANDED_RULE_WORDS: Readonly<Record<MergedFact["rule"], string>> = {
  ancestry: "merged",
  landing: "by pi-handoff land",
  patch: "rebased",
  tree: "squashed",
};
