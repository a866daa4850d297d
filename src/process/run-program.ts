/**
 * The one way a program other than git runs (tmux, herdr, zellij, ps, lsof, a repository's check):
 * through the process core (spawn.ts) with an argument array (never a shell), stdin closed, a
 * deadline on every call, and an answer that is a value, never a throw. git has its own caller of
 * the core (`src/git/runner.ts`) for its environment rules.
 *
 * Invariants:
 * - At the deadline the program gets SIGTERM, then SIGKILL after the grace; the call ends once it
 *   has ended (or, for one that cannot be killed, shortly after the SIGKILL), with `timedOut` set.
 *   `ownProcessGroup` sends both to the program's whole group, so what it started dies with it.
 * - A program that could not start (missing, not executable, a cwd that is gone) is an answer with
 *   `startError` and its code (`ENOENT`), not an exception.
 * - A finished program's output is what it wrote before it exited, plus what arrives within a short
 *   grace (exit-grace.ts, applied by the core): a child it left running that keeps the pipe open
 *   does not hold the call.
 */
import { DEFAULT_KILL_GRACE_MS, spawnProcess } from "./spawn.ts";

export interface ProgramRunOptions {
  timeoutMs: number;
  /** The program's whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** How long after SIGTERM at the deadline SIGKILL follows (default 2 s). */
  killGraceMs?: number;
  /** Keep stdout's and stderr's final newline (default: one is stripped, as a shell's `$(...)` does). */
  keepFinalNewline?: boolean;
  /** Run the program in a process group of its own, signalled as a group at the deadline. */
  ownProcessGroup?: boolean;
}

export interface ProgramRun {
  /** The exit code; undefined when the program did not start or a signal ended it. */
  exitCode: number | undefined;
  /** The signal that ended it, if one did. */
  signal: NodeJS.Signals | undefined;
  stdout: string;
  stderr: string;
  /** The deadline passed before the program ended (it was sent SIGTERM). */
  timedOut: boolean;
  /** Why the program could not start, if it could not (`code`: the system's, `ENOENT` for a missing program). */
  startError: { code: string | undefined; message: string } | undefined;
}

/** Runs `file` with `args` until it ends or its deadline; resolves with what happened. */
export async function runProgram(
  file: string,
  args: readonly string[],
  options: ProgramRunOptions,
): Promise<ProgramRun> {
  const run = await spawnProcess(file, args, {
    cwd: options.cwd,
    env: options.env,
    stdin: "ignore",
    timeoutMs: options.timeoutMs,
    killGraceMs: options.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    ownProcessGroup: options.ownProcessGroup === true,
  });
  if (run.kind === "not_started")
    return {
      exitCode: undefined,
      signal: undefined,
      stdout: "",
      stderr: "",
      timedOut: false,
      startError: { code: run.errno, message: run.message },
    };
  const keep = options.keepFinalNewline === true;
  return {
    exitCode: run.exitCode ?? undefined,
    signal: run.signal ?? undefined,
    stdout: decode(run.stdout, keep),
    stderr: decode(run.stderr, keep),
    timedOut: run.kind !== "exited",
    startError: undefined,
  };
}

/** What went wrong with a run, in a few words for a sentence: the start error, the signal or the exit code. */
export function runFailure(run: ProgramRun): string {
  if (run.startError !== undefined) return run.startError.message;
  if (run.signal !== undefined) return `killed by ${run.signal}`;
  return `exit code ${String(run.exitCode)}`;
}

/** A run that ended by itself with exit code 0. */
export function runSucceeded(run: ProgramRun): boolean {
  return run.exitCode === 0 && !run.timedOut;
}

function decode(bytes: Buffer, keepFinalNewline: boolean): string {
  const text = bytes.toString("utf8");
  if (keepFinalNewline) return text;
  if (text.endsWith("\r\n")) return text.slice(0, -2);
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}
