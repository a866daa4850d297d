/**
 * Three-way merges computed in the object store (`git merge-tree --write-tree`, git 2.38+), one at
 * a time or many in one git process (`--stdin`, git 2.40+): the one definition of how its output
 * reads, shared by landing, the merged rules and the conflict forecast.
 *
 * Invariants:
 * - Objects only: no ref, index or file changes; the merged tree (or the conflicted one) is an
 *   unreferenced object.
 * - Commits are full SHAs (never a name that could read as an option).
 * - A merge with its base given (`MergePair.base`) may merge trees (git 2.45+); without one, git
 *   finds the base from the commits' history, so `ours` and `theirs` are commits.
 */
import { summarizeGitStderr } from "./parse.ts";
import type { GitRun } from "./runner.ts";

export type MergeTreeResult = { clean: true; tree: string } | { clean: false; tree: string; conflicts: string[] };

/** Runs one git command in `repo` (the caller's runner: its deadline and environment). */
/**
 * One merge: `theirs` into `ours`. With `base`, that is the merge base (git does not look for
 * one), and all three may be trees.
 */
export interface MergePair {
  ours: string;
  theirs: string;
  base?: string;
}

export type GitRunner = (args: readonly string[], input?: string) => Promise<GitRun>;

const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const ARGS = ["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z"] as const;

export function assertSha(value: string): void {
  if (!FULL_SHA.test(value)) throw new Error(`${JSON.stringify(value)} is not a full commit SHA.`);
}

/** git's answer was that it does not know an option asked for (an older git): the caller may say which version it needs. */
export class MergeTreeOptionUnknown extends Error {
  override readonly name = "MergeTreeOptionUnknown";
}

function failure(command: string, run: GitRun): Error {
  const stdout = run.stdout.toString("utf8");
  if (run.exitCode > 1 && /unknown option|usage: git merge-tree/i.test(run.stderr)) {
    return new MergeTreeOptionUnknown(
      "This needs git 2.38 or newer (for git merge-tree --write-tree); update git, or merge by hand.",
    );
  }
  return new Error(
    `${command} failed: ${summarizeGitStderr(run.stderr) ?? (stdout.length > 0 ? "unexpected output" : `exit code ${run.exitCode}`)}`,
  );
}

/**
 * The merge of `theirs` into `ours` (from `base` where given): the tree, and the conflicting paths
 * when it does not merge cleanly.
 */
export async function mergeTree(git: GitRunner, ours: string, theirs: string, base?: string): Promise<MergeTreeResult> {
  assertSha(ours);
  assertSha(theirs);
  if (base !== undefined) assertSha(base);
  const run = await git([...ARGS, ...(base === undefined ? [] : [`--merge-base=${base}`]), ours, theirs]);
  // Exit 1 with a tree means conflicts; anything else non-zero is a failure to merge at all.
  const fields = run.stdout.toString("utf8").split("\0");
  const tree = fields[0] ?? "";
  if ((run.exitCode !== 0 && run.exitCode !== 1) || !FULL_SHA.test(tree)) throw failure("git merge-tree", run);
  if (run.exitCode === 0) return { clean: true, tree };
  return { clean: false, tree, conflicts: [...new Set(fields.slice(1).filter((field) => field.length > 0))] };
}

/**
 * Many merges in one git process (`git merge-tree --stdin`, git 2.40+), in the order given; falls
 * back to one process each on an older git.
 */
export async function mergeTrees(git: GitRunner, pairs: readonly MergePair[]): Promise<MergeTreeResult[]> {
  if (pairs.length === 0) return [];
  for (const pair of pairs) {
    assertSha(pair.ours);
    assertSha(pair.theirs);
    if (pair.base !== undefined) assertSha(pair.base);
  }
  const input = pairs
    .map((pair) => `${pair.base === undefined ? "" : `${pair.base} -- `}${pair.ours} ${pair.theirs}\n`)
    .join("");
  const run = await git([...ARGS, "--stdin"], input);
  if (run.exitCode !== 0 && /unknown option|usage: git merge-tree/i.test(run.stderr)) {
    const results: MergeTreeResult[] = [];
    for (const pair of pairs) results.push(await mergeTree(git, pair.ours, pair.theirs, pair.base));
    return results;
  }
  if (run.exitCode !== 0) throw failure("git merge-tree --stdin", run);
  // Each merge: its status (1 clean, 0 conflicted), its tree, its conflicted paths, an empty field.
  const fields = run.stdout.toString("utf8").split("\0");
  const results: MergeTreeResult[] = [];
  let at = 0;
  for (let index = 0; index < pairs.length; index += 1) {
    const status = fields[at];
    const tree = fields[at + 1] ?? "";
    if ((status !== "0" && status !== "1") || !FULL_SHA.test(tree)) throw failure("git merge-tree --stdin", run);
    at += 2;
    const conflicts: string[] = [];
    for (; at < fields.length && fields[at] !== ""; at += 1) conflicts.push(fields[at] ?? "");
    at += 1;
    results.push(status === "1" ? { clean: true, tree } : { clean: false, tree, conflicts: [...new Set(conflicts)] });
  }
  return results;
}
