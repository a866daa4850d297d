/**
 * The one process core: every program this package starts (git, tmux, herdr, zellij, ps, a
 * repository's check, the batch shell of `runGitInEach`) is spawned here, with an argument array,
 * supervised to its end, and answered as a value. `runGit` (src/git/runner.ts) and `runProgram`
 * (run-program.ts) are thin callers that word the value for their own callers.
 *
 * Invariants:
 * - An argument array, never a shell string: a caller that wants a shell names `sh` and passes its
 *   script as an argument it wrote itself, with every outside word as a further argument.
 * - Every run has a deadline (`timeoutMs`, not extended by output) and may also be stopped by an
 *   `AbortSignal`. Either sends SIGTERM (git removes its lock files on it), then SIGKILL after
 *   `killGraceMs` to a process still running; the run ends once the process has ended, or, for
 *   one that cannot be killed (stuck in the kernel), `EXIT_GRACE_MAX_MS` after the SIGKILL.
 * - `ownProcessGroup`: the process starts in a session and group of its own (no terminal), the
 *   signals go to the whole group (`kill(-pid)`), and the SIGKILL is sent to the group whatever
 *   the leader did, so what it started (a fetch's ssh, a check's `npm test` -> node) does not
 *   outlive a stopped run. Without it the process stays in this process's group, as a program run
 *   by hand: it keeps the terminal, and an interrupt reaches it too.
 * - A group of its own follows this process's end: while one runs, an interrupt, a termination or
 *   a hangup this process gets (SIGINT, SIGTERM, SIGHUP) is sent on to it, as the terminal would
 *   have sent it, and this process's exit sends it SIGTERM; so Ctrl-C on `pi-handoff land --all`
 *   ends the check it runs instead of leaving it orphaned. A signal no one else listens for is then
 *   raised again with the handler gone, so this process ends as it would have; where another
 *   listener exists (Pi's), that listener decides.
 * - A finished run's output is what the process wrote before it exited, plus what arrives within
 *   the exit grace (exit-grace.ts): a child it left running that holds the pipes open does not
 *   hold the run.
 * - A process that could not start (missing, not executable, a cwd that is gone, an argument with
 *   a NUL byte) is a `not_started` value with the system's code (`ENOENT`), never a throw.
 * - Only Node's own `child_process`, imported here alone in src/ (ownership-rules.test.ts): a
 *   dependency that spawns (execa, used before) cost ~80 ms of loading on every Pi start.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import { errorCode } from "../fs/probe.ts";
import { EXIT_GRACE_MAX_MS, type ExitGrace, graceAfterExit } from "./exit-grace.ts";

export interface SpawnOptions {
  /** The working directory (default: this process's). */
  cwd?: string | undefined;
  /** The process's whole environment (default: this process's at call time). */
  env?: NodeJS.ProcessEnv | undefined;
  /**
   * What the process reads: bytes (or UTF-8 text) written and then closed; `"ignore"`: nothing
   * (`/dev/null`); `"open"`: a pipe never written to nor closed, as a terminal that never types.
   */
  stdin: string | Uint8Array | "ignore" | "open";
  /** Whether stderr is kept (default) or goes to `/dev/null`. */
  stderr?: "pipe" | "ignore";
  /** How many further output pipes the process gets, as descriptors 3, 4, ... (default none). */
  extraPipes?: number;
  /** The deadline, counted from the start. */
  timeoutMs: number;
  /** Stops the run as the deadline does, when it aborts. */
  signal?: AbortSignal | undefined;
  /** How long after SIGTERM SIGKILL follows (default 2 s; 0: at once). */
  killGraceMs?: number;
  /** A session and process group of its own, signalled as a group (see the header). */
  ownProcessGroup?: boolean;
}

/** What a process that started left: its exit, and every output pipe's bytes. */
export interface SpawnEnd {
  /** The exit code; null when a signal ended it, or when it had not ended when the run did. */
  exitCode: number | null;
  /** The signal that ended it, if one did. */
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  /** Empty when stderr was ignored. */
  stderr: Buffer;
  /** The further pipes' bytes, descriptor 3 first. */
  extra: Buffer[];
}

export type SpawnResult =
  /** It ended by itself (any exit code, or a signal someone else sent). */
  | ({ kind: "exited" } & SpawnEnd)
  /** Its deadline passed, or its signal aborted, and it was stopped. */
  | ({ kind: "timed_out" | "aborted" } & SpawnEnd)
  /** It never ran: `errno` is the system's code (`ENOENT` for a missing program or directory). */
  | { kind: "not_started"; errno: string | undefined; message: string; cause: unknown };

export const DEFAULT_KILL_GRACE_MS = 2_000;

/** The groups of their own still running (their leaders' pids), which follow this process's end. */
const ownGroups = new Set<number>();
/** The runs with a group of their own under way, started or starting: while any is, signals are watched. */
let groupRuns = 0;
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

function signalGroups(name: NodeJS.Signals): void {
  for (const pid of ownGroups) {
    try {
      process.kill(-pid, name);
    } catch {
      // The group is gone already.
    }
  }
}

function forward(name: NodeJS.Signals): void {
  signalGroups(name);
  // Alone, this handler kept the signal from ending this process: end it as the signal would have.
  if (process.listenerCount(name) === 1) {
    stopWatching();
    process.kill(process.pid, name);
  }
}

const onExit = (): void => signalGroups("SIGTERM");

/**
 * Watched from before the spawn: a signal's listener runs only when the event loop turns, after
 * the spawn has recorded its pid, so a signal that arrives as the process starts still reaches it.
 */
function watchSignals(): void {
  if (groupRuns++ > 0) return;
  for (const name of FORWARDED) process.on(name, forward);
  process.on("exit", onExit);
}

function unwatchSignals(): void {
  if (groupRuns === 0) return;
  if (--groupRuns === 0) stopWatching();
}

function stopWatching(): void {
  groupRuns = 0;
  ownGroups.clear();
  for (const name of FORWARDED) process.off(name, forward);
  process.off("exit", onExit);
}

/** Runs `file` with `args` until it ends, its deadline passes or its signal aborts; resolves with what happened. */
export function spawnProcess(file: string, args: readonly string[], options: SpawnOptions): Promise<SpawnResult> {
  return new Promise<SpawnResult>((resolve) => {
    const ownGroup = options.ownProcessGroup === true;
    const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
    const pipeCount = 2 + (options.extraPipes ?? 0);
    const chunks: Buffer[][] = Array.from({ length: pipeCount }, () => []);
    let stoppedBy: "timed_out" | "aborted" | undefined;
    let settled = false;
    let exitGrace: ExitGrace | undefined;
    const timers: NodeJS.Timeout[] = [];
    const onAbort = (): void => stop("aborted");
    let groupPid: number | undefined;
    const settle = (result: SpawnResult): void => {
      if (settled) return;
      settled = true;
      if (ownGroup) {
        if (groupPid !== undefined) ownGroups.delete(groupPid);
        unwatchSignals();
      }
      for (const timer of timers) clearTimeout(timer);
      exitGrace?.cancel();
      options.signal?.removeEventListener("abort", onAbort);
      resolve(result);
    };
    const startFailed = (error: unknown): void =>
      settle({
        kind: "not_started",
        errno: errorCode(error),
        message: error instanceof Error ? error.message : String(error),
        cause: error,
      });

    let child: ChildProcess;
    if (ownGroup) watchSignals();
    try {
      child = spawn(file, [...args], {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: [
          options.stdin === "ignore" ? "ignore" : "pipe",
          "pipe",
          options.stderr === "ignore" ? "ignore" : "pipe",
          ...Array.from({ length: pipeCount - 2 }, () => "pipe" as const),
        ],
        detached: ownGroup,
      });
    } catch (error) {
      // Invalid arguments (a NUL byte) throw at once instead of emitting "error".
      startFailed(error);
      return;
    }
    if (ownGroup && child.pid !== undefined) {
      groupPid = child.pid;
      ownGroups.add(groupPid);
    }
    const pipes: Array<Readable | null | undefined> = [child.stdio[1], child.stdio[2]];
    for (let fd = 3; fd < pipeCount + 1; fd++) pipes.push(child.stdio[fd] as Readable | null | undefined);
    pipes.forEach((pipe, index) => pipe?.on("data", (chunk: Buffer) => chunks[index]?.push(chunk)));

    const ended = (exitCode: number | null, signal: NodeJS.Signals | null): void => {
      const [stdout = [], stderr = [], ...extra] = chunks;
      const end: SpawnEnd = {
        exitCode,
        signal,
        stdout: Buffer.concat(stdout),
        stderr: Buffer.concat(stderr),
        extra: extra.map((pipe) => Buffer.concat(pipe)),
      };
      settle({ kind: stoppedBy ?? "exited", ...end });
    };
    child.on("error", (error) => {
      // "error" after a start means a kill failed; the exit still comes.
      if (child.pid === undefined) startFailed(error);
    });
    // A child it left running that keeps the pipes open must not hold a finished run.
    child.on("exit", (code, signal) => {
      if (settled) return;
      exitGrace = graceAfterExit(pipes, () => ended(code, signal));
    });
    child.on("close", ended);

    const running = (): boolean => child.exitCode === null && child.signalCode === null;
    const send = (name: NodeJS.Signals): void => {
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
    function stop(why: "timed_out" | "aborted"): void {
      // One that exited already is in its exit grace, which ends the run by itself.
      if (settled || stoppedBy !== undefined || !running()) return;
      stoppedBy = why;
      send("SIGTERM");
      const kill = setTimeout(() => {
        // A group's other members (a fetch's ssh, a check's test runner) may outlive its leader.
        if (ownGroup || running()) send("SIGKILL");
      }, killGraceMs);
      // A group is killed even after the run ended with its leader; a lone process needs no more.
      if (ownGroup) kill.unref();
      else timers.push(kill);
      // A process that SIGKILL does not end does not hold the caller forever.
      timers.push(setTimeout(() => ended(child.exitCode, child.signalCode), killGraceMs + EXIT_GRACE_MAX_MS));
    }
    timers.push(setTimeout(() => stop("timed_out"), options.timeoutMs));
    if (options.signal?.aborted === true) stop("aborted");
    else options.signal?.addEventListener("abort", onAbort, { once: true });

    if (child.stdin !== null) {
      // A process may exit before reading its input: a closed pipe is not the run's failure.
      child.stdin.on("error", () => {});
      if (options.stdin !== "open" && options.stdin !== "ignore") child.stdin.end(options.stdin);
    }
  });
}
