/**
 * Recovery's git operations against real repositories: status, commit queries (merged, unpushed
 * against a real remote), worktree removal and prune, and a branch deletion that can never lose a
 * commit.
 */
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GitCli } from "../../src/git/git.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";

let repo: TempRepo;
let git: GitCli;
let base: string;

beforeEach(() => {
  repo = createTempRepo({ prefix: "phw-git-recovery-" });
  git = new GitCli({ env: repo.env, timeoutMs: 10_000 });
  base = repo.run(["rev-parse", "HEAD"]);
});
afterEach(() => repo.cleanup());

function addWorktree(branch: string): string {
  const path = join(repo.dir, branch.replace(/\//g, "-"));
  repo.run(["worktree", "add", "-q", "-b", branch, path, base]);
  return path;
}

describe("RecoveryGitPort on real repositories", () => {
  it("lists every local branch tip in one call, with names git allows", async () => {
    const head = repo.run(["rev-parse", "HEAD"]).trim();
    repo.run(["branch", "feat/ünï$(x)"]);
    repo.run(["branch", "quote'd", "HEAD"]);
    const tips = await git.branchTips(repo.root);
    expect(Object.fromEntries(tips)).toEqual({ main: head, "feat/ünï$(x)": head, "quote'd": head });
  });

  it("reports uncommitted and untracked files of a worktree", async () => {
    const wt = addWorktree("feat/status");
    writeFileSync(join(wt, "README.md"), "changed\n");
    writeFileSync(join(wt, "new.txt"), "new\n");
    expect(await git.worktreeStatus(wt)).toEqual({ dirtyFiles: ["README.md"], untrackedFiles: ["new.txt"] });
  });

  it("reads many worktrees' changes in one batch, as each alone, and leaves those git fails on to be asked alone", async () => {
    const dirty = addWorktree("feat/batch-dirty");
    const clean = addWorktree("feat/batch-clean");
    const spaced = addWorktree("feat/batch-it's");
    writeFileSync(join(dirty, "README.md"), "changed\n");
    writeFileSync(join(dirty, "new file.txt"), "new\n");
    writeFileSync(join(spaced, "x.txt"), "x\n");
    const gone = join(repo.dir, "not-a-worktree");
    const checkouts = [dirty, gone, clean, spaced, repo.root];
    const batched = await git.worktreeStatuses(checkouts);
    expect(batched).toEqual([
      await git.worktreeStatus(dirty),
      undefined,
      await git.worktreeStatus(clean),
      await git.worktreeStatus(spaced),
      await git.worktreeStatus(repo.root),
    ]);
    expect(batched[0]).toEqual({ dirtyFiles: ["README.md"], untrackedFiles: ["new file.txt"] });
  });

  it("keeps each of many worktrees' answer in its place when every group of the batch has several", async () => {
    // 19 directories over the batch's 8 groups (stdout and fds 3 to 9 of one shell): each group
    // answers for two or three, one after the other, while the others write to their own pipes.
    const checkouts = Array.from({ length: 19 }, (_, index) => {
      if (index % 7 === 3) return join(repo.dir, `missing-${index}`);
      const path = addWorktree(`feat/many-${index}`);
      writeFileSync(join(path, `only-in-${index}.txt`), `${index}\n`);
      return path;
    });
    expect(await git.worktreeStatuses(checkouts)).toEqual(
      checkouts.map((path, index) =>
        index % 7 === 3 ? undefined : { dirtyFiles: [], untrackedFiles: [`only-in-${index}.txt`] },
      ),
    );
  });

  it("lists commits not merged, and not pushed to any remote", async () => {
    const wt = addWorktree("feat/commits");
    const first = repo.commitFile("a.txt", "a\n", "first on branch", { cwd: wt });
    const second = repo.commitFile("b.txt", "b\n", "second on branch", { cwd: wt });
    expect(await git.commitsNotIn(repo.root, second, [base])).toEqual({
      total: 2,
      commits: [
        { sha: second, subject: "second on branch" },
        { sha: first, subject: "first on branch" },
      ],
    });
    expect(await git.commitsNotIn(repo.root, second, [base], { limit: 1 })).toEqual({
      total: 2,
      commits: [{ sha: second, subject: "second on branch" }],
    });

    // Push the first commit to a real remote: only the second is unpushed.
    const remote = join(repo.dir, "remote.git");
    repo.run(["init", "-q", "--bare", remote]);
    repo.run(["remote", "add", "origin", remote]);
    repo.run(["push", "-q", "origin", `${first}:refs/heads/feat/commits`]);
    expect(await git.commitsNotIn(repo.root, second, [base], { excludeRemotes: true })).toEqual({
      total: 1,
      commits: [{ sha: second, subject: "second on branch" }],
    });

    repo.run(["merge", "-q", "--ff-only", "feat/commits"]);
    expect(await git.commitsNotIn(repo.root, second, [repo.run(["rev-parse", "main"])])).toEqual({
      total: 0,
      commits: [],
    });
    expect(await git.isAncestor(repo.root, second, "main")).toBe(true);
    expect(await git.isAncestor(repo.root, second, base)).toBe(false);
  });

  it("refuses option-like revisions instead of passing them to git", async () => {
    await expect(git.commitsNotIn(repo.root, "--all", [])).rejects.toThrow('"--all" is not a commit or ref.');
    await expect(git.commitsNotIn(repo.root, base, ["^main"])).rejects.toThrow('"^main" is not a commit or ref.');
  });

  it("removes a clean worktree, refuses a dirty one without force, removes it with force", async () => {
    const clean = addWorktree("feat/clean");
    await git.removeWorktree(repo.root, clean, { force: false });
    expect(existsSync(clean)).toBe(false);
    expect(repo.run(["worktree", "list", "--porcelain"])).not.toContain(clean);
    // The branch is never touched by a worktree removal.
    expect(repo.run(["rev-parse", "--verify", "refs/heads/feat/clean"])).toBe(base);

    const dirty = addWorktree("feat/dirty");
    writeFileSync(join(dirty, "keep.txt"), "work\n");
    await expect(git.removeWorktree(repo.root, dirty, { force: false })).rejects.toThrow(
      /git worktree remove failed: .*untracked/,
    );
    expect(existsSync(join(dirty, "keep.txt"))).toBe(true);
    await git.removeWorktree(repo.root, dirty, { force: true });
    expect(existsSync(dirty)).toBe(false);
  });

  it("finds a worktree's own entry, what is staged in it, a checkout moved by hand using it, and commits only its HEAD history holds", async () => {
    const wt = addWorktree("feat/entry");
    const commonDir = join(repo.root, ".git");
    const entry = await git.worktreeEntry(commonDir, wt);
    expect(entry).toEqual({ name: "feat-entry", dir: join(commonDir, "worktrees", "feat-entry") });
    expect(await git.worktreeEntry(commonDir, join(repo.dir, "nowhere"))).toBeUndefined();
    if (entry === undefined) throw new Error("no entry");
    // A detached experiment: only the worktree's HEAD history holds it.
    repo.run(["checkout", "--quiet", "--detach"], { cwd: wt });
    const experiment = repo.commitFile("x.txt", "x\n", "experiment", { cwd: wt });
    repo.run(["checkout", "--quiet", "feat/entry"], { cwd: wt });
    expect(await git.reflogOnlyCommits(repo.root, entry)).toEqual({
      commits: [{ sha: experiment, subject: "experiment" }],
      tips: [experiment],
    });
    await git.keepCommits(repo.root, [{ ref: `refs/pi-handoff/h/kept/${experiment}`, sha: experiment }]);
    // Kept twice is fine; once kept, nothing is held by the HEAD history alone.
    await git.keepCommits(repo.root, [{ ref: `refs/pi-handoff/h/kept/${experiment}`, sha: experiment }]);
    expect(await git.reflogOnlyCommits(repo.root, entry)).toEqual({ commits: [], tips: [] });
    await expect(git.keepCommits(repo.root, [{ ref: "refs/heads/main", sha: experiment }])).rejects.toThrow(
      "is not a ref this package keeps commits under",
    );
    // Staged, then moved by hand: the entry holds the index, the moved checkout still uses it.
    writeFileSync(join(wt, "staged.txt"), "s\n");
    repo.run(["add", "staged.txt"], { cwd: wt });
    const moved = join(repo.dir, "moved-by-hand");
    renameSync(wt, moved);
    expect(await git.stagedInEntry(entry)).toEqual(["staged.txt"]);
    expect(await git.movedCheckoutOf(entry, [repo.dir])).toBe(moved);
    expect(await git.movedCheckoutOf(entry, [join(repo.dir, "home")])).toBeUndefined();
  });

  it("deletes a branch only when its checked tip is merged", async () => {
    const wt = addWorktree("feat/merge-me");
    const tip = repo.commitFile("m.txt", "m\n", "to merge", { cwd: wt });
    await git.removeWorktree(repo.root, wt, { force: false });

    // Not merged yet: refused, and the branch still points at its commit.
    await expect(git.deleteBranch(repo.root, "feat/merge-me", { expectedTip: tip, mergedInto: base })).rejects.toThrow(
      `Branch feat/merge-me has commits that are not in ${base.slice(0, 12)}; it was not deleted.`,
    );
    expect(repo.run(["rev-parse", "refs/heads/feat/merge-me"])).toBe(tip);

    // A tip other than the one checked: refused.
    await expect(git.deleteBranch(repo.root, "feat/merge-me", { expectedTip: base, mergedInto: tip })).rejects.toThrow(
      `Branch feat/merge-me moved to ${tip.slice(0, 12)} since it was checked (${base.slice(0, 12)}); it was not deleted.`,
    );

    repo.run(["merge", "-q", "--ff-only", "feat/merge-me"]);
    await git.deleteBranch(repo.root, "feat/merge-me", {
      expectedTip: tip,
      mergedInto: repo.run(["rev-parse", "main"]),
    });
    expect(repo.run(["branch", "--list", "feat/merge-me"])).toBe("");
    await expect(git.deleteBranch(repo.root, "-D", { expectedTip: tip, mergedInto: tip })).rejects.toThrow(
      '"-D" is not a branch name.',
    );
  });
});
