/**
 * Worktree setup with real git: carrying staged and unstaged changes (a rename, deletions, a binary
 * and a non-UTF-8 file, a mode change) into a new worktree while the parent checkout stays
 * byte-identical (status, both diffs, every file and the index); `--carry=all` with untracked files;
 * refusals; copying and symlinking ignored files without overwriting; base freshness against a bare
 * remote, with and without a fetch (and a fetch that hangs).
 */
import { createHash } from "node:crypto";
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { handoffCompletions } from "../../pi-extension/handoff-command.ts";
import { CheckoutGit } from "../../src/git/checkout-git.ts";
import { checkBaseFreshness } from "../../src/handoff/freshness.ts";
import { describeSetup, setUpWorktree } from "../../src/handoff/setup.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";

const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex");

/** git with optional locks off (so reading never refreshes the index), stdout as bytes. */
function gitBytes(repo: TempRepo, cwd: string, args: readonly string[]): Buffer {
  return execFileSync("git", args, {
    cwd,
    env: { ...repo.env, GIT_OPTIONAL_LOCKS: "0" },
    timeout: 30_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Every file under `root` (not .git) with its mode and content hash; symlinks by target. */
function treeOf(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      if (name === ".git") continue;
      const path = join(dir, name);
      const info = lstatSync(path);
      const rel = relative(root, path);
      if (info.isSymbolicLink()) out[rel] = `link ${readlinkSync(path)}`;
      else if (info.isDirectory()) walk(path);
      else out[rel] = `${(info.mode & 0o777).toString(8)} ${sha256(readFileSync(path))}`;
    }
  };
  walk(root);
  return out;
}

/** What "the parent checkout did not change" means: index bytes, status, both diffs, every file. */
function checkoutState(repo: TempRepo, checkout: string, indexFile: string) {
  const index = sha256(readFileSync(indexFile)); // first: nothing below may refresh it
  return {
    index,
    status: gitBytes(repo, checkout, ["status", "--porcelain=v2", "-z", "--untracked-files=all"]).toString("latin1"),
    diff: sha256(gitBytes(repo, checkout, ["diff", "--binary"])),
    cached: sha256(gitBytes(repo, checkout, ["diff", "--cached", "--binary"])),
    files: treeOf(checkout),
  };
}

const BINARY_V1 = Buffer.from([0x00, 0xff, 0x10, 0x80, 0x00, 0x7f, 0xfe, 0x01, 0x02]);
const BINARY_V2 = Buffer.from([0x00, 0xff, 0x11, 0x81, 0x00, 0x00, 0x00, 0xc3, 0x28, 0xa0, 0xa1]);

/** A repository with every kind of uncommitted change to tracked files, plus untracked and ignored files. */
function dirtyRepo(): TempRepo {
  const repo = createTempRepo({ prefix: "phw-carry-" });
  const put = (file: string, content: string | Buffer) => {
    mkdirSync(join(repo.root, file, ".."), { recursive: true });
    writeFileSync(join(repo.root, file), content);
  };
  put(".gitignore", ".env\n");
  put("a.txt", "alpha\n");
  put("old-name.txt", "moving\nlines\n");
  put("gone-staged.txt", "bye\n");
  put("gone-unstaged.txt", "bye too\n");
  put("both.txt", "one\n");
  put("run.sh", "#!/bin/sh\necho hi\n");
  put("bin.dat", BINARY_V1);
  put("latin1.txt", Buffer.from("caf\xe9\n", "latin1"));
  repo.run(["add", "-A"]);
  repo.run(["commit", "-q", "-m", "files"]);
  // Staged: a rename, a deletion, a binary change, a new file, a change later changed again.
  repo.run(["mv", "old-name.txt", "new-name.txt"]);
  repo.run(["rm", "-q", "gone-staged.txt"]);
  put("bin.dat", BINARY_V2);
  put("added.txt", "new and staged\n");
  put("both.txt", "one\ntwo (staged)\n");
  repo.run(["add", "bin.dat", "added.txt", "both.txt"]);
  // Unstaged: edits, a deletion, a mode change, a non-UTF-8 edit, and more on a staged file.
  put("a.txt", "alpha\nbeta (unstaged)\n");
  unlinkSync(join(repo.root, "gone-unstaged.txt"));
  chmodSync(join(repo.root, "run.sh"), 0o755);
  put("latin1.txt", Buffer.from("caf\xe9\nna\xefve\n", "latin1"));
  put("both.txt", "one\ntwo (staged)\nthree (unstaged)\n");
  // Untracked (one executable) and ignored.
  put("notes/untracked.txt", "scratch\n");
  put("tool.sh", "#!/bin/sh\n");
  chmodSync(join(repo.root, "tool.sh"), 0o750);
  put(".env", "SECRET=1\n");
  return repo;
}

describe("carrying uncommitted changes", () => {
  const repos: TempRepo[] = [];
  afterEach(() => {
    for (const repo of repos.splice(0)) repo.cleanup();
  });

  it("brings staged and unstaged changes (rename, deletions, binary, mode) over; the parent stays byte-identical", async () => {
    const repo = dirtyRepo();
    repos.push(repo);
    const git = new CheckoutGit({ env: repo.env });
    const parentIndex = join(repo.root, ".git", "index");
    const before = checkoutState(repo, repo.root, parentIndex);

    const snapshot = await git.snapshotChanges(repo.root, "tracked");
    expect(snapshot.untracked).toEqual([]);
    expect(snapshot.changes).toEqual(
      expect.arrayContaining([
        { status: "R", from: "old-name.txt", path: "new-name.txt" },
        { status: "D", path: "gone-staged.txt" },
        { status: "D", path: "gone-unstaged.txt" },
        { status: "M", path: "bin.dat" },
        { status: "A", path: "added.txt" },
        { status: "M", path: "run.sh" },
      ]),
    );
    const worktree = join(repo.dir, "wt");
    repo.run(["worktree", "add", "-q", "-b", "carry", worktree, "HEAD"]);
    const result = await setUpWorktree({ git, mainCheckout: repo.root, worktreePath: worktree, carry: snapshot });

    // The parent: index, status, both diffs and every file exactly as before.
    expect(checkoutState(repo, repo.root, parentIndex)).toEqual(before);
    // The worktree: the same split between staged and unstaged, byte for byte, and the same files.
    const child = checkoutState(repo, worktree, join(repo.root, ".git", "worktrees", "wt", "index"));
    expect(child.cached).toBe(before.cached);
    expect(child.diff).toBe(before.diff);
    expect(child.status).toBe(before.status.replace(/\?[^\0]*\0/g, "").replace(/! [^\0]*\0/g, ""));
    const { [".env"]: _env, ["notes/untracked.txt"]: _u, ["tool.sh"]: _t, ...trackedFiles } = before.files;
    expect(child.files).toEqual(trackedFiles);
    expect(readFileSync(join(worktree, "bin.dat"))).toEqual(BINARY_V2);
    expect(statSync(join(worktree, "run.sh")).mode & 0o777).toBe(0o755);
    expect(existsSync(join(worktree, "gone-staged.txt"))).toBe(false);
    expect(existsSync(join(worktree, "old-name.txt"))).toBe(false);
    expect(result.carried).toMatchObject({ mode: "tracked", from: repo.root, untracked: [] });
    expect(describeSetup(result)[0]).toMatch(
      /^Carried \d+ uncommitted changes? from .* \(staged ones stay staged\): .*R old-name\.txt -> new-name\.txt/,
    );
  });

  it("--carry=all adds untracked files (modes kept), never ignored ones", async () => {
    const repo = dirtyRepo();
    repos.push(repo);
    const git = new CheckoutGit({ env: repo.env });
    const before = checkoutState(repo, repo.root, join(repo.root, ".git", "index"));
    const snapshot = await git.snapshotChanges(repo.root, "all");
    expect(snapshot.untracked.sort()).toEqual(["notes/untracked.txt", "tool.sh"]);
    const worktree = join(repo.dir, "wt-all");
    repo.run(["worktree", "add", "-q", "-b", "carry-all", worktree, "HEAD"]);
    const result = await setUpWorktree({ git, mainCheckout: repo.root, worktreePath: worktree, carry: snapshot });
    expect(checkoutState(repo, repo.root, join(repo.root, ".git", "index"))).toEqual(before);
    expect(readFileSync(join(worktree, "notes/untracked.txt"), "utf8")).toBe("scratch\n");
    expect(statSync(join(worktree, "tool.sh")).mode & 0o777).toBe(0o750);
    expect(existsSync(join(worktree, ".env"))).toBe(false);
    const child = checkoutState(repo, worktree, join(repo.root, ".git", "worktrees", "wt-all", "index"));
    expect(child.status).toBe(before.status.replace(/! [^\0]*\0/g, ""));
    expect(result.carried?.untracked.sort()).toEqual(["notes/untracked.txt", "tool.sh"]);
    expect(describeSetup(result)).toContain("Carried 2 untracked files: notes/untracked.txt, tool.sh.");
  });

  it("carries nothing from a clean checkout and says so", async () => {
    const repo = createTempRepo({ prefix: "phw-carry-" });
    repos.push(repo);
    const git = new CheckoutGit({ env: repo.env });
    const snapshot = await git.snapshotChanges(repo.root, "tracked");
    expect(snapshot.staged.byteLength + snapshot.unstaged.byteLength).toBe(0);
    const worktree = join(repo.dir, "wt");
    repo.run(["worktree", "add", "-q", "-b", "clean", worktree, "HEAD"]);
    const result = await setUpWorktree({ git, mainCheckout: repo.root, worktreePath: worktree, carry: snapshot });
    expect(describeSetup(result)).toEqual([
      `Carried: nothing (${repo.root} had no uncommitted changes to tracked files).`,
    ]);
  });

  it("refuses a checkout with unresolved conflicts", async () => {
    const repo = createTempRepo({ prefix: "phw-carry-" });
    repos.push(repo);
    repo.commitFile("c.txt", "base\n", "base");
    repo.run(["checkout", "-q", "-b", "other"]);
    repo.commitFile("c.txt", "other\n", "other");
    repo.run(["checkout", "-q", "main"]);
    repo.commitFile("c.txt", "main\n", "main");
    spawnSync("git", ["merge", "-q", "other"], { cwd: repo.root, env: repo.env, timeout: 30_000 });
    await expect(new CheckoutGit({ env: repo.env }).snapshotChanges(repo.root, "tracked")).rejects.toThrow(
      `${repo.root} has unresolved merge conflicts (c.txt); resolve them before carrying changes.`,
    );
  });

  it("says which changes did not apply to a worktree at another commit, and that the parent still has them", async () => {
    const repo = createTempRepo({ prefix: "phw-carry-" });
    repos.push(repo);
    repo.commitFile("c.txt", "one\n", "one");
    const old = repo.run(["rev-parse", "HEAD~1"]);
    writeFileSync(join(repo.root, "c.txt"), "one changed\n");
    const git = new CheckoutGit({ env: repo.env });
    const snapshot = await git.snapshotChanges(repo.root, "tracked");
    const worktree = join(repo.dir, "wt-old");
    repo.run(["worktree", "add", "-q", "-b", "old", worktree, old]);
    await expect(
      setUpWorktree({ git, mainCheckout: repo.root, worktreePath: worktree, carry: snapshot }),
    ).rejects.toThrow(
      new RegExp(`^The unstaged changes do not apply in ${worktree}: .*c\\.txt.*; they are still in ${repo.root}\\.$`),
    );
    expect(readFileSync(join(repo.root, "c.txt"), "utf8")).toBe("one changed\n");
  });
});

describe("copy and symlink settings", () => {
  const repos: TempRepo[] = [];
  afterEach(() => {
    for (const repo of repos.splice(0)) repo.cleanup();
  });

  it("copies and links only what git does not track, keeps modes, and never overwrites", async () => {
    const repo = createTempRepo({ prefix: "phw-copy-" });
    repos.push(repo);
    const put = (file: string, content: string, mode?: number) => {
      mkdirSync(join(repo.root, file, ".."), { recursive: true });
      writeFileSync(join(repo.root, file), content);
      if (mode !== undefined) chmodSync(join(repo.root, file), mode);
    };
    put(".gitignore", ".env*\nnode_modules/\ncache/\n");
    put("config/app.json", "{}\n");
    put("vendor/kept.txt", "tracked\n");
    repo.run(["add", "-A"]);
    repo.run(["commit", "-q", "-m", "tracked files"]);
    put(".env", "SECRET=1\n", 0o600);
    put(".env.local", "LOCAL=main\n");
    put("node_modules/pkg/index.js", "module.exports = 1;\n");
    put("cache/data.bin", "cached\n");
    put("vendor/extra.txt", "untracked in a tracked dir\n");
    const worktree = join(repo.dir, "wt");
    repo.run(["worktree", "add", "-q", "-b", "copy", worktree, "HEAD"]);
    writeFileSync(join(worktree, ".env.local"), "LOCAL=worktree\n");

    const result = await setUpWorktree({
      git: new CheckoutGit({ env: repo.env }),
      mainCheckout: repo.root,
      worktreePath: worktree,
      copy: [".env*", "config/*.json", "cache"],
      symlink: ["node_modules", "vendor"],
    });

    expect(readFileSync(join(worktree, ".env"), "utf8")).toBe("SECRET=1\n");
    expect(statSync(join(worktree, ".env")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(worktree, ".env.local"), "utf8")).toBe("LOCAL=worktree\n");
    expect(readFileSync(join(worktree, "cache/data.bin"), "utf8")).toBe("cached\n");
    expect(lstatSync(join(worktree, "cache")).isDirectory()).toBe(true);
    expect(readlinkSync(join(worktree, "node_modules"))).toBe(join(repo.root, "node_modules"));
    expect(lstatSync(join(worktree, "vendor")).isSymbolicLink()).toBe(false);
    expect(result).toEqual({
      copied: [".env", "cache"],
      symlinked: ["node_modules"],
      skipped: [
        { path: ".env.local", reason: "already exists in the worktree" },
        { path: "config/app.json", reason: "tracked by git (it is in the worktree already)" },
        { path: "vendor", reason: "a directory with tracked files" },
      ],
    });
    expect(describeSetup(result)).toEqual([
      "Copied from the main checkout: .env, cache.",
      "Symlinked to the main checkout: node_modules.",
      "Left alone: .env.local (already exists in the worktree), config/app.json (tracked by git (it is in the worktree already)), vendor (a directory with tracked files).",
    ]);
    // The main checkout is untouched.
    expect(readFileSync(join(repo.root, ".env.local"), "utf8")).toBe("LOCAL=main\n");
  });
});

describe("base freshness", () => {
  const repos: TempRepo[] = [];
  afterEach(() => {
    for (const repo of repos.splice(0)) repo.cleanup();
  });

  /** A repository whose main follows origin/main on a bare remote, and a second clone that pushes there. */
  function withRemote(): { repo: TempRepo; pushCommits(n: number): void; remoteDir: string } {
    const repo = createTempRepo({ prefix: "phw-fresh-" });
    repos.push(repo);
    const remoteDir = join(repo.dir, "remote.git");
    execFileSync("git", ["init", "-q", "--bare", remoteDir], { env: repo.env, timeout: 30_000 });
    repo.run(["remote", "add", "origin", remoteDir]);
    repo.run(["push", "-q", "-u", "origin", "main"]);
    const other = join(repo.dir, "other");
    execFileSync("git", ["clone", "-q", remoteDir, other], { env: repo.env, timeout: 30_000 });
    let counter = 0;
    const pushCommits = (n: number) => {
      for (let i = 0; i < n; i++)
        repo.commitFile(`upstream-${++counter}.txt`, `${counter}\n`, `upstream ${counter}`, { cwd: other });
      repo.run(["push", "-q", "origin", "main"], { cwd: other });
    };
    return { repo, pushCommits, remoteDir };
  }

  it("warns with the count as last fetched, without touching the network", async () => {
    const { repo, pushCommits } = withRemote();
    pushCommits(2);
    repo.run(["fetch", "-q", "origin"]);
    pushCommits(1); // not fetched: the warning must not know about it
    const git = new CheckoutGit({ env: repo.env });
    const trackingBefore = repo.run(["rev-parse", "refs/remotes/origin/main"]);
    expect(await checkBaseFreshness(git, repo.root, { ref: "main", label: "main", fetch: false })).toEqual({
      ok: true,
      notes: [
        "Warning: main is 2 commits behind origin/main (as last fetched; add --fetch to fetch it first); the worktree starts from main as it is.",
      ],
    });
    // HEAD means the current branch.
    expect(await checkBaseFreshness(git, repo.root, { ref: "HEAD", label: "HEAD", fetch: false })).toMatchObject({
      ok: true,
      notes: [expect.stringContaining("2 commits behind")],
    });
    expect(repo.run(["rev-parse", "refs/remotes/origin/main"])).toBe(trackingBefore);
  });

  it("--fetch fetches that one branch first, never moving the local branch", async () => {
    const { repo, pushCommits } = withRemote();
    pushCommits(3);
    const localBefore = repo.run(["rev-parse", "main"]);
    const git = new CheckoutGit({ env: repo.env });
    expect(await checkBaseFreshness(git, repo.root, { ref: "main", label: "main", fetch: true })).toEqual({
      ok: true,
      notes: [
        "Fetched main from origin first.",
        "Warning: main is 3 commits behind origin/main (just fetched); the worktree starts from main as it is.",
      ],
    });
    expect(repo.run(["rev-parse", "main"])).toBe(localBefore);
    // A remote base is its own upstream: fetched, so current.
    pushCommits(1);
    expect(await checkBaseFreshness(git, repo.root, { ref: "origin/main", label: "origin/main", fetch: true })).toEqual(
      { ok: true, notes: ["Fetched main from origin first."] },
    );
    expect(repo.run(["rev-list", "--count", "main..origin/main"])).toBe("4");
  });

  it("refuses --fetch without a remote branch, or when the fetch fails or hangs", async () => {
    const { repo, remoteDir } = withRemote();
    const git = new CheckoutGit({ env: repo.env });
    repo.run(["branch", "local-only"]);
    expect(await checkBaseFreshness(git, repo.root, { ref: "local-only", label: "local-only", fetch: true })).toEqual({
      ok: false,
      message:
        "local-only follows no remote branch, so --fetch has nothing to fetch; hand off without --fetch (or give a remote branch such as origin/main as the base).",
    });
    execFileSync("mv", [remoteDir, `${remoteDir}.moved`], { timeout: 10_000 });
    const failed = await checkBaseFreshness(git, repo.root, { ref: "main", label: "main", fetch: true });
    expect(failed.ok).toBe(false);
    if (!failed.ok)
      expect(failed.message).toMatch(/^git fetch origin main failed: .+; hand off without --fetch, or try again\.$/);

    // A remote that never answers: the fetch is stopped at its deadline, with everything it started.
    const marker = `sleep 31.${process.pid}`;
    repo.run(["config", "protocol.ext.allow", "always"]);
    repo.run(["remote", "add", "slow", `ext::sh -c ${marker.replace(" ", "% ")}`]);
    repo.run(["config", "branch.main.remote", "slow"]);
    const slow = new CheckoutGit({ env: repo.env, fetchTimeoutMs: 1_000 });
    const started = Date.now();
    expect(await checkBaseFreshness(slow, repo.root, { ref: "main", label: "main", fetch: true })).toEqual({
      ok: false,
      message: "git fetch slow main did not finish within 1 s; hand off without --fetch, or try again.",
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(spawnSync("pgrep", ["-f", marker], { encoding: "utf8" }).stdout.trim()).toBe("");
  });

  it("lists refs for completion; the command completes from the repository Pi runs in", async () => {
    const { repo } = withRemote();
    repo.run(["tag", "v1"]);
    repo.run(["branch", "feat/x"]);
    repo.run(["branch", "feat/busy"]);
    repo.run(["worktree", "add", "-q", join(repo.dir, "busy"), "feat/busy"]);
    expect(await new CheckoutGit({ env: repo.env }).listRefs(repo.root)).toEqual({
      branches: ["feat/busy", "feat/x", "main"],
      remotes: ["origin/main"],
      tags: ["v1"],
    });
    // Branches checked out somewhere (main, feat/busy) are not offered for --existing.
    expect(await handoffCompletions("--existing ", repo.root, repo.env)).toEqual([
      { value: "--existing feat/x ", label: "feat/x", description: "existing branch" },
    ]);
    expect(
      (await handoffCompletions("new-branch o", join(repo.dir, "busy"), repo.env))?.map((item) => item.value),
    ).toEqual(["new-branch origin/main "]);
    expect(await handoffCompletions("x m", join(repo.dir, "not-a-repo"), repo.env)).toBeNull();
  });
});
