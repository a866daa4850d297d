/**
 * The one way git runs: git started by the process core (src/process/spawn.ts) with an argument
 * array (never a shell), the sanitised environment and a deadline, returning the exit code, stdout
 * bytes and stderr of every call. `git.ts` (text) and `checkout-git.ts` (byte-exact patches) both
 * run git through `runGit`; `runGitInEach` runs one read-only command in many checkouts from one sh.
 *
 * Invariants:
 * - Every call has a deadline (not extended by output); at it git gets SIGTERM (it removes its lock
 *   files on it), SIGKILL 2 s later, and once git has ended the call is a `GitTimeoutError` naming
 *   the command. git runs in this process's group, as run by hand: it keeps the terminal, and an
 *   interrupt reaches it; a call that asks for its own group (a fetch, whose transport starts ssh)
 *   runs in its own session, without a terminal, and the signals at its deadline go to the whole
 *   group (the core's `ownProcessGroup`). A non-zero exit is data for the caller, which knows what
 *   it means. An argument that would make git start a
 *   program of the caller's choosing (`--upload-pack`, `-c core.sshCommand=...`, ...) is refused
 *   before git runs: every argument here comes from this package, and none needs one.
 * - A call costs git's own time: nothing waits after git exits (simple-git, used before, waited
 *   50 ms after every command that printed nothing: every `--quiet` check).
 * - git runs with `LC_ALL=C`, `GIT_OPTIONAL_LOCKS=0` and without inherited `GIT_*` variables other
 *   than a small allowlist (`gitEnvironment`): the user's own config files and identity are kept,
 *   so git commits, signs and runs hooks as the user's git would; a caller may allow a few more it
 *   sets itself.
 * - stdout reaches the caller as bytes, exactly as git wrote them (patches are not always UTF-8);
 *   `input` is written to git's stdin, as bytes; without it stdin stays open and empty, as a
 *   terminal that never types would be.
 */
import { existsSync } from "node:fs";
import os from "node:os";
import { randomBytes } from "node:crypto";
import { shQuote } from "../process/sh-quote.ts";
import { spawnProcess } from "../process/spawn.ts";
import { formatWait } from "../text.ts";

/**
 * The only `GIT_*` variables git inherits: inherited ones such as `GIT_DIR` would point git at the
 * wrong repository, and others change what git runs or prints.
 * The user's config files (`GIT_CONFIG_GLOBAL`, `GIT_CONFIG_SYSTEM`) and identity (`GIT_AUTHOR_*`,
 * `GIT_COMMITTER_*` names and emails) are theirs: without them a landing's commit has no author
 * ("unable to auto-detect email address") or is made without the settings (signing, hooks) the
 * user's own git would apply.
 */
const INHERITED_GIT_VARIABLES = [
  "GIT_CONFIG_NOSYSTEM",
  "GIT_CEILING_DIRECTORIES",
  "GIT_OPTIONAL_LOCKS",
  "GIT_CONFIG_GLOBAL",
  "GIT_CONFIG_SYSTEM",
  "GIT_AUTHOR_NAME",
  "GIT_AUTHOR_EMAIL",
  "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL",
] as const;
/** Variables that make git start programs: never passed on. */
const PROGRAM_VARIABLES = new Set(["EDITOR", "VISUAL", "PAGER", "PREFIX", "SSH_ASKPASS"]);

/** The environment git runs with: `base` without guarded variables, in the C locale, without optional locks. */
export function gitEnvironment(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const allowed = new Set<string>(INHERITED_GIT_VARIABLES);
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) {
    const name = key.toUpperCase();
    if (value === undefined || PROGRAM_VARIABLES.has(name)) continue;
    if (name.startsWith("GIT_") && !allowed.has(name)) continue;
    env[key] = value;
  }
  env.LC_ALL = "C";
  env.GIT_OPTIONAL_LOCKS = "0";
  return env;
}

export interface GitRun {
  exitCode: number;
  stdout: Buffer;
  stderr: string;
}

export interface GitRunOptions {
  timeoutMs: number;
  /** The environment before sanitising (default: `process.env` at call time). */
  env?: NodeJS.ProcessEnv | undefined;
  /** Bytes for git's stdin. */
  input?: Uint8Array;
  /** `GIT_*` variables this one call sets past the sanitising (a rewritten commit's author, for `commit-tree`). */
  gitVariables?: Readonly<Record<string, string>>;
  /** Run git in a session and process group of its own, signalled as a group at the deadline. */
  ownProcessGroup?: boolean;
}

/** A git call that did not end before its deadline (git was then stopped). */
export class GitTimeoutError extends Error {
  override readonly name = "GitTimeoutError";
}

/**
 * Options that make git start a program named in the argument itself: refused in `runGit`. Config
 * keys are compared without case, as git compares them.
 */
const PROGRAM_OPTIONS = /^--(upload-pack|receive-pack|exec|config-env)(=|$)/;
const PROGRAM_CONFIG_KEYS =
  /^(core\.(sshcommand|gitproxy|fsmonitor|hookspath|pager|editor|askpass)|protocol\..*\.allow|uploadpack\.packobjectshook|diff\..*\.(textconv|command)|filter\..*|merge\..*\.driver|credential\..*helper|alias\..*)(=|$)/i;

/** Why `args` may not be run, if so (see `PROGRAM_OPTIONS`). */
function programOption(args: readonly string[]): string | undefined {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] ?? "";
    if (arg === "--end-of-options" || arg === "--") return undefined;
    if (PROGRAM_OPTIONS.test(arg)) return arg;
    const config = arg === "-c" ? args[index + 1] : arg.startsWith("-c") && arg.length > 2 ? arg.slice(2) : undefined;
    if (config !== undefined && PROGRAM_CONFIG_KEYS.test(config)) return `-c ${config}`;
  }
  return undefined;
}

/** Runs one git command in `cwd`; resolves with any exit code, rejects on a timeout or a refusal. */
export async function runGit(cwd: string, args: readonly string[], options: GitRunOptions): Promise<GitRun> {
  const command = gitCommandName(args);
  const refused = programOption(args);
  if (refused !== undefined)
    throw new Error(`${command} was not run: the argument ${JSON.stringify(refused)} would make git start a program.`);
  const env = { ...gitEnvironment(options.env ?? process.env), ...options.gitVariables };
  // In this process's group and session, as git run by hand: it keeps the terminal (a signing
  // passphrase prompt) and an interrupt of the command reaches it too; unless asked for a group of its own.
  const run = await spawnProcess("git", args, {
    cwd,
    env,
    stdin: options.input ?? "open",
    timeoutMs: options.timeoutMs,
    killGraceMs: KILL_GRACE_MS,
    ownProcessGroup: options.ownProcessGroup === true,
  });
  switch (run.kind) {
    case "not_started": {
      const reason =
        run.errno === "ENOENT" && !existsSync(cwd)
          ? "the directory does not exist"
          : firstLine(run.message).replace(/\.$/, "");
      throw new Error(`${command} could not run in ${cwd}: ${reason}.`, { cause: run.cause });
    }
    case "timed_out":
    case "aborted":
      throw new GitTimeoutError(`${command} timed out after ${formatWait(options.timeoutMs)} in ${cwd}.`);
    case "exited":
      return {
        exitCode: run.exitCode ?? (run.signal === null ? -1 : 128 + signalNumber(run.signal)),
        stdout: run.stdout,
        stderr: run.stderr.toString("utf8"),
      };
  }
}

/** How long a timed-out git has to end on SIGTERM (it removes its lock files on it) before it is killed. */
const KILL_GRACE_MS = 2_000;

/** A signal's number, for the exit code a shell would report (128 + n); 0 when unknown. */
function signalNumber(signal: NodeJS.Signals): number {
  return os.constants.signals[signal] ?? 0;
}

/** `git <command>` (with the subcommand of `git worktree`), for messages; git's own options before it are skipped. */
export function gitCommandName(args: readonly string[]): string {
  let at = 0;
  while (at < args.length && (args[at] ?? "").startsWith("-")) at += args[at] === "-c" || args[at] === "-C" ? 2 : 1;
  const [command, subcommand] = args.slice(at);
  const isSubcommand = subcommand !== undefined && /^[a-z][a-z-]*$/.test(subcommand);
  return ["git", command ?? "", ...(command === "worktree" && isSubcommand ? [subcommand] : [])].join(" ").trim();
}

function firstLine(text: string): string {
  return (
    text
      .split(/\r?\n/)
      .find((line) => line.trim().length > 0)
      ?.trim() ?? text
  );
}

/** What one directory's run of `runGitInEach` left: its exit code and stdout bytes (its stderr is not kept). */
export interface GitEachRun {
  exitCode: number;
  stdout: Buffer;
}

export interface GitEachOptions {
  /** The deadline of the whole batch (every group at once). */
  timeoutMs: number;
  /** The environment before sanitising (default: `process.env` at call time). */
  env?: NodeJS.ProcessEnv | undefined;
  /** How many directories run at once (each group one after the other). */
  parallel: number;
}

/** The exit code `runGitInEach` gives a directory that is not there (git's own for a bad `-C`). */
const GONE_EXIT_CODE = 128;

/** The groups one batch runs at once: each writes to its own pipe, stdout or fds 3 to 9 (a POSIX shell names single-digit descriptors only). */
const MAX_GROUPS = 8;

/**
 * The same read-only git command in each of many directories, from one `sh` process whose
 * background subshells each run git in their share of the directories one after the other, each
 * writing to its own pipe: one process started by Node for the whole batch instead of one per
 * directory (a Node process starting children pays for each on its main thread, and more while
 * the ones before it keep the cores busy). Resolves with one entry per directory, in order;
 * `undefined` for one whose run was not seen to its end (the deadline, a shell that could not
 * start). Callers that need git's diagnostic run that directory again alone (`runGit`).
 */
export async function runGitInEach(
  cwds: readonly string[],
  args: readonly string[],
  options: GitEachOptions,
): Promise<(GitEachRun | undefined)[]> {
  const results: (GitEachRun | undefined)[] = cwds.map(() => undefined);
  if (cwds.length === 0) return results;
  const groups = Math.max(1, Math.min(cwds.length, MAX_GROUPS, Math.floor(options.parallel)));
  const members = Array.from({ length: groups }, (_, group) =>
    cwds.map((_, index) => index).filter((index) => index % groups === group),
  );
  // A letter first: printf reads digits right after `\0` as part of an octal escape.
  const token = `phw${randomBytes(16).toString("hex")}`;
  const command = ["git", ...args].map(shQuote).join(" ");
  // The marker after each run cannot be part of git's output: a random token between NUL bytes.
  // Arguments: the number of groups, each group's size, then every group's directories in turn.
  // git gets only its own group's pipe: a process it leaves running (an fsmonitor daemon) must not
  // hold the others open, or the batch would end only at its deadline.
  const script = [
    `IFS=' '; n=$1; shift; sizes=""; i=0`,
    `while [ "$i" -lt "$n" ]; do sizes="$sizes $1"; shift; i=$((i + 1)); done`,
    `skip=0; fd=1`,
    `for size in $sizes; do`,
    // A directory that is gone is answered by the shell's own test, without a process for it.
    `  (shift "$skip"; k=0; while [ "$k" -lt "$size" ]; do if [ -d "$1" ]; then (cd -- "$1" && exec ${command} 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-) 2>/dev/null; r=$?; else r=${GONE_EXIT_CODE}; fi; printf '\\0${token}:%s\\0' "$r"; shift; k=$((k + 1)); done) >&"$fd" &`,
    `  skip=$((skip + size)); if [ "$fd" -eq 1 ]; then fd=3; else fd=$((fd + 1)); fi`,
    `done`,
    `wait`,
  ].join("\n");
  const argv = [
    String(groups),
    ...members.map((indexes) => String(indexes.length)),
    ...members.flatMap((indexes) => indexes.map((index) => cwds[index] ?? "")),
  ];
  const env = gitEnvironment(options.env ?? process.env);
  const outputs = await runShell(script, argv, groups, env, options.timeoutMs);
  members.forEach((indexes, group) => {
    const output = outputs[group] ?? Buffer.alloc(0);
    let from = 0;
    for (const index of indexes) {
      const marker = output.indexOf(`\0${token}:`, from);
      if (marker < 0) break;
      const codeStart = marker + token.length + 2;
      const codeEnd = output.indexOf(0, codeStart);
      if (codeEnd < 0) break;
      const exitCode = Number(output.subarray(codeStart, codeEnd).toString("latin1"));
      results[index] = {
        exitCode: Number.isInteger(exitCode) ? exitCode : -1,
        stdout: output.subarray(from, marker),
      };
      from = codeEnd + 1;
    }
  });
  return results;
}

/**
 * Runs `sh -c script` with `argv` and `pipes` output pipes (stdout, then fds 3 and up), in a
 * process group of its own so that the deadline ends the git it is running too (SIGKILL at once:
 * a read-only batch has nothing to clean up); resolves with each pipe's bytes, whatever came of it.
 */
async function runShell(
  script: string,
  argv: readonly string[],
  pipes: number,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<Buffer[]> {
  const run = await spawnProcess("sh", ["-c", script, "sh", ...argv], {
    env,
    stdin: "ignore",
    stderr: "ignore",
    extraPipes: Math.max(0, pipes - 1),
    timeoutMs,
    killGraceMs: 0,
    ownProcessGroup: true,
  });
  if (run.kind === "not_started") return Array.from({ length: pipes }, () => Buffer.alloc(0));
  return [run.stdout, ...run.extra];
}
