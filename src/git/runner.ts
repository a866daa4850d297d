/**
 * The one way git runs: simple-git, one instance per call, with its timeout plugin, the sanitised
 * environment and the exit code, stdout bytes and stderr of every call. `git.ts` (text) and
 * `checkout-git.ts` (byte-exact patches) both run git through `runGit`.
 *
 * Invariants:
 * - Every call has a deadline (simple-git `timeout.block`, not extended by output); a timeout and
 *   simple-git's own refusals (unsafe argument, environment guard) are errors, with the command
 *   named; a non-zero exit is data for the caller, which knows what it means.
 * - git runs with `LC_ALL=C`, `GIT_OPTIONAL_LOCKS=0` and without inherited `GIT_*` variables other
 *   than a small allowlist (`gitEnvironment`): the user's own config files and identity are kept,
 *   so git commits, signs and runs hooks as the user's git would; a caller may allow a few more it
 *   sets itself.
 * - stdout reaches the caller as bytes, exactly as git wrote them (patches are not always UTF-8);
 *   `input` is written to git's stdin, as bytes.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { GitPluginError, simpleGit } from "simple-git";
import { errorMessage } from "../errors.ts";
import { formatWait } from "../text.ts";

/**
 * The only `GIT_*` variables git inherits. simple-git v4 rejects a task that is handed any other
 * `GIT_*` variable, and inherited ones such as `GIT_DIR` would point git at the wrong repository.
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
/** Variables that make git start programs; simple-git v4 refuses tasks that are handed them. */
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
}

/** Runs one git command in `cwd`; resolves with any exit code, rejects on a timeout or a refusal. */
export async function runGit(cwd: string, args: readonly string[], options: GitRunOptions): Promise<GitRun> {
  let finished: GitRun | undefined;
  try {
    const env = { ...gitEnvironment(options.env ?? process.env), ...options.gitVariables };
    // The person's own config files (simple-git guards the variables that name them); never an argument.
    const ownConfigPaths = env.GIT_CONFIG_GLOBAL !== undefined || env.GIT_CONFIG_SYSTEM !== undefined;
    const git = simpleGit({
      baseDir: cwd,
      ...(ownConfigPaths ? { unsafe: { allowUnsafeConfigPaths: true } } : {}),
      timeout: { block: options.timeoutMs, stdOut: false, stdErr: false },
      allowEnvironment: [...INHERITED_GIT_VARIABLES, ...Object.keys(options.gitVariables ?? {})],
      ...(options.input !== undefined ? { input: () => Buffer.from(options.input ?? new Uint8Array()) } : {}),
      errors: (error, result) => {
        finished = {
          exitCode: result.exitCode,
          stdout: Buffer.concat(result.stdOut),
          stderr: Buffer.concat(result.stdErr).toString("utf8"),
        };
        // simple-git's own refusals (timeout, unsafe argument, environment guard) stay errors;
        // a non-zero exit is returned to the caller, which knows what it means.
        return error instanceof GitPluginError ? error : undefined;
      },
    }).env(env);
    await git.raw([...args]);
    if (finished === undefined) throw new Error("simple-git did not report an exit code");
    return finished;
  } catch (error) {
    const command = gitCommandName(args);
    if (error instanceof GitPluginError && error.plugin === "timeout") {
      throw new Error(`${command} timed out after ${formatWait(options.timeoutMs)} in ${cwd}.`, { cause: error });
    }
    throw new Error(`${command} could not run in ${cwd}: ${firstLine(errorMessage(error))}`, { cause: error });
  }
}

/** `git <command>` (with the subcommand of `git worktree`), for messages. */
export function gitCommandName(args: readonly string[]): string {
  const [command, subcommand] = args;
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

/**
 * The same read-only git command in each of many directories, from a few `sh` processes that each
 * run git in their share of the directories one after the other: one process started by Node per
 * group instead of one per directory (a Node process starting hundreds of children pays for each
 * on its main thread). Resolves with one entry per directory, in order; `undefined` for one whose
 * run was not seen to its end (the deadline, a shell that could not start). Callers that need
 * git's diagnostic run that directory again alone (`runGit`).
 */
export async function runGitInEach(
  cwds: readonly string[],
  args: readonly string[],
  options: GitEachOptions,
): Promise<(GitEachRun | undefined)[]> {
  const results: (GitEachRun | undefined)[] = cwds.map(() => undefined);
  if (cwds.length === 0) return results;
  const groups = Math.max(1, Math.min(cwds.length, Math.floor(options.parallel)));
  // A letter first: printf reads digits right after `\0` as part of an octal escape.
  const token = `phw${randomBytes(16).toString("hex")}`;
  const command = ["git", ...args].map(shellQuote).join(" ");
  // The marker after each run cannot be part of git's output: a random token between NUL bytes.
  const script = `for d in "$@"; do (cd -- "$d" && exec ${command}) 2>/dev/null; printf '\\0${token}:%s\\0' "$?"; done`;
  const env = gitEnvironment(options.env ?? process.env);
  const deadline = AbortSignal.timeout(options.timeoutMs);
  await Promise.all(
    Array.from({ length: groups }, async (_, group) => {
      const indexes = cwds.map((_, index) => index).filter((index) => index % groups === group);
      const output = await runShell(
        script,
        indexes.map((index) => cwds[index] ?? ""),
        env,
        deadline,
      );
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
    }),
  );
  return results;
}

/** Runs `sh -c script` with `argv`, its whole process group ended at the deadline; resolves with its stdout, whatever came of it. */
function runShell(
  script: string,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  deadline: AbortSignal,
): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      deadline.removeEventListener("abort", stop);
      resolve(Buffer.concat(chunks));
    };
    const child = spawn("sh", ["-c", script, "sh", ...argv], {
      env,
      stdio: ["ignore", "pipe", "ignore"],
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
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.on("error", finish);
    child.on("close", finish);
  });
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
