/**
 * Waiting, for the demo: every wait has a deadline, and every wait stops at once when the demo
 * is interrupted (its AbortSignal fires).
 */
import { setTimeout as delay } from "node:timers/promises";

/** An expected failure of the demo; its message is one sentence for the user. */
export class DemoFailure extends Error {
  override readonly name = "DemoFailure";
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal });
}

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** The sentence to fail with, e.g. "The parent Pi did not show its TUI within 60.0 s." (a function: computed at the deadline). */
  failure: string | (() => string);
  signal: AbortSignal;
}

/** Polls `probe` until it returns something other than undefined; throws a DemoFailure at the deadline. */
export async function waitFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  options: WaitOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) {
      throw new DemoFailure(typeof options.failure === "string" ? options.failure : options.failure());
    }
    await sleep(options.intervalMs ?? 200, options.signal);
  }
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
