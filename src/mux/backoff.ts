/**
 * Polling back-off shared by the waits on outside systems (the pane's shell in `shell-wait.ts`,
 * for tmux and Herdr alike, the launcher's start and the child's acknowledgement in
 * `child/launcher.ts`).
 *
 * Invariants:
 * - The first poll comes quickly (50 ms), then the interval doubles up to 500 ms: a fast answer
 *   is seen at once, and a slow server is asked at most about twice a second while it is slow.
 * - A delay never runs past the caller's deadline: the last sleep is cut so the final poll lands
 *   on it (a deadline is never overshot by a whole interval, and never missed by sleeping short).
 * - `backoff` is pure: no clock or timer of its own; the caller passes `now` and sleeps.
 * - `whileWaiting` never changes what it waits for: it only reports, about once a second, that
 *   the wait goes on, and returns (or throws) exactly what the promise does.
 */

export const BACKOFF_INITIAL_MS = 50;
export const BACKOFF_MAX_MS = 500;

export interface Backoff {
  /** How long to sleep before the next poll, or undefined once the deadline has passed. */
  next(now: number): number | undefined;
  /** Start again from the shortest interval (something changed: poll closely again). */
  reset(): void;
}

export function backoff(deadline: number, options: { initialMs?: number; maxMs?: number } = {}): Backoff {
  const initial = options.initialMs ?? BACKOFF_INITIAL_MS;
  const max = Math.max(initial, options.maxMs ?? BACKOFF_MAX_MS);
  let interval = initial;
  return {
    next(now: number): number | undefined {
      const left = deadline - now;
      if (left <= 0) return undefined;
      const delay = Math.min(interval, left);
      interval = Math.min(interval * 2, max);
      return delay;
    },
    reset(): void {
      interval = initial;
    },
  };
}

/**
 * Awaits `promise`, calling `tick(elapsedMs)` about once a second until it settles, so a status
 * line can show a long outside wait as it runs. Its timer ends with the wait.
 */
export async function whileWaiting<T>(
  promise: Promise<T>,
  now: () => number,
  tick: (elapsedMs: number) => void,
): Promise<T> {
  const started = now();
  const timer = setInterval(() => tick(now() - started), 1_000);
  try {
    return await promise;
  } finally {
    clearInterval(timer);
  }
}
