/**
 * HandoffGitCli: the `GitPort` the handoff needs (the repository, branch names, the worktree's
 * creation, the state it records, a checkout's status), and the one way a port method runs git
 * (`run`, `runRetrying`) that the recovery port (git.ts `GitCli`) builds on. Like every git
 * call of the package, its calls run through `runner.ts` (git spawned with a deadline).
 *
 * Invariants:
 * - Every git call has a deadline (not extended by output) and its own process, so one failed call
 *   never cancels another.
 * - User input never reaches git where it could be read as an option: names and refs are validated
 *   first and passed after `--` or `--end-of-options` where the command accepts it.
 * - Read operations never write: `GIT_OPTIONAL_LOCKS=0` stops `git status` refreshing the index.
 * - `addWorktree` refuses an existing branch or path before git runs, because git 2.39 creates the
 *   branch before it checks the path.
 * - git runs with `LC_ALL=C` (its messages are classified and shown verbatim) and without inherited
 *   `GIT_*` variables other than a small allowlist (runner.ts `gitEnvironment`).
 * - A non-zero exit is data, not an exception: each method decides what the exit code means.
 * - A failure that only means "another git process is busy" (a lock file it holds, a worktree it is
 *   still creating) is retried a few times, briefly (`TRANSIENT_RETRY_DELAYS_MS`), by the calls
 *   concurrent handoffs make (`listWorktrees`, `addWorktree`) and only while the failed attempt left
 *   nothing but what the retry completes.
 */
import { stripPeriod } from "../text.ts";
import { setTimeout as sleep } from "node:timers/promises";
import { lstat, realpath, stat } from "node:fs/promises";
import { claimDirectory, releaseClaim } from "../locks/claim.ts";
import os from "node:os";
import path from "node:path";
import { gitCommandName, runGit, runGitInEach } from "./runner.ts";
import type { GitState } from "../manifest/schema.ts";
import type { GitPort, RepositoryInfo, WorktreeStatus } from "./types.ts";
import { asError } from "../errors.ts";
import { isEmptyDirectory, unlessMissing } from "../fs/probe.ts";
import { WAIT_DEFAULTS } from "../config/waits.ts";
import { BRANCH_REF_PREFIX, type ParsedWorktree, parseStatus, parseWorktreeList, summarizeGitStderr } from "./parse.ts";

export interface GitPortOptions {
  /** Deadline for each read call, in milliseconds. Default 30 s. */
  timeoutMs?: number;
  /** Deadline for `git worktree add`, which checks out a whole tree (default: `PI_HANDOFF_GIT_WORKTREE_TIMEOUT_MS`'s). */
  addWorktreeTimeoutMs?: number;
  /** Environment git runs with (default: `process.env` at call time); see `gitEnvironment`. */
  env?: NodeJS.ProcessEnv;
}

interface GitOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
}

const DEFAULT_TIMEOUT_MS = 30_000;
export const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

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

export class HandoffGitCli implements GitPort {
  protected readonly timeoutMs: number;
  protected readonly addWorktreeTimeoutMs: number;
  protected readonly env: NodeJS.ProcessEnv | undefined;

  constructor(options: GitPortOptions = {}) {
    this.timeoutMs = positiveMilliseconds(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
    this.addWorktreeTimeoutMs = positiveMilliseconds(
      options.addWorktreeTimeoutMs ?? Math.max(WAIT_DEFAULTS.gitWorktreeMs, this.timeoutMs),
      "addWorktreeTimeoutMs",
    );
    this.env = options.env;
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

  /**
   * `run`, again after a short wait while git fails only because another git process is busy (see
   * `TRANSIENT_GIT_FAILURES`); for commands whose transient failure changed nothing.
   */
  protected async runRetrying(cwd: string, args: readonly string[], timeoutMs = this.timeoutMs): Promise<GitOutcome> {
    for (let attempt = 0; ; attempt += 1) {
      const result = await this.run(cwd, args, timeoutMs);
      const delay = TRANSIENT_RETRY_DELAYS_MS[attempt];
      if (result.exitCode === 0 || delay === undefined || !isTransientGitFailure(result.stderr)) return result;
      await sleep(jitter(delay));
    }
  }

  /** Runs one git command in `cwd` (runner.ts); resolves with any exit code, rejects on a timeout or a refusal. */
  protected async run(
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
 * The main worktree of a linked worktree's repository, as `git worktree list` names it: the parent of
 * a `.git` common dir, otherwise (bare repository, `--separate-git-dir`) the common dir itself.
 */
function mainWorktreeOf(commonDir: string): string {
  return path.basename(commonDir) === ".git" ? path.dirname(commonDir) : commonDir;
}

export function gitFailure(args: readonly string[], outcome: GitOutcome): Error {
  const summary = summarizeGitStderr(outcome.stderr) ?? `exit code ${outcome.exitCode}`;
  return new Error(`${gitCommandName(args)} failed: ${summary}`);
}

/** Text git can receive as one argument: Node refuses NUL, and newlines make no sense in names or refs. */
export function isPlainArgument(value: string): boolean {
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
