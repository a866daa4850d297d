/**
 * What the handoff needs from git. Only `src/git/` runs git; everything else uses this interface.
 *
 * Invariants:
 * - Read operations never change the repository.
 * - `addWorktree` is the only write of `GitPort`, and it never reuses an existing path, nor an
 *   existing branch unless asked (`existing`, and only while the branch is at the given commit);
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
  /** `git worktree lock`ed: git refuses to remove or prune it. */
  locked?: boolean;
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
  /**
   * `git worktree add -b <branch> <path> <sha>`, or with `existing` `git worktree add <path> <branch>`
   * (the branch must be at `sha`); throws with git's message on failure. `onClaimed` is called once
   * the path is claimed (made, empty) and before git checks out into it: what needs only the
   * directory can start then. What it returns (a promise) is awaited before a failed checkout gives the claim
   * back, so what started there found the directory.
   */
  addWorktree(
    repo: string,
    options: {
      path: string;
      branch: string;
      sha: string;
      existing?: boolean;
      onClaimed?: () => unknown;
    },
  ): Promise<void>;
  /** Dirty/untracked files and commits ahead of `baseSha`, for the record. */
  captureState(checkout: string, baseSha: string): Promise<GitState>;
}

/**
 * A branch against a target commit. `ahead`, and `commit` (the branch's commit they were counted
 * for), are left out where git could not count them in the same call.
 */
export interface AheadBehind {
  ahead?: number;
  behind: number;
  commit?: string;
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
  /** Paths git ignores, when asked for (`ignored`); an ignored directory is one entry ending in `/`. */
  ignoredFiles?: string[];
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
  /** Every local branch and the commit it points at (one `git for-each-ref`), by short name. */
  branchTips(repo: string): Promise<Map<string, string>>;
  /**
   * Whether the repository has any remote (`git remote`): with none, no commit can be pushed, so
   * none is counted unpushed. Optional: a port without it is taken to have one.
   */
  hasRemote?(repo: string): Promise<boolean>;
  /**
   * Uncommitted changes of a checkout (`git status`), with `ignored` also the files git ignores
   * (`ignoredFiles`); throws when it is not a checkout.
   */
  worktreeStatus(checkout: string, options?: { ignored?: boolean }): Promise<WorktreeStatus>;
  /**
   * `worktreeStatus` of many checkouts at once (without `ignored`), in order: undefined for one
   * that did not answer plainly (git failed there, the batch's deadline), which the caller asks
   * again alone with `worktreeStatus` to have git's own diagnostic. Optional: a port without it is
   * asked one checkout at a time.
   */
  worktreeStatuses?(checkouts: readonly string[]): Promise<(WorktreeStatus | undefined)[]>;
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
  /**
   * How many of the commits `tip` has and `target` lacks bring a change `target` does not have:
   * each is matched by its patch-id against `target`'s own commits since they parted (`git
   * rev-list --cherry-mark`); a merge commit never matches. 0: every change is in `target` (a rebase
   * landed it).
   */
  patchesMissing(repo: string, target: string, tip: string): Promise<number>;
  /** Whether merging `tip` into `target` changes nothing (`git merge-tree`: a clean merge whose tree is `target`'s): a squash landed it. */
  mergeChangesNothing(repo: string, target: string, tip: string): Promise<boolean>;
  /**
   * For each branch, how many commits `target` (a commit) has that it lacks (`behind`), and how
   * many it has that `target` lacks (`ahead`): one `git for-each-ref --format=%(ahead-behind:...)`
   * (git 2.41+), else one count per branch, `behind` only.
   */
  aheadBehindCounts(repo: string, target: string, branches: readonly string[]): Promise<Map<string, AheadBehind>>;
  /** Whether commit `ancestor` is reachable from commit `descendant` (`git merge-base --is-ancestor`). */
  isAncestor(repo: string, ancestor: string, descendant: string): Promise<boolean>;
  /**
   * Git's own entry for the linked worktree at `worktreePath` (`<common dir>/worktrees/<name>`,
   * found by the path it records), whether or not the directory still exists; undefined: none.
   */
  worktreeEntry(commonDir: string, worktreePath: string): Promise<WorktreeAdminEntry | undefined>;
  /** Paths staged in an entry's own index (against its HEAD): what dropping the entry would lose. */
  stagedInEntry(entry: WorktreeAdminEntry): Promise<string[]>;
  /**
   * A checkout beside one of `near` (one level: the directories themselves are looked into) whose
   * `.git` names `entry`: a worktree moved by hand, still using the entry; undefined: none found.
   */
  movedCheckoutOf(entry: WorktreeAdminEntry, near: readonly string[]): Promise<string | undefined>;
  /**
   * Commits reachable only from the history of the entry's own HEAD (its reflog: a detached
   * experiment, a branch reset away), by no ref: they go with the entry. `tips`: the ones no other
   * of them descends from (a ref on each keeps them all).
   */
  reflogOnlyCommits(repo: string, entry: WorktreeAdminEntry): Promise<{ commits: CommitSummary[]; tips: string[] }>;
  /** Creates each ref at its commit (`refs/pi-handoff/...`); one already there at that commit is fine. */
  keepCommits(repo: string, refs: readonly { ref: string; sha: string }[]): Promise<void>;
  /** `git worktree remove [--force] <path>` (also for a registered path whose directory is gone). */
  removeWorktree(repo: string, worktreePath: string, options: { force: boolean }): Promise<void>;
  /**
   * Deletes `refs/heads/<branch>` only if it still points at `expectedTip` and is merged into
   * `mergedInto` by the rule `by` (default ancestry), checked again right before; throws (deleting
   * nothing) otherwise.
   */
  deleteBranch(
    repo: string,
    branch: string,
    options: { expectedTip: string; mergedInto: string; by?: MergedBy },
  ): Promise<void>;
}

/**
 * Why a branch counts as merged into a target, most direct first: its tip is an ancestor
 * (`ancestry`); this package landed exactly that tip and the target still holds the commit it made
 * (`landing`, `result`); every commit's patch is in the target (`patch`: rebased, cherry-picked);
 * merging it would change nothing (`tree`: squashed).
 */
export type MergedBy =
  | { rule: "ancestry" }
  | { rule: "landing"; result: string }
  | { rule: "patch" }
  | { rule: "tree" };

/** Git's administrative directory of one linked worktree (`<common dir>/worktrees/<name>`). */
export interface WorktreeAdminEntry {
  name: string;
  dir: string;
}

/** One uncommitted change of a checkout as the user would see it (`git diff HEAD --name-status`). */
export interface CarriedChange {
  /** git's status letter: M, A, D, R (rename), T (type change), C (copy). */
  status: string;
  path: string;
  /** The source path of a rename or copy. */
  from?: string;
}

/**
 * A checkout's uncommitted changes, read without changing anything in it: the staged changes
 * (index against HEAD) and the unstaged ones (work tree against index) as binary-safe patches, and
 * with `all` the untracked files git does not ignore.
 */
export interface ChangesSnapshot {
  checkout: string;
  mode: "tracked" | "all";
  /** `git diff --cached --binary`: applied to the new worktree's index and files. */
  staged: Uint8Array;
  /** `git diff --binary`: applied to the new worktree's files only, so they stay unstaged. */
  unstaged: Uint8Array;
  /** What the two patches change, for the user and the handoff message. */
  changes: CarriedChange[];
  /** Untracked, not ignored files (paths relative to the checkout); empty unless `mode` is `all`. */
  untracked: string[];
}

/** The remote branch a base follows, when it follows one. */
export interface BaseUpstream {
  /** The base's own full ref (`refs/heads/main`, or `refs/remotes/origin/main` for a remote base). */
  ref: string;
  /** The remote-tracking ref it is compared with (`refs/remotes/origin/main`). */
  upstream: string;
  /** The remote to fetch from (`origin`); `.` when the upstream is a local branch. */
  remote: string;
  /** The branch on the remote (`refs/heads/main`). */
  remoteRef: string;
}

/**
 * What worktree setup needs from git beyond `GitPort`: carrying changes, the tracked-file list that
 * guards copies, base freshness, and refs for completion. Separate from `GitPort` so the handoff's
 * fakes need not implement it. Invariants: every call has a timeout; only `applyChanges` (in the
 * new worktree) and `fetchUpstream` (one remote-tracking ref, on request) write anything.
 */
export interface CheckoutGitPort {
  /** Reads the changes to carry; throws with one sentence (unresolved conflicts, too large). */
  snapshotChanges(checkout: string, mode: "tracked" | "all"): Promise<ChangesSnapshot>;
  /** Applies a snapshot's patches in `worktree` (staged to index and files, unstaged to files). */
  applyChanges(worktree: string, snapshot: ChangesSnapshot): Promise<void>;
  /** How many tracked files have uncommitted changes, and how many untracked (not ignored) entries there are. */
  uncommittedCounts(checkout: string): Promise<{ tracked: number; untracked: number }>;
  /** Every path git tracks in `checkout` (relative, `/`-separated). */
  trackedFiles(checkout: string): Promise<string[]>;
  /** The remote branch `ref` follows (a local branch's upstream, or a remote-tracking ref's own). */
  upstreamOf(checkout: string, ref: string): Promise<BaseUpstream | undefined>;
  /**
   * `<remote>/<branch>` (or `refs/remotes/<remote>/<branch>`) named as a base but never fetched:
   * the remote branch it would be, when `<remote>` is a configured remote and `<branch>` a valid
   * branch name; undefined otherwise. Reads only.
   */
  unfetchedRemoteBranch(checkout: string, ref: string): Promise<BaseUpstream | undefined>;
  /** Fetches that one branch into its remote-tracking ref; throws with one sentence. */
  fetchUpstream(checkout: string, upstream: BaseUpstream): Promise<void>;
  /** How many commits `to` has that `from` lacks (`git rev-list --count from..to`). */
  countCommits(checkout: string, from: string, to: string): Promise<number>;
  /** Short names of local branches, remote-tracking branches and tags, for completion. */
  listRefs(checkout: string): Promise<{ branches: string[]; remotes: string[]; tags: string[] }>;
}
