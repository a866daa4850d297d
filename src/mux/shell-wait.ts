/**
 * The one wait on a pane's shell, for every backend: poll until the shell's own process group holds
 * the terminal's foreground for a few samples in a row. Each backend says where the two pids come
 * from (tmux: the pane's pid and its process facts; Herdr: `pane process-info`) and words its own
 * failure; the loop, its back-off and its stability rule are here.
 *
 * Invariants:
 * - Ready means `stableSamples` consecutive samples in which the shell's pid is known and equals
 *   the terminal's foreground process group, held for at least `settleMs()` since the first of them
 *   (0 unless the backend asks for more): a start-up job that hands the terminal back and forth is
 *   never taken for a shell at its prompt.
 * - A miss (no sample this time: the pane's process is gone, Herdr did not answer) breaks the run
 *   of stable samples; a stop ends the wait at once with the backend's own outcome.
 * - Polls back off while the shell is not ready (backoff.ts), so a slow server is not loaded by
 *   the wait, and come close together while it looks ready: every `stableIntervalMs` when given,
 *   else at the back-off's shortest interval. No sleep runs past the deadline.
 * - This module starts no process and reads no process facts itself: the backend's `sample` does.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { backoff } from "./backoff.ts";
import type { MuxFailure } from "./types.ts";

/** One look at the pane, as the backend's pid source saw it. */
export type ShellSample =
  /** The shell's pid and the terminal's foreground process group (undefined: not known). */
  | { kind: "sample"; shellPid: number | undefined; foregroundGroup: number | undefined }
  /** Nothing to compare this time; poll again. */
  | { kind: "miss" }
  /** The wait ends now with this failure. */
  | { kind: "stop"; failure: MuxFailure }
  /** The wait ends now as if its deadline had passed. */
  | { kind: "give_up" };

export interface ShellWaitOptions {
  deadline: number;
  /** How many consecutive ready samples make the shell ready. */
  stableSamples: number;
  /** While the shell looks ready, poll this often (default: the back-off's shortest interval). */
  stableIntervalMs?: number;
  /** How long the shell must have held the foreground before it counts as ready (asked at each sample). */
  settleMs?: () => number;
  sample: () => Promise<ShellSample>;
}

export type ShellWaitOutcome = { code: "ready" } | { code: "deadline" } | { code: "stopped"; failure: MuxFailure };

export async function waitForForegroundShell(options: ShellWaitOptions): Promise<ShellWaitOutcome> {
  const { deadline } = options;
  const delays = backoff(deadline);
  let stableSamples = 0;
  let stableSince = 0;
  for (;;) {
    const sample = await options.sample();
    if (sample.kind === "stop") return { code: "stopped", failure: sample.failure };
    if (sample.kind === "give_up") return { code: "deadline" };
    if (sample.kind === "miss") stableSamples = 0;
    else {
      // The shell owns the terminal once its own process group is the foreground group.
      const owns = sample.shellPid !== undefined && sample.shellPid === sample.foregroundGroup;
      stableSamples = owns ? stableSamples + 1 : 0;
      if (stableSamples === 1) stableSince = Date.now();
      const settleMs = options.settleMs?.() ?? 0;
      const settled = settleMs <= 0 || Date.now() - stableSince >= settleMs;
      if (stableSamples >= options.stableSamples && settled) return { code: "ready" };
    }
    const delay = nextDelay(stableSamples > 0);
    if (delay === undefined || delay <= 0) return { code: "deadline" };
    await sleep(delay);
  }

  function nextDelay(looksReady: boolean): number | undefined {
    if (looksReady && options.stableIntervalMs !== undefined)
      return Math.min(options.stableIntervalMs, deadline - Date.now());
    if (looksReady) delays.reset();
    return delays.next(Date.now());
  }
}
