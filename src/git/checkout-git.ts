/**
 * CheckoutGit: git that reads a checkout's working state and refs: its uncommitted changes (to
 * carry them into a worktree), its tracked files (guarding copies), its base's upstream and
 * freshness (with the one fetch a user may ask for), and its refs (for completion).
 *
 * Invariants:
 * - Runs git through the project's one runner (`runner.ts`: the sanitised environment, argument
 *   arrays, a deadline on every call that ends git's process group), with patches as bytes: a
 *   `git diff --binary` of a file that is not UTF-8 is written by git to a private temp file
 *   (`--output`, so its size is checked before it is read) and reaches `git apply` on stdin unchanged.
 * - `fetchUpstream` differs in two ways: a fetch's transport starts programs of its own (ssh, a
 *   remote helper) that must die with it on its deadline, so it runs in its own process group,
 *   and it has its own longer deadline and failure words.
 * - Reading a checkout never changes it: `git diff` and `git ls-files` with optional locks off
 *   write neither the index nor the work tree, so the parent checkout stays byte-identical.
 * - Writes: `applyChanges` only in the new worktree (its own index and files), atomically per patch
 *   (`git apply` applies all of a patch or nothing); `fetchUpstream` updates exactly one
 *   remote-tracking ref, and only when asked (`--fetch`). Nothing here deletes anything.
 * - Patches are made independent of the user's diff settings (prefixes, colour, external diff
 *   drivers, textconv, relative paths, rename detection), so `git apply` always reads them.
 * - A fetch cannot prompt: no terminal (its own session), `GIT_TERMINAL_PROMPT=0`, ssh in batch
 *   mode; on its deadline its whole process group is killed.
 */
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseStatus } from "./parse.ts";
import { GitTimeoutError, runGit, type GitRun } from "./runner.ts";
import type { BaseUpstream, CarriedChange, ChangesSnapshot, CheckoutGitPort } from "./types.ts";
import { WAIT_DEFAULTS } from "../config/waits.ts";
import { formatWait, stripPeriod } from "../text.ts";

export interface CheckoutGitOptions {
  /** Environment git runs with (default: `process.env` at call time), sanitised by `gitEnvironment`. */
  env?: NodeJS.ProcessEnv;
  /** Deadline for each local call (diff, apply, ls-files). Default 60 s. */
  timeoutMs?: number;
  /** Deadline for a fetch (default: `PI_HANDOFF_GIT_FETCH_TIMEOUT_MS`'s). */
  fetchTimeoutMs?: number;
  /** The largest patch carried (staged and unstaged each). Default 256 MiB. */
  maxPatchBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_PATCH_BYTES = 256 * 1024 * 1024;
const REF_LIMIT = 2_000;

/** Diff options that make a patch `git apply` reads whatever the user configured for `git diff`. */
const PATCH_OPTIONS = [
  "--binary",
  "--full-index",
  "--no-color",
  "--no-ext-diff",
  "--no-textconv",
  "--no-renames",
  "--no-relative",
  "--src-prefix=a/",
  "--dst-prefix=b/",
  "--ignore-submodules=none",
];

export class CheckoutGit implements CheckoutGitPort {
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly timeoutMs: number;
  private readonly fetchTimeoutMs: number;
  private readonly maxPatchBytes: number;

  constructor(options: CheckoutGitOptions = {}) {
    this.env = options.env;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.fetchTimeoutMs = options.fetchTimeoutMs ?? WAIT_DEFAULTS.gitFetchMs;
    this.maxPatchBytes = options.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES;
  }

  async snapshotChanges(checkout: string, mode: "tracked" | "all"): Promise<ChangesSnapshot> {
    const unmerged = splitNul(await this.text(checkout, ["ls-files", "--unmerged", "-z"]));
    if (unmerged.length > 0) {
      const files = new Set(unmerged.map((entry) => entry.slice(entry.indexOf("\t") + 1)));
      throw new Error(
        `${checkout} has unresolved merge conflicts (${[...files].slice(0, 3).join(", ")}${files.size > 3 ? ", ..." : ""}); resolve them before carrying changes.`,
      );
    }
    const [staged, unstaged, listed, untracked] = await Promise.all([
      this.patch(checkout, ["diff", "--cached", ...PATCH_OPTIONS]),
      this.patch(checkout, ["diff", ...PATCH_OPTIONS]),
      // Renames detected here only to tell the user what moved; the patches carry them as delete + add.
      this.text(checkout, [
        "diff",
        "HEAD",
        "--name-status",
        "-z",
        "-M",
        "--no-color",
        "--no-ext-diff",
        "--no-relative",
        "--ignore-submodules=none",
      ]),
      mode === "all" ? this.text(checkout, ["ls-files", "--others", "--exclude-standard", "-z"]) : Promise.resolve(""),
    ]);
    return {
      checkout,
      mode,
      staged,
      unstaged,
      changes: parseNameStatus(listed),
      // A directory entry (a nested repository) is not a file to copy.
      untracked: splitNul(untracked).filter((file) => !file.endsWith("/")),
    };
  }

  async applyChanges(worktree: string, snapshot: ChangesSnapshot): Promise<void> {
    // Staged first, into the index and the files; then the unstaged rest into the files only,
    // so `git status` in the worktree shows the same split as in the parent checkout.
    const steps: Array<{ patch: Uint8Array; args: string[]; what: string }> = [
      { patch: snapshot.staged, args: ["apply", "--index", "--whitespace=nowarn", "-"], what: "staged" },
      { patch: snapshot.unstaged, args: ["apply", "--whitespace=nowarn", "-"], what: "unstaged" },
    ];
    const applied: string[] = [];
    for (const step of steps) {
      if (step.patch.byteLength === 0) continue;
      const result = await this.run(worktree, step.args, { input: step.patch });
      if (result.exitCode !== 0) {
        const done = applied.length > 0 ? ` (the ${applied.join(" and ")} changes were applied)` : "";
        throw new Error(
          `The ${step.what} changes do not apply in ${worktree}${done}: ${summarize(result.stderr) ?? `git apply exited with ${result.exitCode}`}; they are still in ${snapshot.checkout}.`,
        );
      }
      applied.push(step.what);
    }
  }

  async trackedFiles(checkout: string): Promise<string[]> {
    return splitNul(await this.text(checkout, ["ls-files", "--cached", "--full-name", "-z"]));
  }

  async upstreamOf(checkout: string, ref: string): Promise<BaseUpstream | undefined> {
    if (ref.length === 0 || ref.startsWith("-") || /[\0\r\n]/.test(ref)) return undefined;
    // No `--end-of-options` here: rev-parse 2.39 echoes it; a leading `-` was refused above instead.
    const named = await this.run(checkout, ["rev-parse", "--symbolic-full-name", ref]);
    const full = new TextDecoder().decode(named.stdout).trim();
    if (named.exitCode !== 0 || full === "") return undefined;
    if (full.startsWith("refs/heads/")) {
      const shown = await this.text(checkout, [
        "for-each-ref",
        "--format=%(upstream)%00%(upstream:remotename)%00%(upstream:remoteref)",
        full,
      ]);
      const [upstream = "", remote = "", remoteRef = ""] = shown.replace(/\n$/, "").split("\0");
      if (upstream === "") return undefined;
      // `.` is git's name for "this repository": the upstream is another local branch.
      return {
        ref: full,
        upstream,
        remote: remote === "" ? "." : remote,
        remoteRef: remoteRef === "" ? upstream : remoteRef,
      };
    }
    if (full.startsWith("refs/remotes/")) return this.remoteTracking(checkout, full);
    return undefined;
  }

  async uncommittedCounts(checkout: string): Promise<{ tracked: number; untracked: number }> {
    const { dirtyFiles, untrackedFiles } = parseStatus(
      await this.text(checkout, ["status", "--porcelain=v1", "-z", "--untracked-files=normal"]),
    );
    return { tracked: dirtyFiles.length, untracked: untrackedFiles.length };
  }

  async unfetchedRemoteBranch(checkout: string, ref: string): Promise<BaseUpstream | undefined> {
    if (ref.length === 0 || ref.startsWith("-") || /[\0\r\n]/.test(ref)) return undefined;
    const full = `refs/remotes/${ref.replace(/^(?:refs\/)?remotes\//, "")}`;
    const upstream = await this.remoteTracking(checkout, full);
    if (upstream === undefined) return undefined;
    // The name goes into a refspec: only a valid branch name, so no `:`, `*` or `^` can change its meaning.
    const valid = await this.run(checkout, ["check-ref-format", upstream.remoteRef]);
    return valid.exitCode === 0 ? upstream : undefined;
  }

  /** `refs/remotes/<remote>/<branch>` as a remote branch, if `<remote>` is a configured remote. */
  private async remoteTracking(checkout: string, full: string): Promise<BaseUpstream | undefined> {
    const remotes = splitLines(await this.text(checkout, ["remote"]));
    // The longest remote name that prefixes the ref (remote names may contain `/`).
    const remote = remotes
      .filter((name) => full.startsWith(`refs/remotes/${name}/`))
      .sort((a, b) => b.length - a.length)[0];
    if (remote === undefined || full.length === `refs/remotes/${remote}/`.length) return undefined;
    return {
      ref: full,
      upstream: full,
      remote,
      remoteRef: `refs/heads/${full.slice(`refs/remotes/${remote}/`.length)}`,
    };
  }

  async fetchUpstream(checkout: string, upstream: BaseUpstream): Promise<void> {
    if (upstream.remote === ".") return; // a local upstream: nothing to fetch
    if (
      upstream.remote.startsWith("-") ||
      !upstream.upstream.startsWith("refs/remotes/") ||
      !upstream.remoteRef.startsWith("refs/")
    ) {
      throw new Error(
        `Cannot fetch ${upstream.remoteRef} from ${upstream.remote}: it does not look like a remote branch.`,
      );
    }
    const label = `${upstream.remote} ${upstream.remoteRef.replace(/^refs\/heads\//, "")}`;
    // `+`: a remote branch that was rewritten replaces its tracking ref, as a plain `git fetch` does.
    const args = [
      "fetch",
      "--no-tags",
      "--no-write-fetch-head",
      "--quiet",
      upstream.remote,
      `+${upstream.remoteRef}:${upstream.upstream}`,
    ];
    const base = this.env ?? process.env;
    let result: GitRun;
    try {
      result = await runGit(checkout, args, {
        timeoutMs: this.fetchTimeoutMs,
        env: base,
        gitVariables: {
          GIT_TERMINAL_PROMPT: "0",
          // The user's own ssh command if they set one (how they reach the remote), in batch mode otherwise.
          GIT_SSH_COMMAND: base.GIT_SSH_COMMAND ?? "ssh -o BatchMode=yes",
        },
        ownProcessGroup: true,
        // Nothing to read: a prompt that gets past the settings above reads the end of its input.
        input: new Uint8Array(),
      });
    } catch (error) {
      if (error instanceof GitTimeoutError)
        throw new Error(`git fetch ${label} did not finish within ${formatWait(this.fetchTimeoutMs)}.`);
      throw error;
    }
    if (result.exitCode !== 0) {
      throw new Error(
        `git fetch ${label} failed: ${summarize(String(result.stderr)) ?? `exit code ${String(result.exitCode)}`}.`,
      );
    }
  }

  async countCommits(checkout: string, from: string, to: string): Promise<number> {
    for (const ref of [from, to]) {
      if (ref.length === 0 || ref.startsWith("-") || /[\0\r\n]/.test(ref))
        throw new Error(`${JSON.stringify(ref)} is not a ref.`);
    }
    const counted = Number.parseInt(
      (await this.text(checkout, ["rev-list", "--count", "--end-of-options", `${from}..${to}`])).trim(),
      10,
    );
    if (!Number.isSafeInteger(counted) || counted < 0)
      throw new Error(`git rev-list --count ${from}..${to} printed no count.`);
    return counted;
  }

  async listRefs(checkout: string): Promise<{ branches: string[]; remotes: string[]; tags: string[] }> {
    const listed = splitLines(
      await this.text(checkout, [
        "for-each-ref",
        `--count=${REF_LIMIT}`,
        "--format=%(refname)",
        "refs/heads",
        "refs/remotes",
        "refs/tags",
      ]),
    );
    const strip = (prefix: string) =>
      listed.filter((ref) => ref.startsWith(prefix)).map((ref) => ref.slice(prefix.length));
    return {
      branches: strip("refs/heads/"),
      // `origin/HEAD` is a pointer, not a branch to start from.
      remotes: strip("refs/remotes/").filter((name) => !name.endsWith("/HEAD")),
      tags: strip("refs/tags/"),
    };
  }

  /** A patch as bytes; refuses one beyond `maxPatchBytes` rather than hold it all. */
  private async patch(cwd: string, args: string[]): Promise<Uint8Array> {
    const dir = await mkdtemp(join(tmpdir(), "phw-patch-"));
    try {
      const file = join(dir, "patch");
      const result = await this.run(cwd, [...args, `--output=${file}`]);
      if (result.exitCode !== 0) throw gitError(args, result);
      const size = (await stat(file).catch(() => undefined))?.size ?? 0;
      if (size > this.maxPatchBytes) {
        throw new Error(
          `git ${args[0] ?? ""} in ${cwd} made a patch of more than ${Math.round(this.maxPatchBytes / 1024 / 1024)} MiB; that is too much to carry.`,
        );
      }
      return size === 0 ? new Uint8Array() : new Uint8Array(await readFile(file));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async text(cwd: string, args: string[]): Promise<string> {
    const result = await this.run(cwd, args);
    if (result.exitCode !== 0) throw gitError(args, result);
    return result.stdout.toString("utf8");
  }

  private run(cwd: string, args: string[], options: { input?: Uint8Array } = {}): Promise<GitRun> {
    return runGit(cwd, args, { timeoutMs: this.timeoutMs, env: this.env, ...options });
  }
}

/** Parses `git diff --name-status -z`: `X\0path\0`, and `Rnn\0from\0to\0` for renames and copies. */
export function parseNameStatus(output: string): CarriedChange[] {
  const fields = output.split("\0");
  const changes: CarriedChange[] = [];
  for (let i = 0; i < fields.length; ) {
    const code = fields[i] ?? "";
    if (code === "") {
      i += 1;
      continue;
    }
    const status = code.charAt(0);
    if (status === "R" || status === "C") {
      const from = fields[i + 1] ?? "";
      const to = fields[i + 2] ?? "";
      changes.push({ status, path: to, from });
      i += 3;
    } else {
      changes.push({ status, path: fields[i + 1] ?? "" });
      i += 2;
    }
  }
  return changes;
}

function splitNul(text: string): string[] {
  return text.split("\0").filter((entry) => entry.length > 0);
}

function splitLines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
}

function summarize(stderr: string): string | undefined {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  const diagnostics = lines.filter((line) => /^(?:fatal|error):/i.test(line));
  const chosen = (diagnostics.length > 0 ? diagnostics : lines).slice(0, 3);
  if (chosen.length === 0) return undefined;
  return chosen.map((line) => stripPeriod(line.replace(/^(?:fatal|error):\s*/i, ""))).join("; ");
}

function gitError(args: readonly string[], run: GitRun): Error {
  return new Error(`git ${args[0] ?? ""} failed: ${summarize(run.stderr) ?? `exit code ${run.exitCode}`}.`);
}
