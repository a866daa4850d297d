/**
 * The conflict forecast (`pi-handoff forecast`, the list's column, the parent's widget mark): for
 * every live handoff, the files that would conflict landing it into its target now, and between
 * it and each sibling (same repository, same target), and how far the target moved past it.
 *
 * Invariants:
 * - Objects only: every merge is `git merge-tree --write-tree` (git/merge-tree.ts), all of one
 *   repository's merges in one git process; nothing else is written, no ref, index or file.
 * - Bounded: per repository one listing of branch tips, one ahead-behind count per target, one
 *   merge-tree process; a `ForecastCache` answers again without git while no tip moved.
 * - Only merges whose answer is not known without git are asked, each pair of commits once: two
 *   equal tips, or a tip the target already holds (ahead 0), merge cleanly by definition. So a
 *   crowd of handoffs still at one commit costs nothing, where their pairs would be quadratic.
 * - Reads manifests only through the store; a handoff it cannot forecast (no target branch, a git
 *   failure) is left out with one sentence in `problems`, never guessed at.
 */
import type { MergeTreeResult } from "../git/merge-tree.ts";
import type { RecoveryGitPort } from "../git/types.ts";
import type { Manifest } from "../manifest/schema.ts";
import { errorSentence } from "../errors.ts";
import { counted } from "../text.ts";
import { defaultTarget } from "./land.ts";
import type { ForecastEntry } from "./report-schema.ts";

export interface ForecastDeps {
  git: RecoveryGitPort;
  landGit: { mergeTrees(repo: string, pairs: readonly { ours: string; theirs: string }[]): Promise<MergeTreeResult[]> };
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
  /** Commits of the tip that the target lacks, where git counted them. */
  ahead?: number;
}

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
    live.push({ manifest, tip, target, targetTip });
  }
  const key = live
    .map((handoff) => `${handoff.manifest.id}:${handoff.tip}:${handoff.target}:${handoff.targetTip}`)
    .join("\n");
  const known = cache?.get(repo, key);
  if (known !== undefined) return known;

  // How far each target moved past its handoffs (and they past it): one count per target.
  const behind = new Map<string, number>();
  for (const target of new Set(live.map((handoff) => handoff.target))) {
    const group = live.filter((handoff) => handoff.target === target);
    const counts = await deps.git.aheadBehindCounts(
      repo,
      group[0]?.targetTip ?? "",
      group.map((h) => h.manifest.branch),
    );
    for (const handoff of group) {
      const count = counts.get(handoff.manifest.branch);
      behind.set(handoff.manifest.id, count?.behind ?? 0);
      // Counted for the tip listed above only: a branch that moved between the two calls is asked.
      if (count?.ahead !== undefined && count.commit === handoff.tip) handoff.ahead = count.ahead;
    }
  }
  // Every merge of this repository in one git process: each handoff into its target, then each pair of siblings.
  const merges = new MergeQuestions();
  const intoTarget = live.map((handoff) =>
    // A tip the target holds already merges into it as it is.
    handoff.ahead === 0 ? undefined : merges.ask(handoff.targetTip, handoff.tip),
  );
  const siblingPairs: { left: Live; right: Live; question: number | undefined }[] = [];
  for (let a = 0; a < live.length; a += 1) {
    for (let b = a + 1; b < live.length; b += 1) {
      const left = live[a];
      const right = live[b];
      if (left === undefined || right === undefined || left.target !== right.target) continue;
      siblingPairs.push({ left, right, question: merges.ask(left.tip, right.tip) });
    }
  }
  const merged = merges.pairs.length === 0 ? [] : await deps.landGit.mergeTrees(repo, merges.pairs);
  const conflictsOf = (question: number | undefined): string[] => {
    const result: MergeTreeResult | undefined = question === undefined ? undefined : merged[question];
    return result === undefined || result.clean ? [] : [...result.conflicts].sort();
  };
  const siblings = new Map<string, ForecastEntry["siblings"]>();
  siblingPairs.forEach(({ left, right, question }) => {
    const conflicts = conflictsOf(question);
    for (const [one, other] of [
      [left, right],
      [right, left],
    ] as const) {
      const list = siblings.get(one.manifest.id) ?? [];
      list.push({ id: other.manifest.id, branch: other.manifest.branch, conflicts });
      siblings.set(one.manifest.id, list);
    }
  });
  const entries = live.map((handoff, index) => ({
    id: handoff.manifest.id,
    branch: handoff.manifest.branch,
    target: handoff.target,
    behind: behind.get(handoff.manifest.id) ?? 0,
    conflicts: conflictsOf(intoTarget[index]),
    siblings: siblings.get(handoff.manifest.id) ?? [],
  }));
  cache?.set(repo, key, entries);
  return entries;
}

/** The merges one forecast asks git, each pair of commits once; two equal commits are not asked (clean). */
class MergeQuestions {
  readonly pairs: { ours: string; theirs: string }[] = [];
  private readonly asked = new Map<string, number>();

  /** The index of the merge of `theirs` into `ours` in `pairs`, undefined where it needs no asking. */
  ask(ours: string, theirs: string): number | undefined {
    if (ours === theirs) return undefined;
    const key = `${ours} ${theirs}`;
    let index = this.asked.get(key);
    if (index === undefined) {
      index = this.pairs.push({ ours, theirs }) - 1;
      this.asked.set(key, index);
    }
    return index;
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

/** The short mark of one handoff's forecast (`behind 3, conflicts 2, with feat/b`), empty when nothing is to say. */
export function forecastMark(entry: ForecastEntry | undefined): string {
  if (entry === undefined) return "";
  const parts: string[] = [];
  if (entry.behind > 0) parts.push(`behind ${entry.behind}`);
  if (entry.conflicts.length > 0) parts.push(`conflicts ${entry.conflicts.length}`);
  const clashing = entry.siblings.filter((sibling) => sibling.conflicts.length > 0).map((sibling) => sibling.branch);
  if (clashing.length > 0) parts.push(`clashes with ${clashing.join(", ")}`);
  return parts.join(", ");
}

/** `pi-handoff forecast`'s text: one line per handoff, then the conflicting paths. */
export function formatForecast(forecast: Forecast): string {
  if (forecast.entries.length === 0) return "No live handoffs to forecast.";
  const lines: string[] = [];
  for (const entry of forecast.entries) {
    const moved =
      entry.behind > 0
        ? `${entry.target} has moved ${counted(entry.behind, "commit")} past it`
        : `${entry.target} has not moved past it`;
    lines.push(`${entry.branch} (${entry.id}) into ${entry.target}: ${moved}`);
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
  }
  return lines.join("\n");
}
