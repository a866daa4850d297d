import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitCli } from "../../src/git/git.ts";
import { GitStateSchema } from "../../src/manifest/schema.ts";
import {
  createTempRepo,
  makeTempDir,
  removeTempDir,
  type TempRepo,
  type TempRepoOptions,
} from "../support/git-repo.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function setup(options: TempRepoOptions = {}): { repo: TempRepo; git: GitCli } {
  const repo = createTempRepo(options);
  cleanups.push(repo.cleanup);
  return { repo, git: new GitCli({ env: repo.env, timeoutMs: 20_000 }) };
}

function tempDir(): string {
  const dir = makeTempDir("pi-handoff-git-other-");
  cleanups.push(() => removeTempDir(dir));
  return dir;
}

/** Input that would run `touch canary` if it ever reached a shell; the canary file must never appear. */
const SHELL_PAYLOADS = ["$(touch canary)", "`touch canary`", "x;touch canary", "$(touch${IFS}canary)"];

function expectNoCanary(repo: TempRepo): void {
  expect(existsSync(path.join(repo.root, "canary"))).toBe(false);
  expect(existsSync(path.join(repo.dir, "canary"))).toBe(false);
  expect(existsSync(path.join(process.cwd(), "canary"))).toBe(false);
}

describe("GitCli.findRepository", () => {
  it("describes the main checkout from its root and from a subdirectory", async () => {
    const { repo, git } = setup();
    const sub = path.join(repo.root, "src", "deep");
    mkdirSync(sub, { recursive: true });
    const expected = {
      mainCheckout: repo.root,
      commonDir: path.join(repo.root, ".git"),
      currentCheckout: repo.root,
      isLinkedWorktree: false,
    };
    expect(await git.findRepository(repo.root)).toEqual(expected);
    expect(await git.findRepository(sub)).toEqual(expected);
  });

  it("finds the main checkout from a subdirectory of a linked worktree", async () => {
    const { repo, git } = setup();
    const worktree = path.join(repo.dir, "linked");
    repo.run(["worktree", "add", "--quiet", "-b", "feature", "--", worktree, "HEAD"]);
    const sub = path.join(worktree, "src", "deep");
    mkdirSync(sub, { recursive: true });
    expect(await git.findRepository(sub)).toEqual({
      mainCheckout: repo.root,
      commonDir: path.join(repo.root, ".git"),
      currentCheckout: worktree,
      isLinkedWorktree: true,
    });
  });

  it("reports canonical paths when cwd is reached through a symlink", async () => {
    const { repo, git } = setup();
    const link = path.join(repo.dir, "link-to-repo");
    symlinkSync(repo.root, link);
    expect(await git.findRepository(link)).toEqual({
      mainCheckout: repo.root,
      commonDir: path.join(repo.root, ".git"),
      currentCheckout: repo.root,
      isLinkedWorktree: false,
    });
  });

  it("names the bare repository as the main worktree of a bare-backed worktree, as git does", async () => {
    const { repo, git } = setup();
    const bare = path.join(repo.dir, "bare.git");
    const worktree = path.join(repo.dir, "bare-wt");
    repo.run(["clone", "--quiet", "--bare", "--", repo.root, bare]);
    repo.run(["worktree", "add", "--quiet", "-b", "wt", "--", worktree, "HEAD"], { cwd: bare });
    expect(await git.findRepository(worktree)).toEqual({
      mainCheckout: bare,
      commonDir: bare,
      currentCheckout: worktree,
      isLinkedWorktree: true,
    });
    expect(await git.findRepository(bare)).toBeUndefined();
  });

  it("returns undefined outside a work tree: plain dir, missing dir, a file, inside .git", async () => {
    const { repo } = setup();
    const outside = tempDir();
    // The ceiling stops discovery from climbing out of the temp dir into whatever holds it.
    const git = new GitCli({ env: { ...repo.env, GIT_CEILING_DIRECTORIES: path.dirname(outside) } });
    writeFileSync(path.join(outside, "file.txt"), "x");
    expect(await git.findRepository(outside)).toBeUndefined();
    expect(await git.findRepository(path.join(outside, "missing"))).toBeUndefined();
    expect(await git.findRepository(path.join(outside, "file.txt"))).toBeUndefined();
    expect(await git.findRepository(path.join(repo.root, ".git"))).toBeUndefined();
  });
});

describe("GitCli.isValidBranchName", () => {
  it("accepts ordinary names", async () => {
    const { git } = setup();
    for (const name of ["feature", "feature/login-2", "fix.123", "user@host", "a-b_c"]) {
      expect(await git.isValidBranchName(name), name).toBe(true);
    }
  });

  it("refuses options, revision syntax, malformed names and control characters", async () => {
    const { repo, git } = setup();
    // A previous checkout makes `@{-1}` expandable by `check-ref-format --branch`.
    repo.run(["checkout", "--quiet", "-b", "other"]);
    repo.run(["checkout", "--quiet", "main"]);
    const refused = [
      "",
      "-x",
      "--help",
      "--end-of-options",
      "-",
      "HEAD",
      "@",
      "@{-1}",
      "main@{1}",
      "a..b",
      "a b",
      "a~1",
      "a^b",
      "a:b",
      "x.lock",
      "foo/",
      "/foo",
      ".hidden",
      "a\nb",
      "a\0b",
      "a\rb",
      "$(touch canary)",
    ];
    for (const name of refused) {
      expect(await git.isValidBranchName(name), JSON.stringify(name)).toBe(false);
    }
    expectNoCanary(repo);
  });
});

describe("GitCli.branchExists", () => {
  it("answers exactly for refs/heads/<name>", async () => {
    const { repo, git } = setup();
    repo.run(["branch", "feature/x"]);
    repo.run(["tag", "only-a-tag"]);
    expect(await git.branchExists(repo.root, "main")).toBe(true);
    expect(await git.branchExists(repo.root, "feature/x")).toBe(true);
    expect(await git.branchExists(repo.root, "feature")).toBe(false);
    expect(await git.branchExists(repo.root, "only-a-tag")).toBe(false);
    expect(await git.branchExists(repo.root, "refs/heads/main")).toBe(false);
    for (const name of ["", "-x", "--help", "a\0b", ...SHELL_PAYLOADS]) {
      expect(await git.branchExists(repo.root, name), JSON.stringify(name)).toBe(false);
    }
    expectNoCanary(repo);
  });
});

describe("GitCli.listWorktrees", () => {
  it("lists the main checkout and linked, detached and prunable worktrees", async () => {
    const { repo, git } = setup({ extraCommits: 1 });
    const head = repo.run(["rev-parse", "HEAD"]);
    const first = repo.run(["rev-parse", "HEAD~1"]);
    const linked = path.join(repo.dir, "linked");
    const detached = path.join(repo.dir, "detached");
    const gone = path.join(repo.dir, "gone");
    repo.run(["worktree", "add", "--quiet", "-b", "feature", "--", linked, first]);
    repo.run(["worktree", "add", "--quiet", "--detach", "--", detached, head]);
    repo.run(["worktree", "add", "--quiet", "-b", "gone", "--", gone, head]);
    repo.run(["worktree", "lock", "--reason", "testing", "--", detached]);
    rmSync(gone, { recursive: true, force: true });

    const [main, ...linkedEntries] = await git.listWorktrees(repo.root);
    // git lists linked worktrees in directory-read order of `.git/worktrees`; only the main one is first.
    linkedEntries.sort((left, right) => left.path.localeCompare(right.path));
    expect([main, ...linkedEntries]).toEqual([
      { path: repo.root, head, branch: "main", detached: false, prunable: false, bare: false, locked: false },
      { path: detached, head, detached: true, prunable: false, bare: false, locked: true },
      { path: gone, head, branch: "gone", detached: false, prunable: true, bare: false, locked: false },
      { path: linked, head: first, branch: "feature", detached: false, prunable: false, bare: false, locked: false },
    ]);
  });
});

describe("GitCli.resolveCommit", () => {
  it("resolves HEAD, ancestry, tags, short and full SHAs to the full commit SHA", async () => {
    const { repo, git } = setup({ extraCommits: 2 });
    const head = repo.run(["rev-parse", "HEAD"]);
    const parent = repo.run(["rev-parse", "HEAD~1"]);
    repo.run(["tag", "light", "HEAD~2"]);
    repo.run(["tag", "--annotate", "-m", "annotated", "annotated", "HEAD~1"]);
    const initial = repo.run(["rev-parse", "HEAD~2"]);

    expect(await git.resolveCommit(repo.root, "HEAD")).toBe(head);
    expect(await git.resolveCommit(repo.root, "HEAD~1")).toBe(parent);
    expect(await git.resolveCommit(repo.root, "main")).toBe(head);
    expect(await git.resolveCommit(repo.root, "light")).toBe(initial);
    // An annotated tag peels to its commit, not the tag object.
    expect(await git.resolveCommit(repo.root, "annotated")).toBe(parent);
    expect(await git.resolveCommit(repo.root, head.slice(0, 8))).toBe(head);
    expect(await git.resolveCommit(repo.root, head)).toBe(head);
  });

  it("returns undefined for garbage, non-commits and option-like input, running nothing", async () => {
    const { repo, git } = setup();
    const tree = repo.run(["rev-parse", "HEAD^{tree}"]);
    const output = path.join(repo.dir, "written-by-option");
    const refused = [
      "",
      "-x",
      "--help",
      `--output=${output}`,
      "--upload-pack=touch canary",
      "HEAD~1",
      "garbage",
      "HEAD^{tree}",
      tree,
      "0".repeat(40),
      "a\0b",
      "HEAD\nHEAD",
      ...SHELL_PAYLOADS,
    ];
    for (const ref of refused) {
      expect(await git.resolveCommit(repo.root, ref), JSON.stringify(ref)).toBeUndefined();
    }
    expect(existsSync(output)).toBe(false);
    expectNoCanary(repo);
  });
});

describe("GitCli.currentBranch", () => {
  it("returns the short branch name, or undefined when detached", async () => {
    const { repo, git } = setup();
    const linked = path.join(repo.dir, "linked");
    const detached = path.join(repo.dir, "detached");
    repo.run(["worktree", "add", "--quiet", "-b", "feature/one", "--", linked, "HEAD"]);
    repo.run(["worktree", "add", "--quiet", "--detach", "--", detached, "HEAD"]);
    // A tag with the branch's name makes `symbolic-ref --short` print `heads/feature/one`.
    repo.run(["tag", "feature/one"]);

    expect(await git.currentBranch(repo.root)).toBe("main");
    expect(await git.currentBranch(linked)).toBe("feature/one");
    expect(await git.currentBranch(detached)).toBeUndefined();
  });
});

describe("GitCli.addWorktree", () => {
  it("creates the branch at exactly the SHA and checks it out in a new worktree", async () => {
    const { repo, git } = setup({ extraCommits: 2 });
    const sha = repo.run(["rev-parse", "HEAD~1"]);
    const worktree = path.join(repo.dir, "handoff-one");

    await git.addWorktree(repo.root, { path: worktree, branch: "handoff/one", sha });

    expect(repo.run(["rev-parse", "refs/heads/handoff/one"])).toBe(sha);
    expect(repo.run(["rev-parse", "HEAD"], { cwd: worktree })).toBe(sha);
    expect(await git.currentBranch(worktree)).toBe("handoff/one");
    expect(repo.run(["status", "--porcelain"], { cwd: worktree })).toBe("");
    expect(await git.findRepository(worktree)).toEqual({
      mainCheckout: repo.root,
      commonDir: path.join(repo.root, ".git"),
      currentCheckout: worktree,
      isLinkedWorktree: true,
    });
    // The main checkout is untouched.
    expect(await git.currentBranch(repo.root)).toBe("main");
    expect(repo.run(["rev-parse", "HEAD"])).toBe(repo.run(["rev-parse", "main"]));
  });

  it("says when it has claimed the path: once, with the directory there and still empty", async () => {
    const { repo, git } = setup();
    const sha = repo.run(["rev-parse", "HEAD"]);
    const worktree = path.join(repo.dir, "claimed");
    const seen: string[][] = [];
    await git.addWorktree(repo.root, {
      path: worktree,
      branch: "claimed",
      sha,
      onClaimed: () => seen.push(readdirSync(worktree)),
    });
    expect(seen).toEqual([[]]);
    expect(repo.run(["rev-parse", "HEAD"], { cwd: worktree })).toBe(sha);
    // Refused before the claim: not called.
    const refused: string[] = [];
    await expect(
      git.addWorktree(repo.root, { path: worktree, branch: "other", sha, onClaimed: () => refused.push("claimed") }),
    ).rejects.toThrow(`'${worktree}' already exists.`);
    expect(refused).toEqual([]);
  });

  it("takes a shell-looking (but valid) branch name literally", async () => {
    const { repo, git } = setup();
    const sha = repo.run(["rev-parse", "HEAD"]);
    const branch = "$(touch${IFS}canary)";
    expect(await git.isValidBranchName(branch)).toBe(true);
    await git.addWorktree(repo.root, { path: path.join(repo.dir, "odd"), branch, sha });
    expect(repo.run(["rev-parse", `refs/heads/${branch}`])).toBe(sha);
    expectNoCanary(repo);
  });

  it("refuses an existing branch and creates nothing", async () => {
    const { repo, git } = setup({ extraCommits: 1 });
    const sha = repo.run(["rev-parse", "HEAD~1"]);
    repo.run(["branch", "taken"]);
    const takenTip = repo.run(["rev-parse", "taken"]);
    const worktree = path.join(repo.dir, "wt");
    const branchesBefore = repo.run(["branch", "--list"]);

    await expect(git.addWorktree(repo.root, { path: worktree, branch: "taken", sha })).rejects.toThrow(
      "A branch named 'taken' already exists.",
    );
    expect(existsSync(worktree)).toBe(false);
    expect(repo.run(["rev-parse", "taken"])).toBe(takenTip);
    expect(repo.run(["branch", "--list"])).toBe(branchesBefore);
    expect((await git.listWorktrees(repo.root)).map((entry) => entry.path)).toEqual([repo.root]);
  });

  it("refuses an existing path (even an empty directory) and creates nothing", async () => {
    const { repo, git } = setup();
    const sha = repo.run(["rev-parse", "HEAD"]);
    const emptyDir = path.join(repo.dir, "empty");
    const fullDir = path.join(repo.dir, "full");
    mkdirSync(emptyDir);
    mkdirSync(fullDir);
    writeFileSync(path.join(fullDir, "keep.txt"), "mine\n");

    await expect(git.addWorktree(repo.root, { path: emptyDir, branch: "new-one", sha })).rejects.toThrow(
      `'${emptyDir}' already exists.`,
    );
    await expect(git.addWorktree(repo.root, { path: fullDir, branch: "new-one", sha })).rejects.toThrow(
      `'${fullDir}' already exists.`,
    );
    expect(await git.branchExists(repo.root, "new-one")).toBe(false);
    expect(readFileSync(path.join(fullDir, "keep.txt"), "utf8")).toBe("mine\n");
    expect((await git.listWorktrees(repo.root)).map((entry) => entry.path)).toEqual([repo.root]);
  });

  it("refuses invalid branches, non-SHAs and relative paths before running git", async () => {
    const { repo, git } = setup();
    const sha = repo.run(["rev-parse", "HEAD"]);
    const worktree = path.join(repo.dir, "wt");
    await expect(git.addWorktree(repo.root, { path: worktree, branch: "--force", sha })).rejects.toThrow(
      "'--force' is not a valid branch name.",
    );
    await expect(git.addWorktree(repo.root, { path: worktree, branch: "ok", sha: "HEAD" })).rejects.toThrow(
      "'HEAD' is not a full commit SHA.",
    );
    await expect(git.addWorktree(repo.root, { path: "relative/wt", branch: "ok", sha })).rejects.toThrow(
      "The worktree path 'relative/wt' is not absolute.",
    );
    expect(existsSync(worktree)).toBe(false);
    expect(await git.branchExists(repo.root, "ok")).toBe(false);
  });

  it("throws git's diagnostic as one line when git fails, creating nothing", async () => {
    const { repo, git } = setup();
    const missing = "1".repeat(40);
    const worktree = path.join(repo.dir, "wt");
    // git's own words, whole and on one line: git 2.39 and 2.47 word it differently.
    await expect(git.addWorktree(repo.root, { path: worktree, branch: "ok", sha: missing })).rejects.toThrow(
      new RegExp(`^git worktree add failed: (not a valid branch point: '${missing}'|invalid reference: ${missing})$`),
    );
    expect(existsSync(worktree)).toBe(false);
    expect(await git.branchExists(repo.root, "ok")).toBe(false);
  });

  it("times out, and names what git left behind", async () => {
    const { repo } = setup();
    const git = new GitCli({ env: repo.env, addWorktreeTimeoutMs: 500 });
    const sha = repo.run(["rev-parse", "HEAD"]);
    const worktree = path.join(repo.dir, "slow");
    const hook = path.join(repo.root, ".git", "hooks", "post-checkout");
    // The hook runs after git has created the branch and the checkout; `exec` keeps it to one process.
    writeFileSync(hook, "#!/bin/sh\nexec sleep 2\n");
    chmodSync(hook, 0o755);

    await expect(git.addWorktree(repo.root, { path: worktree, branch: "slow", sha })).rejects.toThrow(
      new Error(
        `git worktree add timed out after 0.5 s in ${repo.root}; now exists and left in place: branch 'slow', '${worktree}'.`,
      ),
    );
  });
});

describe("GitCli.aheadBehindCounts", () => {
  it("counts each branch's own commits and the target's, for the commit it counted", async () => {
    const { repo, git } = setup();
    repo.run(["branch", "feat"]);
    repo.run(["switch", "-q", "feat"]);
    repo.commitFile("a.txt", "a\n", "feat one");
    const feat = repo.commitFile("b.txt", "b\n", "feat two");
    repo.run(["switch", "-q", "main"]);
    repo.run(["branch", "old"]);
    const main = repo.commitFile("c.txt", "c\n", "main moves");
    const old = repo.run(["rev-parse", "old"]);
    expect(await git.aheadBehindCounts(repo.root, main, ["feat", "old", "missing", "-x"])).toEqual(
      new Map([
        ["feat", { ahead: 2, behind: 1, commit: feat }],
        ["old", { ahead: 0, behind: 1, commit: old }],
      ]),
    );
  });
});

describe("GitCli.captureState", () => {
  it("reports a modified file, an untracked file and 2 commits ahead", async () => {
    const { repo, git } = setup();
    const base = repo.run(["rev-parse", "HEAD"]);
    const worktree = path.join(repo.dir, "wt");
    await git.addWorktree(repo.root, { path: worktree, branch: "work", sha: base });
    repo.commitFile("a.txt", "a\n", "add a", { cwd: worktree });
    const head = repo.commitFile("b.txt", "b\n", "add b", { cwd: worktree });
    writeFileSync(path.join(worktree, "README.md"), "# changed\n");
    writeFileSync(path.join(worktree, "notes.txt"), "untracked\n");

    const before = Date.now();
    const state = await git.captureState(worktree, base);
    const after = Date.now();

    expect(state).toEqual({
      capturedAt: state.capturedAt,
      head,
      dirtyFiles: ["README.md"],
      untrackedFiles: ["notes.txt"],
      aheadOfBase: 2,
    });
    expect(GitStateSchema.parse(state)).toEqual(state);
    const capturedAt = Date.parse(state.capturedAt);
    expect(capturedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(capturedAt).toBeLessThanOrEqual(after);
  });

  it("reports staged, deleted and renamed paths, and untracked directories once", async () => {
    const { repo, git } = setup({ extraCommits: 2 });
    const base = repo.run(["rev-parse", "HEAD"]);
    writeFileSync(path.join(repo.root, "staged.txt"), "new\n");
    repo.run(["add", "--", "staged.txt"]);
    rmSync(path.join(repo.root, "file-1.txt"));
    repo.run(["mv", "--", "file-2.txt", "renamed.txt"]);
    mkdirSync(path.join(repo.root, "newdir"));
    writeFileSync(path.join(repo.root, "newdir", "one.txt"), "1\n");
    writeFileSync(path.join(repo.root, "newdir", "two.txt"), "2\n");

    expect(await git.captureState(repo.root, base)).toEqual({
      capturedAt: expect.any(String),
      head: base,
      dirtyFiles: ["file-1.txt", "renamed.txt", "staged.txt"],
      untrackedFiles: ["newdir/"],
      aheadOfBase: 0,
    });
  });

  it("leaves aheadOfBase out when the base is unknown, and never rewrites the index", async () => {
    const { repo, git } = setup();
    const head = repo.run(["rev-parse", "HEAD"]);
    const index = path.join(repo.root, ".git", "index");
    const indexBefore = readFileSync(index);
    const mtimeBefore = statSync(index).mtimeMs;
    // A changed mtime makes a plain `git status` refresh and rewrite the index.
    const later = new Date(Date.now() + 60_000);
    utimesSync(path.join(repo.root, "README.md"), later, later);

    expect(await git.captureState(repo.root, "2".repeat(40))).toEqual({
      capturedAt: expect.any(String),
      head,
      dirtyFiles: [],
      untrackedFiles: [],
    });
    expect(await git.captureState(repo.root, "not-a-sha")).toEqual({
      capturedAt: expect.any(String),
      head,
      dirtyFiles: [],
      untrackedFiles: [],
    });
    expect(statSync(index).mtimeMs).toBe(mtimeBefore);
    expect(readFileSync(index).equals(indexBefore)).toBe(true);
  });
});

describe("GitCli options", () => {
  it("refuses a non-positive timeout", () => {
    expect(() => new GitCli({ timeoutMs: 0 })).toThrow(RangeError);
    expect(() => new GitCli({ addWorktreeTimeoutMs: Number.NaN })).toThrow(RangeError);
  });

  it("does not pass inherited GIT_DIR or GIT_WORK_TREE to git", async () => {
    const { repo } = setup();
    const other = createTempRepo();
    cleanups.push(other.cleanup);
    const git = new GitCli({
      env: { ...repo.env, GIT_DIR: path.join(other.root, ".git"), GIT_WORK_TREE: other.root, PAGER: "touch canary" },
    });
    expect((await git.findRepository(repo.root))?.mainCheckout).toBe(repo.root);
    expect(await git.currentBranch(repo.root)).toBe("main");
    expectNoCanary(repo);
  });
});

describe("GitCli.worktreeStatus and worktreeStatuses", () => {
  it("look without writing: an index git would refresh stays as it was, one worktree or many", async () => {
    const { repo, git } = setup();
    const worktree = path.join(repo.dir, "wt");
    repo.run(["worktree", "add", "-q", "-b", "feat/look", worktree]);
    const indexes = [path.join(repo.root, ".git", "index"), path.join(repo.root, ".git", "worktrees", "wt", "index")];
    // Same bytes, a new time: a plain `git status` refreshes the index entry and writes it back;
    // ours runs without optional locks (GIT_OPTIONAL_LOCKS=0), so a look never takes index.lock.
    const later = new Date(Date.now() + 60_000);
    for (const checkout of [repo.root, worktree]) utimesSync(path.join(checkout, "README.md"), later, later);
    const before = indexes.map((file) => readFileSync(file));

    expect(await git.worktreeStatus(repo.root)).toEqual({ dirtyFiles: [], untrackedFiles: [] });
    expect(await git.worktreeStatuses([repo.root, worktree])).toEqual([
      { dirtyFiles: [], untrackedFiles: [] },
      { dirtyFiles: [], untrackedFiles: [] },
    ]);
    expect(indexes.map((file) => readFileSync(file))).toEqual(before);
    // What a plain status does there, so the test can tell the difference.
    repo.run(["status", "--porcelain"], { cwd: worktree });
    expect(readFileSync(indexes[1] ?? "")).not.toEqual(before[1]);
  });
});
