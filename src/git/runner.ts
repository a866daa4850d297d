/**
 * The one way git runs: git spawned with an argument array (never a shell), the sanitised
 * environment and a deadline, returning the exit code, stdout bytes and stderr of every call.
 * `git.ts` (text) and `checkout-git.ts` (byte-exact patches) both run git through `runGit`.
 *
 * Invariants:
 * - Every call has a deadline (not extended by output); at it git gets SIGTERM (it removes its lock
 *   files on it), SIGKILL 2 s later, and once git has ended the call is a `GitTimeoutError` naming the command. git runs in this
 *   process's group, as run by hand: it keeps the terminal, and an interrupt reaches it; a call
 *   that asks for its own group (a fetch, whose transport starts ssh) runs in its own session,
 *   without a terminal, and the signals at its deadline go to the whole group. A
 *   non-zero exit is
 *   data for the caller, which knows what it means. An argument that would make git start a
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
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import { randomBytes } from "node:crypto";
import { errorMessage } from "../errors.ts";
import { EXIT_GRACE_MS, type ExitGrace, graceAfterExit } from "../process/exit-grace.ts";
import { errorCode } from "../fs/probe.ts";
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
  return new Promise<GitRun>((resolve, reject) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let settled = false;
    let exitGrace: ExitGrace | undefined;
    const settle = (action: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      exitGrace?.cancel();
      action();
    };
    // In this process's group and session, as git run by hand: it keeps the terminal (a signing
    // passphrase prompt) and an interrupt of the command reaches it too; unless asked for a group of its own.
    const ownGroup = options.ownProcessGroup === true;
    const child = spawn("git", [...args], { cwd, env, stdio: ["pipe", "pipe", "pipe"], detached: ownGroup });
    const sendSignal = (name: NodeJS.Signals): void => {
      if (!ownGroup || child.pid === undefined) {
        child.kill(name);
        return;
      }
      try {
        process.kill(-child.pid, name);
      } catch {
        // The group is gone already.
      }
    };
    const finish = (code: number | null, signal: NodeJS.Signals | null): void =>
      settle(() =>
        resolve({
          exitCode: code ?? (signal === null ? -1 : 128 + signalNumber(signal)),
          stdout: Buffer.concat(stdout),
          stderr: Buffer.concat(stderr).toString("utf8"),
        }),
      );
    let timedOut = false;
    const timedOutError = (): Error =>
      new GitTimeoutError(`${command} timed out after ${formatWait(options.timeoutMs)} in ${cwd}.`);
    const timer = setTimeout(() => {
      // A catchable signal first: git removes its lock files and a half-made worktree on it. The
      // call ends once git has (SIGKILL after the grace), so a caller's clean-up never races it.
      timedOut = true;
      sendSignal("SIGTERM");
      setTimeout(() => {
        // A group's other members (a fetch's ssh) may outlive git itself.
        if (ownGroup || (child.exitCode === null && child.signalCode === null)) sendSignal("SIGKILL");
      }, KILL_GRACE_MS).unref();
      setTimeout(() => settle(() => reject(timedOutError())), KILL_GRACE_MS + EXIT_GRACE_MS).unref();
    }, options.timeoutMs);
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    // git may exit before reading its input: a closed pipe is not the call's failure.
    child.stdin.on("error", () => {});
    child.on("error", (error) => {
      const reason =
        errorCode(error) === "ENOENT" && !existsSync(cwd)
          ? "the directory does not exist"
          : firstLine(errorMessage(error)).replace(/\.$/, "");
      settle(() => reject(new Error(`${command} could not run in ${cwd}: ${reason}.`, { cause: error })));
    });
    // A hook's or helper's child that keeps git's output open must not hold a finished call.
    child.on("exit", (code, signal) => {
      if (timedOut) {
        settle(() => reject(timedOutError()));
        return;
      }
      exitGrace = graceAfterExit([child.stdout, child.stderr], () => finish(code, signal));
    });
    child.on("close", (code, signal) => (timedOut ? settle(() => reject(timedOutError())) : finish(code, signal)));
    if (options.input !== undefined) child.stdin.end(options.input);
  });
}

/** How long a timed-out git has to end on SIGTERM before it is killed. */
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
  const command = ["git", ...args].map(shellQuote).join(" ");
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
  const outputs = await runShell(script, argv, groups, env, AbortSignal.timeout(options.timeoutMs));
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
 * Runs `sh -c script` with `argv` and `pipes` output pipes (stdout, then fds 3 and up), its whole
 * process group ended at the deadline; resolves with each pipe's bytes, whatever came of it.
 */
function runShell(
  script: string,
  argv: readonly string[],
  pipes: number,
  env: NodeJS.ProcessEnv,
  deadline: AbortSignal,
): Promise<Buffer[]> {
  return new Promise((resolve) => {
    const chunks: Buffer[][] = Array.from({ length: pipes }, () => []);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      deadline.removeEventListener("abort", stop);
      resolve(chunks.map((pipe) => Buffer.concat(pipe)));
    };
    const extra = Array.from({ length: Math.max(0, pipes - 1) }, () => "pipe" as const);
    const child = spawn("sh", ["-c", script, "sh", ...argv], {
      env,
      stdio: ["ignore", "pipe", "ignore", ...extra],
      // Its own process group, so the deadline ends the git it is running too.
      detached: true,
    });
    const stop = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
      finish();
    };
    if (deadline.aborted) stop();
    deadline.addEventListener("abort", stop, { once: true });
    for (let pipe = 0; pipe < pipes; pipe++) {
      const stream = child.stdio[pipe === 0 ? 1 : pipe + 2];
      stream?.on("data", (chunk: Buffer) => chunks[pipe]?.push(chunk));
    }
    child.on("error", finish);
    child.on("close", finish);
  });
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
