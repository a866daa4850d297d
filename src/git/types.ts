/**
 * What the handoff needs from git. Only `src/git/` runs git; everything else uses this interface.
 *
 * Invariants:
 * - Read operations never change the repository.
 * - `addWorktree` is the only write of `GitPort`, and it never reuses an existing branch or path;
 *   recovery's removals live in `RecoveryGitPort` below.
 * - Every git call carries a timeout.
 */
import type { GitState } from "../manifest/schema.ts";

export interface RepositoryInfo {
  /** The main (non-linked) checkout: the parent of the common dir for non-bare repositories. */
  mainCheckout: string;
  /** Absolute, canonical `git rev-parse --git-common-dir`. */
  commonDir: string;
  /** The top level of the checkout `cwd` is in (the main checkout or a linked worktree). */
  currentCheckout: string;
  isLinkedWorktree: boolean;
}

export interface WorktreeEntry {
  path: string;
  /** Short branch name (without refs/heads/), absent when detached. */
  branch?: string;
  head?: string;
  detached: boolean;
  prunable: boolean;
}

export interface GitPort {
  /** The repository containing `cwd`, or undefined when `cwd` is not inside a git work tree. */
  findRepository(cwd: string): Promise<RepositoryInfo | undefined>;
  /** Whether `git check-ref-format --branch <name>` accepts the name (and it does not start with `-`). */
  isValidBranchName(name: string): Promise<boolean>;
  /** Whether `refs/heads/<name>` exists. */
  branchExists(repo: string, name: string): Promise<boolean>;
  /** The worktrees of the repository (`git worktree list --porcelain`). */
  listWorktrees(repo: string): Promise<WorktreeEntry[]>;
  /** The full commit SHA `ref` resolves to (`<ref>^{commit}`), or undefined. Never treats `ref` as an option. */
  resolveCommit(repo: string, ref: string): Promise<string | undefined>;
  /** The current branch of a checkout (short name), or undefined when detached. */
  currentBranch(checkout: string): Promise<string | undefined>;
  /** `git worktree add -b <branch> <path> <sha>`; throws with git's message on failure. */
  addWorktree(repo: string, options: { path: string; branch: string; sha: string }): Promise<void>;
  /** Dirty/untracked files and commits ahead of `baseSha`, for the record. */
  captureState(checkout: string, baseSha: string): Promise<GitState>;
}

/** One commit, as recovery lists it to a user (what a removal would leave behind or lose). */
export interface CommitSummary {
  sha: string;
  subject: string;
}

/** A checkout's uncommitted work. */
export interface WorktreeStatus {
  /** Tracked paths that are modified, staged, deleted, renamed or conflicted. */
  dirtyFiles: string[];
  /** Untracked paths; a wholly untracked directory is one entry ending in `/`. */
  untrackedFiles: string[];
}

/**
 * What recovery (`pi-handoff`, `/handoffs`) needs on top of the handoff's operations. A separate
 * interface so that the handoff's own fakes need not implement writes the handoff never makes.
 *
 * Invariants (besides those of `GitPort`):
 * - `removeWorktree` and `deleteBranch` are the only deletions, each of exactly one named thing.
 * - `deleteBranch` deletes only a branch whose tip is the one the caller checked and is contained
 *   in `mergedInto`; it re-checks both itself, so no commit can be lost through it.
 */
export interface RecoveryGitPort extends GitPort {
  /** Uncommitted changes of a checkout (`git status`); throws when it is not a checkout. */
  worktreeStatus(checkout: string): Promise<WorktreeStatus>;
  /**
   * Commits reachable from `tip` but from none of `exclude` (commits or refs) and, with
   * `excludeRemotes`, from no remote-tracking branch: `total` counts them all, `commits` lists the
   * newest `limit` (default 500).
   */
  commitsNotIn(
    repo: string,
    tip: string,
    exclude: readonly string[],
    options?: { excludeRemotes?: boolean; limit?: number },
  ): Promise<{ total: number; commits: CommitSummary[] }>;
  /** Whether commit `ancestor` is reachable from commit `descendant` (`git merge-base --is-ancestor`). */
  isAncestor(repo: string, ancestor: string, descendant: string): Promise<boolean>;
  /** `git worktree remove [--force] <path>` (also for a registered path whose directory is gone). */
  removeWorktree(repo: string, worktreePath: string, options: { force: boolean }): Promise<void>;
  /** `git worktree prune`; returns git's description of each entry pruned (or, with `dryRun`, to prune). */
  pruneWorktrees(repo: string, options: { dryRun: boolean }): Promise<string[]>;
  /**
   * Deletes `refs/heads/<branch>` only if it still points at `expectedTip` and that commit is
   * contained in `mergedInto`; throws (deleting nothing) otherwise.
   */
  deleteBranch(repo: string, branch: string, options: { expectedTip: string; mergedInto: string }): Promise<void>;
}
