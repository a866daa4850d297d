/**
 * The one way a program other than git runs (tmux, herdr, zellij, ps, lsof): spawned with an
 * argument array (never a shell), stdin closed, a deadline on every call, and an answer that is a
 * value, never a throw. git has its own runner (`src/git/runner.ts`) for its environment rules.
 *
 * Invariants:
 * - At the deadline the program gets SIGTERM, then SIGKILL after the grace; the call ends once it
 *   has ended (or, for one that cannot be killed, at the grace's end), with `timedOut` set.
 * - A program that could not start (missing, not executable, a cwd that is gone) is an answer with
 *   `startError` and its code (`ENOENT`), not an exception.
 * - A finished program's output is what it wrote before it exited, plus what arrives within a short
 *   grace (exit-grace.ts, the rule git's runner shares): a child it left running that keeps the pipe
 *   open does not hold the call.
 * - Only Node's own `child_process`: a dependency that spawns (execa, used before) cost ~80 ms of
 *   loading on every Pi start, the child's on the way to its acknowledgement included.
 */
import { spawn } from "node:child_process";
import { errorCode } from "../fs/probe.ts";
import { type ExitGrace, graceAfterExit } from "./exit-grace.ts";

export interface ProgramRunOptions {
  timeoutMs: number;
  /** The program's whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** How long after SIGTERM at the deadline SIGKILL follows (default 2 s). */
  killGraceMs?: number;
  /** Keep stdout's and stderr's final newline (default: one is stripped, as a shell's `$(...)` does). */
  keepFinalNewline?: boolean;
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

const DEFAULT_KILL_GRACE_MS = 2_000;

/** Runs `file` with `args` until it ends or its deadline; resolves with what happened. */
export function runProgram(file: string, args: readonly string[], options: ProgramRunOptions): Promise<ProgramRun> {
  return new Promise<ProgramRun>((resolve) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timedOut = false;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    let exitGrace: ExitGrace | undefined;
    const settle = (exit: Pick<ProgramRun, "exitCode" | "signal" | "startError">): void => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      exitGrace?.cancel();
      resolve({
        ...exit,
        stdout: decode(stdout, options.keepFinalNewline === true),
        stderr: decode(stderr, options.keepFinalNewline === true),
        timedOut,
      });
    };
    const startFailed = (error: unknown): void =>
      settle({
        exitCode: undefined,
        signal: undefined,
        startError: { code: errorCode(error), message: error instanceof Error ? error.message : String(error) },
      });
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(file, [...args], {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      // Invalid arguments (a NUL byte) throw at once instead of emitting "error".
      startFailed(error);
      return;
    }
    const ended = (code: number | null, signal: NodeJS.Signals | null): void =>
      settle({ exitCode: code ?? undefined, signal: signal ?? undefined, startError: undefined });
    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", (error) => {
      // "error" after a start means a kill failed; the exit still comes.
      if (child.pid === undefined) startFailed(error);
    });
    child.on("exit", (code, signal) => {
      if (settled) return;
      exitGrace = graceAfterExit([child.stdout, child.stderr], () => ended(code, signal));
    });
    child.on("close", ended);
    const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
    timers.push(
      setTimeout(() => {
        timedOut = true;
        child.kill("SIGTERM");
        timers.push(
          setTimeout(() => {
            if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
          }, killGraceMs),
          // A program that SIGKILL does not end (stuck in the kernel) does not hold the caller forever.
          setTimeout(() => ended(child.exitCode, child.signalCode), killGraceMs + 1_000),
        );
      }, options.timeoutMs),
    );
  });
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

function decode(chunks: readonly Buffer[], keepFinalNewline: boolean): string {
  const text = Buffer.concat(chunks).toString("utf8");
  if (keepFinalNewline) return text;
  if (text.endsWith("\r\n")) return text.slice(0, -2);
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}
