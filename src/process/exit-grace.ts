/**
 * The one rule for when a finished program's output is complete: its pipes closed, or, when a
 * process it left behind holds them open, a short grace after it exited in which nothing more
 * arrived. git's runner and every other program's (run-program.ts) end their calls by it.
 *
 * Invariants:
 * - Output the program wrote before it exited is never cut off: the grace ends only after the event
 *   loop has had a turn to read the pipes since its timer fired (a late loop runs due timers before
 *   it polls: with a timer alone, about one `git rev-list --count` in seventy of forty at once lost
 *   its whole answer on a loaded machine), and it starts again while bytes keep arriving, up to
 *   `EXIT_GRACE_MAX_MS` after the exit: a process left behind that keeps writing (a hook's
 *   background job) does not hold a finished call until its deadline.
 * - When it ends, the pipes are destroyed, so a process that holds them cannot keep the call open.
 */
import type { Readable } from "node:stream";

/** How long after a program exited its output may still arrive before the call ends without it. */
export const EXIT_GRACE_MS = 200;
/** The most the grace waits after the exit while bytes keep arriving. */
export const EXIT_GRACE_MAX_MS = 1_000;

export interface ExitGrace {
  /** Stops the grace: the call ended otherwise (the pipes closed, or its deadline passed). */
  cancel(): void;
}

/**
 * Starts the grace after a program's exit: `done` runs once no output arrived for `graceMs`,
 * counted up to a turn in which the pipes could be read, with the pipes destroyed.
 */
export function graceAfterExit(
  streams: ReadonlyArray<Readable | null | undefined>,
  done: () => void,
  graceMs: number = EXIT_GRACE_MS,
  maxMs: number = EXIT_GRACE_MAX_MS,
): ExitGrace {
  const exitedAt = Date.now();
  let received = 0;
  const count = (chunk: Buffer | string): void => {
    received += chunk.length;
  };
  for (const stream of streams) stream?.on("data", count);
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let ended = false;
  const stop = (): void => {
    ended = true;
    clearTimeout(timer);
    if (immediate !== undefined) clearImmediate(immediate);
    for (const stream of streams) stream?.off("data", count);
  };
  const wait = (): void => {
    const seen = received;
    timer = setTimeout(() => {
      // An immediate runs after this turn's poll phase: what the pipes held by now has been read.
      immediate = setImmediate(() => {
        if (ended) return;
        if (received !== seen && Date.now() - exitedAt < maxMs) {
          wait();
          return;
        }
        stop();
        for (const stream of streams) stream?.destroy();
        done();
      });
    }, graceMs);
  };
  wait();
  return { cancel: stop };
}
