/**
 * GitCli: the `RecoveryGitPort` implementation by the git command line (the name says what it is:
 * git, run as a program; it was `SimpleGitPort` while simple-git ran it), on top of the handoff's `GitPort`
 * (handoff-git.ts `HandoffGitCli`, through whose `run` it calls git): what recovery and the
 * after-verbs read (branch tips, commits not in a target and by which rule, ahead/behind counts,
 * git's entry of a worktree and its HEAD history) and recovery's removals. Like every git call of
 * the package, its calls run through `runner.ts` (git spawned with a deadline); the other git code
 * is `checkout-git.ts` (patches, base freshness, refs); git's output is parsed in parse.ts.
 *
 * Invariants:
 * - Every git call has a deadline and its own process, and user input never reaches git where it
 *   could be read as an option (as in handoff-git.ts); read operations never write.
 * - Recovery's removals (`removeWorktree`, `deleteBranch`) each remove exactly one named thing
 *   (never `git worktree prune`, which drops every vanished entry of a repository), and
 *   `deleteBranch` checks the tip and its merge itself right before git deletes it.
 * - A non-zero exit is data, not an exception: each method decides what the exit code means.
 * - Recovery's removals are not retried on a transient failure: a person re-runs them.
 */
import { readdir, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { mergeTree } from "./merge-tree.ts";
import { BRANCH_REF_PREFIX } from "./parse.ts";
import { runGit } from "./runner.ts";
import type { AheadBehind, CommitSummary, GitPort, MergedBy, RecoveryGitPort, WorktreeAdminEntry } from "./types.ts";
import { FULL_SHA, gitFailure, type GitPortOptions, HandoffGitCli, isPlainArgument } from "./handoff-git.ts";

const DEFAULT_COMMIT_LIST_LIMIT = 500;

export class GitCli extends HandoffGitCli implements RecoveryGitPort {
  static create(options: GitPortOptions = {}): GitPort {
    return new GitCli(options);
  }

  async branchTips(repo: string): Promise<Map<string, string>> {
    // NUL-separated fields: a branch name cannot contain NUL, so no name can break a record.
    const result = await this.run(repo, ["for-each-ref", "--format=%(objectname)%00%(refname)", BRANCH_REF_PREFIX]);
    if (result.exitCode !== 0) throw gitFailure(["for-each-ref"], result);
    const tips = new Map<string, string>();
    for (const line of result.stdout.split("\n")) {
      const [sha, ref] = line.split("\0");
      if (sha !== undefined && ref !== undefined && FULL_SHA.test(sha) && ref.startsWith(BRANCH_REF_PREFIX)) {
        tips.set(ref.slice(BRANCH_REF_PREFIX.length), sha);
      }
    }
    return tips;
  }

  async hasRemote(repo: string): Promise<boolean> {
    const result = await this.run(repo, ["remote"]);
    if (result.exitCode !== 0) throw gitFailure(["remote"], result);
    return result.stdout.trim() !== "";
  }

  async commitsNotIn(
    repo: string,
    tip: string,
    exclude: readonly string[],
    options: { excludeRemotes?: boolean; limit?: number } = {},
  ): Promise<{ total: number; commits: CommitSummary[] }> {
    for (const revision of [tip, ...exclude]) assertRevision(revision);
    // `--not --remotes --not` excludes every remote-tracking branch and switches back, so the
    // revisions after `--end-of-options` (which can never be read as options) keep their meaning.
    const selection = [
      ...(options.excludeRemotes === true ? ["--not", "--remotes", "--not"] : []),
      "--end-of-options",
      tip,
      ...exclude.map((revision) => `^${revision}`),
    ];
    const counted = await this.run(repo, ["rev-list", "--count", ...selection]);
    if (counted.exitCode !== 0) throw gitFailure(["rev-list"], counted);
    const total = Number.parseInt(counted.stdout.trim(), 10);
    if (!Number.isSafeInteger(total) || total < 0)
      throw new Error(`git rev-list --count printed ${JSON.stringify(counted.stdout)}.`);
    const limit = options.limit ?? DEFAULT_COMMIT_LIST_LIMIT;
    if (total === 0 || limit <= 0) return { total, commits: [] };
    const listed = await this.run(repo, [
      "rev-list",
      "--no-commit-header",
      "--format=%H %s",
      `--max-count=${limit}`,
      ...selection,
    ]);
    if (listed.exitCode !== 0) throw gitFailure(["rev-list"], listed);
    const commits = listed.stdout
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => {
        const space = line.indexOf(" ");
        return space === -1
          ? { sha: line, subject: "" }
          : { sha: line.slice(0, space), subject: line.slice(space + 1) };
      });
    return { total, commits };
  }

  /** Whether `tip` is merged into `target` by the rule `by` (see `MergedBy`). */
  private async mergedBy(repo: string, by: MergedBy, tip: string, target: string): Promise<boolean> {
    switch (by.rule) {
      case "ancestry":
        return this.isAncestor(repo, tip, target);
      case "landing":
        return FULL_SHA.test(by.result) && this.isAncestor(repo, by.result, target);
      case "patch":
        return (await this.patchesMissing(repo, target, tip)) === 0;
      case "tree":
        return this.mergeChangesNothing(repo, target, tip);
    }
  }

  async aheadBehindCounts(
    repo: string,
    target: string,
    branches: readonly string[],
  ): Promise<Map<string, AheadBehind>> {
    assertRevision(target);
    const counts = new Map<string, AheadBehind>();
    const names = branches.filter((branch) => isPlainArgument(branch) && branch.length > 0);
    if (names.length === 0) return counts;
    const listed = await this.run(repo, [
      "for-each-ref",
      `--format=%(refname)%00%(ahead-behind:${target})%00%(objectname)`,
      ...names.map((branch) => `${BRANCH_REF_PREFIX}${branch}`),
    ]);
    if (listed.exitCode === 0) {
      for (const line of listed.stdout.split("\n")) {
        const [ref = "", counted = "", commit = ""] = line.split("\0");
        const [ahead = Number.NaN, behind = Number.NaN] = counted.split(" ").map((word) => Number.parseInt(word, 10));
        if (ref.startsWith(BRANCH_REF_PREFIX) && Number.isSafeInteger(ahead) && Number.isSafeInteger(behind))
          counts.set(ref.slice(BRANCH_REF_PREFIX.length), { ahead, behind, commit });
      }
      return counts;
    }
    // git before 2.41 has no ahead-behind atom: one count each.
    for (const branch of names) {
      const counted = await this.commitsNotIn(repo, target, [`${BRANCH_REF_PREFIX}${branch}`], { limit: 0 });
      counts.set(branch, { behind: counted.total });
    }
    return counts;
  }

  async patchesMissing(repo: string, target: string, tip: string): Promise<number> {
    assertRevision(target);
    assertRevision(tip);
    // `=`: the commit's patch is in target; `+`: it is not (a merge commit has no patch-id: always `+`).
    const marked = await this.run(repo, [
      "rev-list",
      "--cherry-mark",
      "--right-only",
      "--end-of-options",
      `${target}...${tip}`,
    ]);
    if (marked.exitCode !== 0) throw gitFailure(["rev-list"], marked);
    return marked.stdout.split("\n").filter((line) => line.startsWith("+")).length;
  }

  async mergeChangesNothing(repo: string, target: string, tip: string): Promise<boolean> {
    const [targetTree, merged] = await Promise.all([
      this.resolveTree(repo, target),
      mergeTree((args) => runGit(repo, args, { timeoutMs: this.timeoutMs, env: this.env }), target, tip),
    ]);
    return merged.clean && targetTree !== undefined && merged.tree === targetTree;
  }

  private async resolveTree(repo: string, commit: string): Promise<string | undefined> {
    const result = await this.run(repo, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${commit}^{tree}`]);
    const tree = result.stdout.trim();
    return result.exitCode === 0 && FULL_SHA.test(tree) ? tree : undefined;
  }

  async isAncestor(repo: string, ancestor: string, descendant: string): Promise<boolean> {
    assertRevision(ancestor);
    assertRevision(descendant);
    const result = await this.run(repo, ["merge-base", "--is-ancestor", "--end-of-options", ancestor, descendant]);
    if (result.exitCode === 0) return true;
    if (result.exitCode === 1) return false;
    throw gitFailure(["merge-base"], result);
  }

  async worktreeEntry(commonDir: string, worktreePath: string): Promise<WorktreeAdminEntry | undefined> {
    const root = path.join(commonDir, "worktrees");
    const names = await readdir(root).catch(() => [] as string[]);
    for (const name of names) {
      // git's record of where the checkout is: `<path>/.git`.
      const recorded = await readFile(path.join(root, name, "gitdir"), "utf8").catch(() => undefined);
      if (recorded !== undefined && path.dirname(recorded.trim()) === worktreePath)
        return { name, dir: path.join(root, name) };
    }
    return undefined;
  }

  async stagedInEntry(entry: WorktreeAdminEntry): Promise<string[]> {
    // git reads the entry's own index and HEAD (GIT_DIR); no work tree is needed to compare them.
    const result = await runGit(os.tmpdir(), ["diff-index", "--cached", "--name-only", "-z", "HEAD", "--"], {
      timeoutMs: this.timeoutMs,
      env: this.env,
      gitVariables: { GIT_DIR: entry.dir },
    });
    if (result.exitCode !== 0) throw gitFailure(["diff-index"], { ...result, stdout: result.stdout.toString("utf8") });
    return result.stdout
      .toString("utf8")
      .split("\0")
      .filter((file) => file.length > 0);
  }

  async movedCheckoutOf(entry: WorktreeAdminEntry, near: readonly string[]): Promise<string | undefined> {
    for (const dir of new Set(near)) {
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const candidate = path.join(dir, name);
        const link = await readFile(path.join(candidate, ".git"), "utf8").catch(() => undefined);
        const target = /^gitdir: (.+)$/m.exec(link ?? "")?.[1]?.trim();
        if (target !== undefined && path.resolve(candidate, target) === entry.dir) return candidate;
      }
    }
    return undefined;
  }

  async reflogOnlyCommits(
    repo: string,
    entry: WorktreeAdminEntry,
  ): Promise<{ commits: CommitSummary[]; tips: string[] }> {
    if (!/^[A-Za-z0-9._-]+$/.test(entry.name)) throw new Error(`${JSON.stringify(entry.name)} is not a worktree name.`);
    const reflog = await this.run(repo, ["log", "--walk-reflogs", "--format=%H", `worktrees/${entry.name}/HEAD`, "--"]);
    // No reflog (never written, or expired): nothing is held by it alone.
    if (reflog.exitCode !== 0) return { commits: [], tips: [] };
    const shas = [...new Set(reflog.stdout.split("\n").filter((line) => FULL_SHA.test(line)))];
    if (shas.length === 0) return { commits: [], tips: [] };
    const listed = await this.run(
      repo,
      // `--single-worktree`: `--all` would count every worktree's HEAD too, the dropped one's
      // included, and a commit its detached HEAD alone holds would be taken for reachable.
      ["log", "--format=%H%x00%P%x00%s", "--stdin", "--not", "--single-worktree", "--all", "--"],
      undefined,
      `${shas.join("\n")}\n`,
    );
    if (listed.exitCode !== 0) throw gitFailure(["log"], listed);
    const commits: CommitSummary[] = [];
    const parents = new Set<string>();
    for (const line of listed.stdout.split("\n")) {
      const [sha = "", parentList = "", subject = ""] = line.split("\0");
      if (!FULL_SHA.test(sha)) continue;
      commits.push({ sha, subject });
      for (const parent of parentList.split(" ")) parents.add(parent);
    }
    return { commits, tips: commits.map((commit) => commit.sha).filter((sha) => !parents.has(sha)) };
  }

  async keepCommits(repo: string, refs: readonly { ref: string; sha: string }[]): Promise<void> {
    for (const { ref, sha } of refs) {
      if (!ref.startsWith("refs/pi-handoff/") || !isPlainArgument(ref) || !FULL_SHA.test(sha))
        throw new Error(`${JSON.stringify(ref)} is not a ref this package keeps commits under.`);
      if ((await this.resolveCommit(repo, ref)) === sha) continue;
      // The empty old value: created only if it does not exist (an existing ref is never moved).
      const result = await this.run(repo, ["update-ref", "-m", "pi-handoff: kept", ref, sha, ""]);
      if (result.exitCode !== 0) throw gitFailure(["update-ref"], result);
    }
  }

  async removeWorktree(repo: string, worktreePath: string, options: { force: boolean }): Promise<void> {
    if (!path.isAbsolute(worktreePath) || !isPlainArgument(worktreePath)) {
      throw new Error(`The worktree path ${JSON.stringify(worktreePath)} is not an absolute path.`);
    }
    // One `--force` only: git needs it twice to remove a locked worktree, which stays a person's call.
    const args = ["worktree", "remove", ...(options.force ? ["--force"] : []), "--", worktreePath];
    const result = await this.run(repo, args);
    if (result.exitCode !== 0) throw gitFailure(args, result);
  }

  async deleteBranch(
    repo: string,
    branch: string,
    options: { expectedTip: string; mergedInto: string; by?: MergedBy },
  ): Promise<void> {
    const { expectedTip, mergedInto } = options;
    const by = options.by ?? { rule: "ancestry" };
    if (!isPlainArgument(branch) || branch.length === 0 || branch.startsWith("-")) {
      throw new Error(`${JSON.stringify(branch)} is not a branch name.`);
    }
    if (!FULL_SHA.test(expectedTip) || !FULL_SHA.test(mergedInto))
      throw new Error("deleteBranch needs full commit SHAs.");
    const tip = await this.resolveCommit(repo, `${BRANCH_REF_PREFIX}${branch}`);
    if (tip === undefined) throw new Error(`Branch ${branch} does not exist.`);
    if (tip !== expectedTip) {
      throw new Error(
        `Branch ${branch} moved to ${tip.slice(0, 12)} since it was checked (${expectedTip.slice(0, 12)}); it was not deleted.`,
      );
    }
    if (!(await this.mergedBy(repo, by, tip, mergedInto))) {
      throw new Error(
        by.rule === "ancestry"
          ? `Branch ${branch} has commits that are not in ${mergedInto.slice(0, 12)}; it was not deleted.`
          : `Branch ${branch} has changes that are not in ${mergedInto.slice(0, 12)} (checked by ${by.rule}); it was not deleted.`,
      );
    }
    // `-D` because the merge was checked above against the handoff's base, which need not be the
    // HEAD that `git branch -d` compares with.
    const args = ["branch", "-D", "--", branch];
    const result = await this.run(repo, args);
    if (result.exitCode !== 0) throw gitFailure(args, result);
  }
}

/** A commit or ref given to a history query: never empty, never option-like, one line. */
function assertRevision(revision: string): void {
  if (!isPlainArgument(revision) || revision.length === 0 || revision.startsWith("-") || revision.startsWith("^")) {
    throw new Error(`${JSON.stringify(revision)} is not a commit or ref.`);
  }
}
