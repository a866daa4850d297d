/**
 * What the handoff needs from git. Only `src/git/` runs git; everything else uses this interface.
 *
 * Invariants:
 * - Read operations never change the repository.
 * - `addWorktree` is the only write, and it never reuses an existing branch or path.
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
