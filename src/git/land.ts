/**
 * LandGit: the git operations of `pi-handoff land`, bringing a handoff branch's commits into
 * another branch. Runs git only through `runGit` (runner.ts: simple-git, deadline per call,
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
 * - User input never reads as an option: refs are validated (`assertRevision`) or are full SHAs.
 */
import { summarizeGitStderr } from "./git.ts";
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

export type MergeTreeResult = { clean: true; tree: string } | { clean: false; conflicts: string[] };

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
}

export class LandGit {
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly timeoutMs: number;

  constructor(options: LandGitOptions = {}) {
    this.env = options.env;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** A three-way merge of two commits computed in the object store: the tree, or the conflicting paths. */
  async mergeTree(repo: string, ours: string, theirs: string): Promise<MergeTreeResult> {
    assertSha(ours);
    assertSha(theirs);
    const result = await this.run(repo, ["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs]);
    // Exit 1 with output means conflicts; anything else non-zero is a failure to merge at all.
    if (result.exitCode > 1 && /unknown option|usage: git merge-tree/i.test(result.stderr)) {
      throw new Error("Landing needs git 2.38 or newer (for git merge-tree --write-tree); update git, or merge by hand.");
    }
    const fields = result.stdout.split("\0").filter((field) => field.length > 0);
    const tree = fields[0];
    if (tree === undefined || !FULL_SHA.test(tree) || (result.exitCode !== 0 && result.exitCode !== 1)) {
      throw gitFailure(["merge-tree"], result);
    }
    if (result.exitCode === 0) return { clean: true, tree };
    return { clean: false, conflicts: [...new Set(fields.slice(1))] };
  }

  /** The commits reachable from `to` and not from `from`, oldest first. */
  async commitsBetween(repo: string, from: string, to: string): Promise<CommitDetail[]> {
    assertSha(from);
    assertSha(to);
    const format = ["%H", "%P", "%s", "%an", "%ae", "%ad", "%B"].join("%x00") + "%x1e";
    const result = await this.run(repo, ["log", "--reverse", "--topo-order", "--date=raw", `--format=${format}`, `${from}..${to}`, "--"]);
    if (result.exitCode !== 0) throw gitFailure(["log"], result);
    return result.stdout
      .split(RECORD)
      .map((record) => record.replace(/^\n/, ""))
      .filter((record) => record.length > 0)
      .map((record) => {
        const [sha = "", parents = "", subject = "", authorName = "", authorEmail = "", authorDate = "", message = ""] = record.split(FIELD);
        return { sha, parents: parents.split(" ").filter((p) => p.length > 0), subject, authorName, authorEmail, authorDate, message };
      });
  }

  /** A new commit object (no ref changes); the author is kept when given, the committer is the user. */
  async commitTree(repo: string, input: CommitTreeInput): Promise<string> {
    assertSha(input.tree);
    for (const parent of input.parents) assertSha(parent);
    // The message goes through stdin: it may hold anything, and `-m` would reformat paragraphs.
    const message = input.message.endsWith("\n") ? input.message : `${input.message}\n`;
    const args = ["commit-tree", input.tree, ...input.parents.flatMap((parent) => ["-p", parent]), "-F", "-"];
    const author = input.author;
    const variables =
      author === undefined ? undefined : { GIT_AUTHOR_NAME: author.authorName, GIT_AUTHOR_EMAIL: author.authorEmail, GIT_AUTHOR_DATE: author.authorDate };
    const result = await this.run(repo, args, variables, Buffer.from(message, "utf8"));
    const sha = result.stdout.trim();
    if (result.exitCode !== 0 || !FULL_SHA.test(sha)) throw gitFailure(["commit-tree"], result);
    return sha;
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
   * (`git merge --ff-only`, which refuses to overwrite local changes). Throws, having changed
   * nothing, when HEAD is not at `from` or git refuses.
   */
  async fastForwardCheckout(checkout: string, branch: string, move: { from: string; to: string }): Promise<void> {
    assertSha(move.from);
    assertSha(move.to);
    const head = await this.run(checkout, ["symbolic-ref", "--quiet", "HEAD"]);
    if (head.exitCode !== 0 || head.stdout.trim() !== `refs/heads/${branch}`) {
      throw new Error(`${checkout} no longer has ${branch} checked out.`);
    }
    const at = await this.headOf(checkout);
    if (at !== move.from) throw new Error(`${branch} moved (it is at ${at ?? "no commit"}, not ${move.from}).`);
    const merged = await this.run(checkout, ["merge", "--ff-only", "--quiet", "--no-stat", "--no-edit", move.to]);
    if (merged.exitCode !== 0) throw gitFailure(["merge"], merged);
  }

  /** Moves `refs/heads/<branch>` from `from` to `to` atomically; git refuses if it is not at `from`. */
  async updateBranch(repo: string, branch: string, move: { from: string; to: string }, reason: string): Promise<void> {
    assertSha(move.from);
    assertSha(move.to);
    if (branch.startsWith("-") || /[\0\r\n]/.test(branch)) throw new Error(`${JSON.stringify(branch)} is not a branch name.`);
    const result = await this.run(repo, ["update-ref", "-m", reason, `refs/heads/${branch}`, move.to, move.from]);
    if (result.exitCode !== 0) throw gitFailure(["update-ref"], result);
  }

  private async run(cwd: string, args: readonly string[], gitVariables?: Record<string, string>, input?: Uint8Array): Promise<GitOutcome> {
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

function gitFailure(args: readonly string[], outcome: GitOutcome): Error {
  return new Error(`${gitCommandName(args)} failed: ${summarizeGitStderr(outcome.stderr) ?? `exit code ${outcome.exitCode}`}`);
}

function assertSha(value: string): void {
  if (!FULL_SHA.test(value)) throw new Error(`${JSON.stringify(value)} is not a full commit SHA.`);
}
