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
 *   than a small allowlist (`gitEnvironment`); a caller may allow a few more it sets itself.
 * - stdout reaches the caller as bytes, exactly as git wrote them (patches are not always UTF-8);
 *   `input` is written to git's stdin, as bytes.
 */
import { GitPluginError, simpleGit } from "simple-git";
import { errorMessage } from "../errors.ts";
import { formatWait } from "../text.ts";

/**
 * The only `GIT_*` variables git inherits. simple-git v4 rejects a task that is handed any other
 * `GIT_*` variable, and inherited ones such as `GIT_DIR` would point git at the wrong repository.
 */
const INHERITED_GIT_VARIABLES = ["GIT_CONFIG_NOSYSTEM", "GIT_CEILING_DIRECTORIES", "GIT_OPTIONAL_LOCKS"] as const;
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
    const git = simpleGit({
      baseDir: cwd,
      timeout: { block: options.timeoutMs, stdOut: false, stdErr: false },
      allowEnvironment: [...INHERITED_GIT_VARIABLES, ...Object.keys(options.gitVariables ?? {})],
      ...(options.input !== undefined ? { input: () => Buffer.from(options.input ?? new Uint8Array()) } : {}),
      errors: (error, result) => {
        finished = { exitCode: result.exitCode, stdout: Buffer.concat(result.stdOut), stderr: Buffer.concat(result.stdErr).toString("utf8") };
        // simple-git's own refusals (timeout, unsafe argument, environment guard) stay errors;
        // a non-zero exit is returned to the caller, which knows what it means.
        return error instanceof GitPluginError ? error : undefined;
      },
    }).env({ ...gitEnvironment(options.env ?? process.env), ...options.gitVariables });
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
  return text.split(/\r?\n/).find((line) => line.trim().length > 0)?.trim() ?? text;
}
