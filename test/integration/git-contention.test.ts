/**
 * git under contention, with real git: concurrent `git worktree add` on one repository meets
 * another git's lock files and half-created worktrees (git 2.39 dies with "failed to read
 * .git/worktrees/<x>/commondir" while another `worktree add` is writing it). `GitCli` retries
 * those few transient failures briefly and boundedly, and only while nothing but what the retry
 * completes was left; a path is claimed exclusively, so two calls never share a checkout.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitCli } from "../../src/git/git.ts";
import { isTransientGitFailure } from "../../src/git/handoff-git.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";

const repos: TempRepo[] = [];
afterEach(() => {
  for (const repo of repos.splice(0)) repo.cleanup();
});

function setup() {
  const repo = createTempRepo({ prefix: "phw-git-contention-", extraCommits: 1 });
  repos.push(repo);
  return { repo, git: new GitCli({ env: repo.env }), sha: repo.run(["rev-parse", "HEAD"]) };
}

/** The state a concurrent `git worktree add` leaves for a moment: its admin dir with `gitdir` written and `commondir` still empty. */
function halfMadeWorktree(repo: TempRepo, name: string): string {
  const admin = path.join(repo.root, ".git", "worktrees", name);
  mkdirSync(admin, { recursive: true });
  writeFileSync(path.join(admin, "gitdir"), `${path.join(repo.dir, name)}/.git\n`);
  writeFileSync(path.join(admin, "commondir"), "");
  return admin;
}

function later(ms: number, action: () => void): Promise<void> {
  return new Promise((resolve) => setTimeout(() => resolve(action()), ms));
}

describe("transient git failures", () => {
  it("are told apart from real ones by git's own messages", () => {
    expect(isTransientGitFailure("fatal: failed to read .git/worktrees/r-8/commondir: Success\n")).toBe(true);
    expect(
      isTransientGitFailure("fatal: failed to read /repo/.git/worktrees/x y/gitdir: No such file or directory"),
    ).toBe(true);
    expect(
      isTransientGitFailure(
        "fatal: cannot lock ref 'refs/heads/yy': Unable to create '/r/.git/refs/heads/yy.lock': File exists.\n\nAnother git process seems to be running",
      ),
    ).toBe(true);
    expect(isTransientGitFailure("fatal: Unable to create '/r/.git/index.lock': File exists.")).toBe(true);
    expect(isTransientGitFailure("error: could not lock config file .git/config: File exists")).toBe(true);
    expect(isTransientGitFailure("fatal: a branch named 'x' already exists")).toBe(false);
    expect(isTransientGitFailure("fatal: '/wt' already exists")).toBe(false);
    expect(
      isTransientGitFailure(
        "fatal: cannot lock ref 'refs/heads/x/aaa': Unable to create '/r/.git/refs/heads/x/aaa.lock': File name too long",
      ),
    ).toBe(false);
    expect(isTransientGitFailure("fatal: not a valid branch point: '1111'")).toBe(false);
  });
});

describe("GitCli under contention", () => {
  it("20 concurrent addWorktree calls on one repository all succeed", async () => {
    const { repo, git, sha } = setup();
    const branches = Array.from({ length: 20 }, (_, index) => `many/w${index}`);
    const results = await Promise.allSettled(
      branches.map((branch) =>
        git.addWorktree(repo.root, { path: path.join(repo.dir, "wt", branch.replace("/", "-")), branch, sha }),
      ),
    );
    expect(results.filter((result) => result.status === "rejected")).toEqual([]);
    const listed = await git.listWorktrees(repo.root);
    expect(listed.map((entry) => entry.branch).sort()).toEqual(["main", ...branches].sort());
    expect(listed.filter((entry) => entry.prunable || entry.detached)).toEqual([]);
    for (const entry of listed.filter((worktree) => worktree.path !== repo.root)) expect(entry.head).toBe(sha);
  });

  it("listWorktrees waits out a worktree another git is still creating", async () => {
    const { repo, git } = setup();
    const admin = halfMadeWorktree(repo, "in-flight");
    const started = Date.now();
    const [listed] = await Promise.all([
      git.listWorktrees(repo.root),
      later(300, () => rmSync(admin, { recursive: true })),
    ]);
    expect(listed.map((entry) => entry.path)).toEqual([repo.root]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  it("listWorktrees gives up with git's message, in bounded time, when that never ends", async () => {
    const { repo, git } = setup();
    halfMadeWorktree(repo, "stuck");
    const started = Date.now();
    await expect(git.listWorktrees(repo.root)).rejects.toThrow(
      "git worktree list failed: failed to read .git/worktrees/stuck/commondir: Success",
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("addWorktree waits for another git's lock on the new branch's ref", async () => {
    const { repo, git, sha } = setup();
    const lock = path.join(repo.root, ".git", "refs", "heads", "feat", "locked.lock");
    mkdirSync(path.dirname(lock), { recursive: true });
    writeFileSync(lock, "");
    const worktree = path.join(repo.dir, "wt-locked");
    await Promise.all([
      git.addWorktree(repo.root, { path: worktree, branch: "feat/locked", sha }),
      later(300, () => rmSync(lock)),
    ]);
    expect(repo.run(["rev-parse", "feat/locked"])).toBe(sha);
    expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: worktree })).toBe("feat/locked");
  });

  it("addWorktree next to a half-made worktree: the branch its first attempt made is checked out by the retry", async () => {
    const { repo, git, sha } = setup();
    const admin = halfMadeWorktree(repo, "in-flight");
    const worktree = path.join(repo.dir, "wt-next");
    await Promise.all([
      git.addWorktree(repo.root, { path: worktree, branch: "feat/next", sha }),
      later(300, () => rmSync(admin, { recursive: true })),
    ]);
    expect(repo.run(["rev-parse", "feat/next"])).toBe(sha);
    expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: worktree })).toBe("feat/next");
    expect((await git.listWorktrees(repo.root)).map((entry) => entry.path)).toEqual([repo.root, worktree]);
  });

  it("a lock that is never released: git's message in bounded time, and nothing left behind", async () => {
    const { repo, git, sha } = setup();
    const lock = path.join(repo.root, ".git", "refs", "heads", "stuck.lock");
    writeFileSync(lock, "");
    const worktree = path.join(repo.dir, "wt-stuck");
    const started = Date.now();
    await expect(git.addWorktree(repo.root, { path: worktree, branch: "stuck", sha })).rejects.toThrow(
      `git worktree add failed: cannot lock ref 'refs/heads/stuck': Unable to create '${lock}': File exists.`,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await git.branchExists(repo.root, "stuck")).toBe(false);
    expect(existsSync(worktree)).toBe(false);
    // Someone else's lock file is theirs: left as it was.
    expect(existsSync(lock)).toBe(true);
  });

  it("two addWorktree calls for one path: exactly one checks out there, the other creates nothing", async () => {
    const { repo, git, sha } = setup();
    const worktree = path.join(repo.dir, "wt-shared");
    const results = await Promise.allSettled([
      git.addWorktree(repo.root, { path: worktree, branch: "same/slug", sha }),
      git.addWorktree(repo.root, { path: worktree, branch: "same-slug", sha }),
    ]);
    const fulfilled = results.map((result) => result.status === "fulfilled");
    expect(fulfilled.filter(Boolean)).toHaveLength(1);
    const loser = fulfilled[0] === true ? "same-slug" : "same/slug";
    const winner = fulfilled[0] === true ? "same/slug" : "same-slug";
    const rejected = results.find((result) => result.status === "rejected");
    expect(rejected?.status === "rejected" ? String(rejected.reason) : "").toBe(`Error: '${worktree}' already exists.`);
    expect(await git.branchExists(repo.root, loser)).toBe(false);
    expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: worktree })).toBe(winner);
    expect((await git.listWorktrees(repo.root)).map((entry) => entry.path)).toEqual([repo.root, worktree]);
  });
});
