/**
 * LandGit: the git operations of `pi-handoff land`, bringing a handoff branch's commits into
 * another branch. Runs git only through `runGit` (runner.ts: a deadline per call,
 * sanitised env; `commit-tree` alone is handed the author of the commit it re-makes).
 *
 * Invariants:
 * - Everything but `fastForwardCheckout` and `updateBranch` writes no ref, no index and no file:
 *   `merge-tree --write-tree` and `commit-tree` only add objects to the object store, so a plan
 *   (and a refused or dry-run landing) leaves refs, index and work trees byte-identical.
 * - Every strategy yields a commit that descends from the target's tip, so the one write is a
 *   fast-forward of the target: in a checkout that has it checked out, `git merge --ff-only` (git
 *   itself refuses to overwrite local changes); elsewhere `update-ref <new> <old>` (atomic, and
 *   refused when the branch moved). The target branch is therefore at the old or the new commit,
 *   never in between.
 * - The fast-forward of a checkout never costs the person's work there: git is told not to
 *   overwrite ignored files (`--no-overwrite-ignore`) and not to stash and re-apply local changes
 *   (`--no-autostash`, which would unstage what was staged), and when git is stopped half-way (a
 *   timeout while a slow filter writes files) the paths it had rewritten are put back from a
 *   backup taken just before (checkout-backup.ts).
 * - Commits are made as the person's git would make them: signed when `commit.gpgSign` says so
 *   (`commit-tree` alone ignores it); the hooks `git merge`, `git commit` or `git rebase` would run
 *   are found (`hooksFor`) so the caller can refuse to bypass them.
 * - User input never reads as an option: refs are validated (`assertRevision`) or are full SHAs.
 */
import { constants } from "node:fs";
import { access, readFile } from "node:fs/promises";
import path from "node:path";
import { errorCode } from "../fs/probe.ts";
import { CheckoutBackup } from "./checkout-backup.ts";
import { counted, stripPeriod } from "../text.ts";
import { mergeTree, mergeTrees, type GitRunner, type MergeTreeResult } from "./merge-tree.ts";
import { summarizeGitStderr } from "./parse.ts";
import { gitCommandName, runGit } from "./runner.ts";

const DEFAULT_TIMEOUT_MS = 60_000;
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const RECORD = "\u001e";
const FIELD = "\u0000";

export interface LandGitOptions {
  env?: NodeJS.ProcessEnv;
  /** Deadline per git call (a merge in a large checkout may take a while). Default 60 s. */
  timeoutMs?: number;
}

export type { MergeTreeResult } from "./merge-tree.ts";

/** A commit with what rewriting it (rebase) keeps: author, date and message. */
export interface CommitDetail {
  sha: string;
  parents: string[];
  subject: string;
  authorName: string;
  authorEmail: string;
  /** `--date=raw`: seconds and zone, as GIT_AUTHOR_DATE takes it. */
  authorDate: string;
  message: string;
}

export interface CommitTreeInput {
  tree: string;
  parents: readonly string[];
  message: string;
  author?: Pick<CommitDetail, "authorName" | "authorEmail" | "authorDate">;
  /** Sign it (`-S`), as `git commit` does when `commit.gpgSign` is set (see `signsCommits`). */
  sign?: boolean;
}

/** Where a branch is in the middle of a git operation that holds it (git itself refuses to move it then). */
export interface BranchInUse {
  operation: "rebase" | "bisect";
  /** The checkout the operation runs in. */
  checkout: string;
}

/** The repository's hooks a git command would run, that exist and can run. */
export interface HooksFound {
  dir: string;
  names: string[];
}

/** A checkout fast-forward that failed; `checkout` says what became of its files. */
export class CheckoutMoveError extends Error {
  override readonly name = "CheckoutMoveError";
  readonly checkout: string;
  constructor(message: string, checkout: string, options?: { cause?: unknown }) {
    super(message, options);
    this.checkout = checkout;
  }
}

export class LandGit {
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly timeoutMs: number;

  constructor(options: LandGitOptions = {}) {
    this.env = options.env;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** A three-way merge of two commits computed in the object store: the tree, or the conflicting paths. */
  mergeTree(repo: string, ours: string, theirs: string): Promise<MergeTreeResult> {
    return mergeTree(this.runner(repo), ours, theirs);
  }

  /** Many merges in one git process (merge-tree.ts), in the order given. */
  mergeTrees(repo: string, pairs: readonly { ours: string; theirs: string }[]): Promise<MergeTreeResult[]> {
    return mergeTrees(this.runner(repo), pairs);
  }

  /** The commits reachable from `to` and not from `from`, oldest first. */
  async commitsBetween(repo: string, from: string, to: string): Promise<CommitDetail[]> {
    assertSha(from);
    assertSha(to);
    const format = ["%H", "%P", "%s", "%an", "%ae", "%ad", "%B"].join("%x00") + "%x1e";
    const result = await this.run(repo, [
      "log",
      "--reverse",
      "--topo-order",
      "--date=raw",
      `--format=${format}`,
      `${from}..${to}`,
      "--",
    ]);
    if (result.exitCode !== 0) throw gitFailure(["log"], result);
    return result.stdout
      .split(RECORD)
      .map((record) => record.replace(/^\n/, ""))
      .filter((record) => record.length > 0)
      .map((record) => {
        const [sha = "", parents = "", subject = "", authorName = "", authorEmail = "", authorDate = "", message = ""] =
          record.split(FIELD);
        return {
          sha,
          parents: parents.split(" ").filter((p) => p.length > 0),
          subject,
          authorName,
          authorEmail,
          authorDate,
          message,
        };
      });
  }

  /** A new commit object (no ref changes); the author is kept when given, the committer is the user. */
  async commitTree(repo: string, input: CommitTreeInput): Promise<string> {
    assertSha(input.tree);
    for (const parent of input.parents) assertSha(parent);
    // The message goes through stdin: it may hold anything, and `-m` would reformat paragraphs.
    const message = input.message.endsWith("\n") ? input.message : `${input.message}\n`;
    const args = [
      "commit-tree",
      ...(input.sign === true ? ["-S"] : []),
      input.tree,
      ...input.parents.flatMap((parent) => ["-p", parent]),
      "-F",
      "-",
    ];
    const author = input.author;
    const variables =
      author === undefined
        ? undefined
        : {
            GIT_AUTHOR_NAME: author.authorName,
            GIT_AUTHOR_EMAIL: author.authorEmail,
            GIT_AUTHOR_DATE: author.authorDate,
          };
    const result = await this.run(repo, args, variables, Buffer.from(message, "utf8"));
    const sha = result.stdout.trim();
    if (result.exitCode !== 0 || !FULL_SHA.test(sha)) {
      const failure = gitFailure(["commit-tree"], result);
      throw input.sign === true
        ? new Error(`the commit could not be signed (commit.gpgSign is set): ${failure.message}`, { cause: failure })
        : failure;
    }
    return sha;
  }

  /**
   * Why git could not make a commit in `repo` for want of an identity (`git var GIT_COMMITTER_IDENT`
   * fails: no user.name or user.email, none to guess), in git's own words; undefined when it can.
   */
  async missingIdentity(repo: string): Promise<string | undefined> {
    const result = await this.run(repo, ["var", "GIT_COMMITTER_IDENT"]);
    if (result.exitCode === 0) return undefined;
    const said = result.stderr
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line.length > 0 && !line.startsWith("***") && !line.startsWith("git config"));
    return stripPeriod((said.at(-1) ?? `git var exited with ${result.exitCode}`).replace(/^fatal: /, ""));
  }

  /** Whether the person's git signs the commits it makes here (`commit.gpgSign`). */
  async signsCommits(repo: string): Promise<boolean> {
    const result = await this.run(repo, ["config", "--bool", "--get", "commit.gpgSign"]);
    return result.exitCode === 0 && result.stdout.trim() === "true";
  }

  /** Which of the hooks `names` exist (and can run) where git runs them for `checkout` (`core.hooksPath` honoured). */
  async hooksFor(checkout: string, names: readonly string[]): Promise<HooksFound> {
    const result = await this.run(checkout, ["rev-parse", "--git-path", "hooks"]);
    if (result.exitCode !== 0) throw gitFailure(["rev-parse"], result);
    const dir = path.resolve(checkout, result.stdout.trim());
    const found: string[] = [];
    for (const name of names) {
      const runs = await access(path.join(dir, name), constants.X_OK).then(
        () => true,
        () => false,
      );
      if (runs) found.push(name);
    }
    return { dir, names: found };
  }

  /**
   * Whether `branch` is being rebased or bisected in one of the repository's checkouts (its HEAD is
   * detached then, so it does not look checked out): the checks git's own `git branch -f` makes.
   */
  async branchInUse(repo: string, branch: string): Promise<BranchInUse | undefined> {
    const common = await this.run(repo, ["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    if (common.exitCode !== 0) throw gitFailure(["rev-parse"], common);
    const commonDir = common.stdout.trim();
    const listed = await this.run(repo, ["worktree", "list", "--porcelain", "-z"]);
    if (listed.exitCode !== 0) throw gitFailure(["worktree", "list"], listed);
    const checkouts = listed.stdout
      .split("\0")
      .filter((line) => line.startsWith("worktree "))
      .map((line) => line.slice("worktree ".length));
    const ref = `refs/heads/${branch}`;
    for (const checkout of checkouts) {
      // Its git dir from its `.git` (a directory, or a file naming it) without a git process per
      // checkout: the merge queue plans a landing per child, each over every sibling's checkout.
      const gitDir =
        (await gitDirOf(checkout)) ??
        (await this.run(checkout, ["rev-parse", "--absolute-git-dir"]).then(
          (run) => (run.exitCode === 0 ? run.stdout.trim() : undefined),
          () => undefined,
        ));
      const dir = gitDir ?? (checkout === repo ? commonDir : undefined);
      if (dir === undefined) continue;
      const read = (file: string): Promise<string | undefined> =>
        readFile(path.join(dir, file), "utf8").then(
          (text) => text.trim(),
          () => undefined,
        );
      for (const file of ["rebase-merge/head-name", "rebase-apply/head-name"]) {
        if ((await read(file)) === ref) return { operation: "rebase", checkout };
      }
      const bisected = await read("BISECT_START");
      if (bisected !== undefined && (bisected === branch || bisected === ref)) return { operation: "bisect", checkout };
    }
    return undefined;
  }

  /** Paths whose content differs between two commits (what a fast-forward from one to the other touches). */
  async changedPaths(repo: string, from: string, to: string): Promise<string[]> {
    assertSha(from);
    assertSha(to);
    const result = await this.run(repo, ["diff", "--name-only", "--no-renames", "--no-ext-diff", "-z", from, to, "--"]);
    if (result.exitCode !== 0) throw gitFailure(["diff"], result);
    return result.stdout.split("\0").filter((field) => field.length > 0);
  }

  /** The commit HEAD of a checkout points at, or undefined (unborn). */
  async headOf(checkout: string): Promise<string | undefined> {
    const result = await this.run(checkout, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]);
    const sha = result.stdout.trim();
    return result.exitCode === 0 && FULL_SHA.test(sha) ? sha : undefined;
  }

  /**
   * Fast-forwards the branch checked out in `checkout` from `from` to `to`, updating its files
   * (`git merge --ff-only`, which refuses to overwrite local changes, here ignored files too, and
   * neither stashes nor unstages anything). `touched` are the paths the move rewrites: what the
   * checkout holds there is backed up first, and put back if git fails or is stopped before HEAD
   * moved. Throws (a `CheckoutMoveError` saying what became of the files) when it did not move.
   */
  async fastForwardCheckout(
    checkout: string,
    branch: string,
    move: { from: string; to: string; touched: readonly string[]; tag: string },
  ): Promise<void> {
    assertSha(move.from);
    assertSha(move.to);
    const head = await this.run(checkout, ["symbolic-ref", "--quiet", "HEAD"]);
    if (head.exitCode !== 0 || head.stdout.trim() !== `refs/heads/${branch}`) {
      throw new Error(`${checkout} no longer has ${branch} checked out.`);
    }
    const at = await this.headOf(checkout);
    if (at !== move.from) throw new Error(`${branch} moved (it is at ${at ?? "no commit"}, not ${move.from}).`);
    const gitDir = await this.run(checkout, ["rev-parse", "--absolute-git-dir"]);
    if (gitDir.exitCode !== 0) throw gitFailure(["rev-parse"], gitDir);
    const backup = await CheckoutBackup.take(checkout, gitDir.stdout.trim(), move.tag, move.touched);
    let failure: Error | undefined;
    try {
      const merged = await this.run(checkout, [
        "merge",
        "--ff-only",
        "--no-overwrite-ignore",
        "--no-autostash",
        "--quiet",
        "--no-stat",
        "--no-edit",
        move.to,
      ]);
      if (merged.exitCode !== 0) failure = gitFailure(["merge"], merged);
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
    }
    try {
      if (failure === undefined) return;
      // git may have finished its work before it was stopped: then it landed, and nothing is put back.
      if ((await this.headOf(checkout).catch(() => undefined)) === move.to) return;
      const restored = await backup.restore();
      throw new CheckoutMoveError(failure.message, describeRestore(checkout, restored), { cause: failure });
    } finally {
      await backup.discard().catch(() => undefined);
    }
  }

  /**
   * Moves the branch checked out in `checkout` from `from` to `to` (commits that do not descend
   * from one another: a rebase), with its index and files: first the branch, atomically and only
   * if it is still at `from` (`update-ref <to> <from>`), then the checkout from `from`'s tree to
   * `to`'s (`git read-tree -m -u`, which refuses to overwrite local changes). When the checkout
   * cannot follow, the branch is moved back and the files put back from a backup, and this throws.
   * Killed between the two, the branch is at `to` and the checkout still at `from`'s tree:
   * `followBranch` finishes it.
   */
  async moveCheckedOutBranch(
    checkout: string,
    branch: string,
    move: { from: string; to: string; touched: readonly string[]; tag: string; reason: string },
  ): Promise<void> {
    assertSha(move.from);
    assertSha(move.to);
    const head = await this.run(checkout, ["symbolic-ref", "--quiet", "HEAD"]);
    if (head.exitCode !== 0 || head.stdout.trim() !== `refs/heads/${branch}`)
      throw new Error(`${checkout} no longer has ${branch} checked out.`);
    const gitDir = await this.run(checkout, ["rev-parse", "--absolute-git-dir"]);
    if (gitDir.exitCode !== 0) throw gitFailure(["rev-parse"], gitDir);
    const backup = await CheckoutBackup.take(checkout, gitDir.stdout.trim(), move.tag, move.touched);
    try {
      await this.updateBranch(checkout, branch, { from: move.from, to: move.to }, move.reason);
      const followed = await this.followBranch(checkout, { from: move.from, to: move.to });
      if (followed === undefined) return;
      // The checkout could not follow: the branch goes back, the files as they were.
      const back = await this.run(checkout, [
        "update-ref",
        "-m",
        `${move.reason} (undone)`,
        `refs/heads/${branch}`,
        move.from,
        move.to,
      ]);
      const restored = await backup.restore();
      const where =
        back.exitCode === 0
          ? `${branch} is back at ${move.from.slice(0, 12)}`
          : `${branch} stays at ${move.to.slice(0, 12)} (it could not be moved back: ${summarizeGitStderr(back.stderr) ?? "git refused"})`;
      throw new CheckoutMoveError(`${followed}; ${where}`, describeRestore(checkout, restored));
    } finally {
      await backup.discard().catch(() => undefined);
    }
  }

  /**
   * Brings a checkout whose index is still `from`'s tree to `to`'s (`git read-tree -m -u`); the
   * reason it could not, or undefined when it did. Changes nothing when the index is not `from`'s.
   * The index's stat data is refreshed first, as git's porcelain does before it checks the work tree:
   * plumbing compares stat data alone, so a file merely touched, re-written with the same bytes or
   * linked since git last looked would read as a local change and stop the move.
   */
  async followBranch(checkout: string, move: { from: string; to: string }): Promise<string | undefined> {
    assertSha(move.from);
    assertSha(move.to);
    let read: GitOutcome;
    try {
      const refreshed = await this.run(checkout, ["update-index", "-q", "--refresh"]);
      if (refreshed.exitCode !== 0) return gitFailure(["update-index"], refreshed).message;
      read = await this.run(checkout, ["read-tree", "-m", "-u", move.from, move.to]);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
    return read.exitCode === 0 ? undefined : gitFailure(["read-tree"], read).message;
  }

  /** Whether a checkout's index is exactly `commit`'s tree (nothing staged against it). */
  async indexIs(checkout: string, commit: string): Promise<boolean> {
    assertSha(commit);
    const diff = await this.run(checkout, ["diff-index", "--cached", "--quiet", commit, "--"]);
    return diff.exitCode === 0;
  }

  /** Moves `refs/heads/<branch>` from `from` to `to` atomically; git refuses if it is not at `from`. */
  async updateBranch(repo: string, branch: string, move: { from: string; to: string }, reason: string): Promise<void> {
    assertSha(move.from);
    assertSha(move.to);
    if (branch.startsWith("-") || /[\0\r\n]/.test(branch))
      throw new Error(`${JSON.stringify(branch)} is not a branch name.`);
    const result = await this.run(repo, ["update-ref", "-m", reason, `refs/heads/${branch}`, move.to, move.from]);
    if (result.exitCode !== 0) throw gitFailure(["update-ref"], result);
  }

  private runner(repo: string): GitRunner {
    return (args, input) =>
      runGit(repo, args, {
        timeoutMs: this.timeoutMs,
        env: this.env,
        ...(input === undefined ? {} : { input: Buffer.from(input, "utf8") }),
      });
  }

  private async run(
    cwd: string,
    args: readonly string[],
    gitVariables?: Record<string, string>,
    input?: Uint8Array,
  ): Promise<GitOutcome> {
    const result = await runGit(cwd, args, {
      timeoutMs: this.timeoutMs,
      env: this.env,
      ...(gitVariables === undefined ? {} : { gitVariables }),
      ...(input === undefined ? {} : { input }),
    });
    return { exitCode: result.exitCode, stdout: result.stdout.toString("utf8"), stderr: result.stderr };
  }
}

interface GitOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** What became of a checkout's files after a fast-forward that did not go through. */
function describeRestore(checkout: string, restored: Awaited<ReturnType<CheckoutBackup["restore"]>>): string {
  const failed = restored.failed.map((entry) => `${entry.path} (${entry.reason})`);
  if (failed.length > 0) {
    return `the stopped merge left ${counted(failed.length, "file")} in ${checkout} changed that could not be put back: ${failed.slice(0, 10).join(", ")}${failed.length > 10 ? ` and ${failed.length - 10} more` : ""}; git status there shows them`;
  }
  if (restored.restored.length === 0) return `the files in ${checkout} were not touched`;
  return `the ${counted(restored.restored.length, "file")} the stopped merge had changed in ${checkout} were put back as they were`;
}

function gitFailure(args: readonly string[], outcome: GitOutcome): Error {
  return new Error(
    `${gitCommandName(args)} failed: ${summarizeGitStderr(outcome.stderr) ?? `exit code ${outcome.exitCode}`}`,
  );
}

function assertSha(value: string): void {
  if (!FULL_SHA.test(value)) throw new Error(`${JSON.stringify(value)} is not a full commit SHA.`);
}

/** The git dir of a checkout from its `.git`: the directory itself, or the one a `gitdir:` file names. */
async function gitDirOf(checkout: string): Promise<string | undefined> {
  const dotGit = path.join(checkout, ".git");
  try {
    const text = await readFile(dotGit, "utf8");
    const named = /^gitdir: (.+)$/m.exec(text)?.[1]?.trim();
    return named === undefined ? undefined : path.resolve(checkout, named);
  } catch (error) {
    // A directory: the main checkout's own git dir.
    return errorCode(error) === "EISDIR" ? dotGit : undefined;
  }
}
