/**
 * SimpleGitPort: the `GitPort` and `RecoveryGitPort` implementation. Like every git call of the
 * package, its calls run through `runner.ts` (git spawned with a deadline); the other git
 * code is `checkout-git.ts` (patches, base freshness, refs).
 *
 * Invariants:
 * - Every git call has a deadline (not extended by output) and its own process, so one failed call
 *   never cancels another.
 * - User input never reaches git where it could be read as an option: names and refs are validated
 *   first and passed after `--` or `--end-of-options` where the command accepts it.
 * - Read operations never write: `GIT_OPTIONAL_LOCKS=0` stops `git status` refreshing the index.
 * - Writes: `addWorktree` refuses an existing branch or path before git runs, because git 2.39
 *   creates the branch before it checks the path. Recovery's removals (`removeWorktree`,
 *   `deleteBranch`) each remove exactly one named thing (never `git worktree prune`, which drops
 *   every vanished entry of a repository), and `deleteBranch`
 *   checks the tip and its merge itself right before git deletes it.
 * - git runs with `LC_ALL=C` (its messages are classified and shown verbatim) and without inherited
 *   `GIT_*` variables other than a small allowlist (runner.ts `gitEnvironment`).
 * - A non-zero exit is data, not an exception: each method decides what the exit code means.
 * - A failure that only means "another git process is busy" (a lock file it holds, a worktree it is
 *   still creating) is retried a few times, briefly (`TRANSIENT_RETRY_DELAYS_MS`), by the calls
 *   concurrent handoffs make (`listWorktrees`, `addWorktree`) and only while the failed attempt left
 *   nothing but what the retry completes. Recovery's removals are not retried: a person re-runs them.
 */
import { stripPeriod } from "../text.ts";
import { setTimeout as sleep } from "node:timers/promises";
import { lstat, readdir, readFile, realpath, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { mergeTree } from "./merge-tree.ts";
import { gitCommandName, runGit, runGitInEach } from "./runner.ts";
import type { GitState } from "../manifest/schema.ts";
import type {
  AheadBehind,
  CommitSummary,
  GitPort,
  MergedBy,
  RecoveryGitPort,
  RepositoryInfo,
  WorktreeAdminEntry,
  WorktreeEntry,
  WorktreeStatus,
} from "./types.ts";
import { asError } from "../errors.ts";
import { isEmptyDirectory, unlessMissing } from "../fs/probe.ts";
import { claimDirectory, releaseClaim } from "../locks/claim.ts";
import { WAIT_DEFAULTS } from "../config/waits.ts";

export interface SimpleGitPortOptions {
  /** Deadline for each read call, in milliseconds. Default 30 s. */
  timeoutMs?: number;
  /** Deadline for `git worktree add`, which checks out a whole tree (default: `PI_HANDOFF_GIT_WORKTREE_TIMEOUT_MS`'s). */
  addWorktreeTimeoutMs?: number;
  /** Environment git runs with (default: `process.env` at call time); see `gitEnvironment`. */
  env?: NodeJS.ProcessEnv;
}

/** A worktree as `git worktree list --porcelain` describes it; `bare` and `locked` go beyond `WorktreeEntry`. */
export interface ParsedWorktree extends WorktreeEntry {
  bare: boolean;
  locked: boolean;
}

export interface ParsedStatus {
  /** Tracked paths that are modified, staged, deleted, renamed or conflicted (renames: the new path). */
  dirtyFiles: string[];
  /** Untracked paths; a wholly untracked directory is one entry ending in `/`. */
  untrackedFiles: string[];
  /** Paths git ignores (only when asked for); an ignored directory is one entry ending in `/`. */
  ignoredFiles: string[];
}

interface GitOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_COMMIT_LIST_LIMIT = 500;
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const BRANCH_REF_PREFIX = "refs/heads/";

/**
 * git failures that mean another git process is in the middle of something, not that the request
 * is wrong: a lock file it holds (`index.lock`, `config.lock`, a ref's `.lock`, `packed-refs.lock`),
 * or a linked worktree that a concurrent `git worktree add` has not finished writing (git 2.39 dies
 * reading its empty `commondir`; seen with a few handoffs started at once on one repository).
 */
const TRANSIENT_GIT_FAILURES: readonly RegExp[] = [
  /Unable to create '[^'\n]*\.lock': File exists/,
  /could not lock config file/,
  /failed to read [^\n]*\/worktrees\/[^/\n]+\/(?:commondir|gitdir)\b/,
];
/** Waits before each retry of a transient failure: at most ~1.6 s (plus jitter) in all, then git's message. */
const TRANSIENT_RETRY_DELAYS_MS = [25, 50, 100, 200, 400, 800] as const;

/** Whether git's stderr says another git process was busy (see `TRANSIENT_GIT_FAILURES`). */
export function isTransientGitFailure(stderr: string): boolean {
  return TRANSIENT_GIT_FAILURES.some((pattern) => pattern.test(stderr));
}

export { gitEnvironment } from "./runner.ts";

/**
 * How many `git status` run at once in `worktreeStatuses`: git mostly waits on the file system
 * there, so a few per core keep two cores busy.
 */
const STATUS_BATCH_PARALLEL = Math.min(8, Math.max(2, os.availableParallelism() * 4));

/** `git status` as `worktreeStatus` and `worktreeStatuses` run it. */
function statusArgs(options: { ignored?: boolean }): string[] {
  return [
    "status",
    "--porcelain=v1",
    "-z",
    "--untracked-files=normal",
    // `matching`: an ignored directory is one entry, its contents are not walked.
    ...(options.ignored === true ? ["--ignored=matching"] : []),
  ];
}

export class SimpleGitPort implements RecoveryGitPort {
  private readonly timeoutMs: number;
  private readonly addWorktreeTimeoutMs: number;
  private readonly env: NodeJS.ProcessEnv | undefined;

  constructor(options: SimpleGitPortOptions = {}) {
    this.timeoutMs = positiveMilliseconds(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
    this.addWorktreeTimeoutMs = positiveMilliseconds(
      options.addWorktreeTimeoutMs ?? Math.max(WAIT_DEFAULTS.gitWorktreeMs, this.timeoutMs),
      "addWorktreeTimeoutMs",
    );
    this.env = options.env;
  }

  static create(options: SimpleGitPortOptions = {}): GitPort {
    return new SimpleGitPort(options);
  }

  async findRepository(cwd: string): Promise<RepositoryInfo | undefined> {
    const start = await realDirectoryIfExists(cwd);
    if (start === undefined) return undefined;

    // One git call: it answers the options in order, and fails on --show-toplevel where there is
    // no work tree (inside a `.git` directory or a bare repository: no checkout to hand off from).
    const located = await this.run(start, [
      "rev-parse",
      "--is-inside-work-tree",
      "--git-dir",
      "--git-common-dir",
      "--show-toplevel",
    ]);
    if (located.exitCode !== 0) {
      if (/not a git repository|must be run in a work tree/i.test(located.stderr)) return undefined;
      throw gitFailure(["rev-parse"], located);
    }
    const lines = located.stdout.split("\n").filter((line) => line.length > 0);
    const [insideWorkTree, gitDirOutput, commonDirOutput, topLevelOutput] = lines;
    if (insideWorkTree !== "true") return undefined;
    if (lines.length !== 4 || !gitDirOutput || !commonDirOutput || !topLevelOutput) {
      throw new Error(`git rev-parse printed unexpected output in ${start}: ${JSON.stringify(located.stdout)}`);
    }
    // git prints these relative to the cwd it ran in when it can (e.g. `../.git` from a subdirectory).
    const gitDir = await realpath(path.resolve(start, gitDirOutput));
    const commonDir = await realpath(path.resolve(start, commonDirOutput));
    const currentCheckout = await realpath(path.resolve(start, topLevelOutput));
    const isLinkedWorktree = gitDir !== commonDir;
    return {
      // From the main checkout itself the top level is exact, even with `--separate-git-dir`.
      mainCheckout: isLinkedWorktree ? mainWorktreeOf(commonDir) : currentCheckout,
      commonDir,
      currentCheckout,
      isLinkedWorktree,
    };
  }

  async isValidBranchName(name: string): Promise<boolean> {
    if (!isPlainArgument(name) || name.startsWith("-")) return false;
    // `--branch` expands `@{-N}` and `@` means HEAD in revision syntax; neither names a new branch.
    if (name.includes("@{") || name === "HEAD" || name === "@") return false;
    // check-ref-format has no `--end-of-options`; the leading `-` was refused above.
    const checked = await this.run(os.tmpdir(), ["check-ref-format", "--branch", name]);
    return checked.exitCode === 0 && checked.stdout.trim() === name;
  }

  async branchExists(repo: string, name: string): Promise<boolean> {
    if (!isPlainArgument(name) || name.length === 0) return false;
    // The `refs/heads/` prefix keeps the argument from ever looking like an option.
    const result = await this.run(repo, ["show-ref", "--verify", "--quiet", `${BRANCH_REF_PREFIX}${name}`]);
    if (result.exitCode === 0) return true;
    if (result.exitCode === 1) return false;
    throw gitFailure(["show-ref"], result);
  }

  async listWorktrees(repo: string): Promise<ParsedWorktree[]> {
    // `-z` so that paths and lock reasons containing newlines cannot break the records.
    const result = await this.runRetrying(repo, ["worktree", "list", "--porcelain", "-z"]);
    if (result.exitCode !== 0) throw gitFailure(["worktree", "list"], result);
    return parseWorktreeList(result.stdout);
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

  async resolveCommit(repo: string, ref: string): Promise<string | undefined> {
    // No ref name can start with `-` (check-ref-format), so such input is refused, not resolved.
    if (!isPlainArgument(ref) || ref.length === 0 || ref.startsWith("-")) return undefined;
    const result = await this.run(repo, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`]);
    if (result.exitCode !== 0) return undefined;
    const sha = result.stdout.trim();
    return FULL_SHA.test(sha) ? sha : undefined;
  }

  async currentBranch(checkout: string): Promise<string | undefined> {
    // The full ref, not `--short`: `--short` prints `heads/x` when a tag `x` also exists.
    const result = await this.run(checkout, ["symbolic-ref", "--quiet", "HEAD"]);
    if (result.exitCode === 1) return undefined;
    if (result.exitCode !== 0) throw gitFailure(["symbolic-ref"], result);
    const ref = result.stdout.trim();
    return ref.startsWith(BRANCH_REF_PREFIX) ? ref.slice(BRANCH_REF_PREFIX.length) : undefined;
  }

  async addWorktree(
    repo: string,
    options: {
      path: string;
      branch: string;
      sha: string;
      existing?: boolean;
      onClaimed?: () => unknown;
    },
  ): Promise<void> {
    const { path: worktreePath, branch, sha } = options;
    const existing = options.existing === true;
    // Both asked at once; the name's verdict is said first.
    const [validName, taken] = await Promise.all([
      this.isValidBranchName(branch),
      existing ? false : this.branchExists(repo, branch).catch(asError),
    ]);
    if (!validName) throw new Error(`'${branch}' is not a valid branch name.`);
    if (!FULL_SHA.test(sha)) throw new Error(`'${sha}' is not a full commit SHA.`);
    if (!path.isAbsolute(worktreePath)) throw new Error(`The worktree path '${worktreePath}' is not absolute.`);
    if (taken instanceof Error) throw taken;
    if (existing) {
      // `--existing`: the branch is checked out as it is, and only while it is still at the commit the caller checked.
      const tip = await this.resolveCommit(repo, `${BRANCH_REF_PREFIX}${branch}`);
      if (tip === undefined) throw new Error(`There is no branch named '${branch}'.`);
      if (tip !== sha)
        throw new Error(`Branch '${branch}' moved to ${tip.slice(0, 12)} since it was checked at ${sha.slice(0, 12)}.`);
    } else if (taken) {
      throw new Error(`A branch named '${branch}' already exists.`);
    }
    if (await pathExists(worktreePath)) throw new Error(`'${worktreePath}' already exists.`);
    // The path is claimed with an exclusive mkdir: git accepts an existing empty directory, so two
    // handoffs whose branches share a slug (`a/b`, `a-b`) started at once would otherwise both
    // check out into one directory. The claim is given back (rmdir, only while empty) if git fails.
    if (!(await claimDirectory(worktreePath)).ok) throw new Error(`'${worktreePath}' already exists.`);
    let claimed: Promise<unknown> | undefined;
    try {
      claimed = options.onClaimed === undefined ? undefined : Promise.resolve(options.onClaimed());
    } catch {
      claimed = undefined; // The caller's own failure: git goes on as it would without it.
    }

    let failure: Error;
    for (let attempt = 0; ; attempt += 1) {
      // git 2.39 creates the branch before its other checks, so an attempt that failed transiently
      // may have made it, at `sha`; the retry then only checks it out.
      const branchMade =
        existing || (attempt > 0 && (await this.resolveCommit(repo, `${BRANCH_REF_PREFIX}${branch}`)) === sha);
      const args = branchMade
        ? ["worktree", "add", "--", worktreePath, branch]
        : ["worktree", "add", "-b", branch, "--", worktreePath, sha];
      let stderr = "";
      try {
        const result = await this.run(repo, args, this.addWorktreeTimeoutMs);
        if (result.exitCode === 0) return;
        failure = gitFailure(args, result);
        stderr = result.stderr;
      } catch (error) {
        failure = asError(error);
        break;
      }
      const delay = TRANSIENT_RETRY_DELAYS_MS[attempt];
      // Retried only while nothing but (maybe) the branch at `sha` exists: a checkout that began stays as it is.
      if (delay === undefined || !isTransientGitFailure(stderr) || !(await isEmptyDirectory(worktreePath))) break;
      const tip = await this.resolveCommit(repo, `${BRANCH_REF_PREFIX}${branch}`);
      if (tip !== undefined && tip !== sha) break;
      await sleep(jitter(delay));
    }
    // git creates the branch before the checkout, so a late failure (a path that appeared since the
    // checks above, a timeout) can leave things behind. Nothing is deleted automatically: say what
    // exists. Only the empty directory claimed above goes (rmdir cannot remove anything else),
    // once what started in it (a window) has it: a window opened after would be somewhere else.
    await claimed?.catch(() => undefined);
    await releaseClaim(worktreePath);
    const leftInPlace: string[] = [];
    if (!existing && (await this.branchExists(repo, branch).catch(() => false))) leftInPlace.push(`branch '${branch}'`);
    if (await pathExists(worktreePath).catch(() => false)) leftInPlace.push(`'${worktreePath}'`);
    if (leftInPlace.length === 0) throw failure;
    const message = `${stripPeriod(failure.message)}; now exists and left in place: ${leftInPlace.join(", ")}.`;
    throw new Error(message, { cause: failure });
  }

  async captureState(checkout: string, baseSha: string): Promise<GitState> {
    const capturedAt = new Date().toISOString();
    const [{ dirtyFiles, untrackedFiles }, head] = await Promise.all([
      this.worktreeStatus(checkout),
      this.resolveCommit(checkout, "HEAD"),
    ]);
    let aheadOfBase: number | undefined;
    if (head !== undefined && FULL_SHA.test(baseSha)) {
      // Counted against the `head` reported above, so the two fields describe the same commit.
      const counted = await this.run(checkout, ["rev-list", "--count", `${baseSha}..${head}`]);
      const count = Number.parseInt(counted.stdout.trim(), 10);
      if (counted.exitCode === 0 && Number.isSafeInteger(count) && count >= 0) aheadOfBase = count;
    }
    const state: GitState = { capturedAt, dirtyFiles, untrackedFiles };
    if (head !== undefined) state.head = head;
    if (aheadOfBase !== undefined) state.aheadOfBase = aheadOfBase;
    return state;
  }

  async worktreeStatus(checkout: string, options: { ignored?: boolean } = {}): Promise<WorktreeStatus> {
    const status = await this.run(checkout, statusArgs(options));
    if (status.exitCode !== 0) throw gitFailure(["status"], status);
    const parsed = parseStatus(status.stdout);
    return options.ignored === true ? parsed : { dirtyFiles: parsed.dirtyFiles, untrackedFiles: parsed.untrackedFiles };
  }

  async worktreeStatuses(checkouts: readonly string[]): Promise<(WorktreeStatus | undefined)[]> {
    const runs = await runGitInEach(checkouts, statusArgs({}), {
      timeoutMs: this.timeoutMs,
      env: this.env,
      parallel: STATUS_BATCH_PARALLEL,
    });
    return runs.map((run) => {
      if (run === undefined || run.exitCode !== 0) return undefined;
      const parsed = parseStatus(run.stdout.toString("utf8"));
      return { dirtyFiles: parsed.dirtyFiles, untrackedFiles: parsed.untrackedFiles };
    });
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

  /**
   * `run`, again after a short wait while git fails only because another git process is busy (see
   * `TRANSIENT_GIT_FAILURES`); for commands whose transient failure changed nothing.
   */
  private async runRetrying(cwd: string, args: readonly string[], timeoutMs = this.timeoutMs): Promise<GitOutcome> {
    for (let attempt = 0; ; attempt += 1) {
      const result = await this.run(cwd, args, timeoutMs);
      const delay = TRANSIENT_RETRY_DELAYS_MS[attempt];
      if (result.exitCode === 0 || delay === undefined || !isTransientGitFailure(result.stderr)) return result;
      await sleep(jitter(delay));
    }
  }

  /** Runs one git command in `cwd` (runner.ts); resolves with any exit code, rejects on a timeout or a refusal. */
  private async run(
    cwd: string,
    args: readonly string[],
    timeoutMs = this.timeoutMs,
    input?: string,
  ): Promise<GitOutcome> {
    const result = await runGit(cwd, args, {
      timeoutMs,
      env: this.env,
      ...(input === undefined ? {} : { input: Buffer.from(input, "utf8") }),
    });
    return { exitCode: result.exitCode, stdout: result.stdout.toString("utf8"), stderr: result.stderr };
  }
}

/**
 * Parses `git worktree list --porcelain`, with or without `-z`: records of `key value` lines
 * separated by an empty line. Unknown keys are ignored so newer git output still parses.
 */
export function parseWorktreeList(output: string): ParsedWorktree[] {
  const lineSeparator = output.includes("\0") ? "\0" : "\n";
  const worktrees: ParsedWorktree[] = [];
  let current: ParsedWorktree | undefined;
  for (const line of output.split(lineSeparator)) {
    if (line.trim() === "") {
      current = undefined;
      continue;
    }
    const space = line.indexOf(" ");
    const key = space === -1 ? line : line.slice(0, space);
    const value = space === -1 ? "" : line.slice(space + 1);
    if (key === "worktree") {
      current = { path: value, detached: false, prunable: false, bare: false, locked: false };
      worktrees.push(current);
      continue;
    }
    if (current === undefined) continue;
    switch (key) {
      case "HEAD":
        current.head = value;
        break;
      case "branch":
        current.branch = value.startsWith(BRANCH_REF_PREFIX) ? value.slice(BRANCH_REF_PREFIX.length) : value;
        break;
      case "detached":
        current.detached = true;
        break;
      case "bare":
        current.bare = true;
        break;
      case "locked":
        current.locked = true;
        break;
      case "prunable":
        current.prunable = true;
        break;
    }
  }
  return worktrees;
}

/** Parses `git status --porcelain=v1 -z`: `XY path` entries, a rename or copy followed by its source path. */
export function parseStatus(output: string): ParsedStatus {
  const dirtyFiles: string[] = [];
  const untrackedFiles: string[] = [];
  const ignoredFiles: string[] = [];
  const entries = output.split("\0");
  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index];
    if (entry === undefined || entry.length < 4) continue;
    const code = entry.slice(0, 2);
    const file = entry.slice(3);
    if (code === "??") untrackedFiles.push(file);
    else if (code === "!!") ignoredFiles.push(file);
    else {
      dirtyFiles.push(file);
      if (code.includes("R") || code.includes("C")) index += 1; // skip the source path
    }
  }
  return { dirtyFiles, untrackedFiles, ignoredFiles };
}

/** git's diagnostic as one line: its `fatal:`/`error:` lines without the prefix, else its first line. */
export function summarizeGitStderr(stderr: string): string | undefined {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  const diagnostics = lines.filter((line) => /^(?:fatal|error):/i.test(line));
  const chosen = diagnostics.length > 0 ? diagnostics : lines.slice(0, 1);
  if (chosen.length === 0) return undefined;
  return chosen.map((line) => line.replace(/^(?:fatal|error):\s*/i, "")).join("; ");
}

/**
 * The main worktree of a linked worktree's repository, as `git worktree list` names it: the parent of
 * a `.git` common dir, otherwise (bare repository, `--separate-git-dir`) the common dir itself.
 */
function mainWorktreeOf(commonDir: string): string {
  return path.basename(commonDir) === ".git" ? path.dirname(commonDir) : commonDir;
}

function gitFailure(args: readonly string[], outcome: GitOutcome): Error {
  const summary = summarizeGitStderr(outcome.stderr) ?? `exit code ${outcome.exitCode}`;
  return new Error(`${gitCommandName(args)} failed: ${summary}`);
}

/** `git worktree add` for messages: the subcommand and its first word when that is one too. */

/** A commit or ref given to a history query: never empty, never option-like, one line. */
function assertRevision(revision: string): void {
  if (!isPlainArgument(revision) || revision.length === 0 || revision.startsWith("-") || revision.startsWith("^")) {
    throw new Error(`${JSON.stringify(revision)} is not a commit or ref.`);
  }
}

/** Text git can receive as one argument: Node refuses NUL, and newlines make no sense in names or refs. */
function isPlainArgument(value: string): boolean {
  return typeof value === "string" && !/[\0\r\n]/.test(value);
}

/** Between half and one and a half times `ms`, so processes that collided do not retry in step. */
function jitter(ms: number): number {
  return Math.round(ms * (0.5 + Math.random()));
}

function positiveMilliseconds(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number of milliseconds.`);
  return value;
}

async function realDirectoryIfExists(target: string): Promise<string | undefined> {
  try {
    const resolved = await realpath(target);
    return (await stat(resolved)).isDirectory() ? resolved : undefined;
  } catch {
    return undefined;
  }
}

async function pathExists(target: string): Promise<boolean> {
  return unlessMissing(() => lstat(target));
}
