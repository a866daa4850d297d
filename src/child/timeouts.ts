/**
 * How long the launch waits for each thing outside it: the defaults, and the variables that change
 * them (from the one table of waits, config/waits.ts), read by the handoff and by recovery alike
 * (documented in the README and in docs/launch-contract.md).
 *
 * Invariants:
 * - Every wait of the launch is named here, with its default; no other module reads a
 *   `PI_HANDOFF_*` wait variable.
 * - The variables are validated by config/env.ts (their one schema); an entry point refuses an
 *   unusable one before it waits for anything (`readHandoffEnv`), so here one that is not valid
 *   can only leave the default in place.
 * - No wait is unbounded, and none is longer than its documented maximum.
 */
import { readWaits, WAIT_DEFAULTS, WAIT_SETTINGS, type WaitKey } from "../config/waits.ts";

export interface LaunchTimeouts {
  /** How long the pane's shell may take to own the terminal before the line is typed. */
  shellMs: number;
  /** Once the launcher started, how long to wait for the child's acknowledgement before probing the pane. */
  confirmMs: number;
  /** The first (shortest) polling interval; polls back off from it to 500 ms (mux/backoff.ts). */
  pollMs: number;
  /** How long the settings' postCreate commands may run before Pi starts. */
  postCreateMs?: number;
  /** After each typing (or the go-ahead of a window's launcher), how long to wait for the launcher to announce its start. */
  startMs?: number;
  /** How many times the launch line is typed when no launcher starts. */
  attempts?: number;
  /** How long a window's launcher waits for its launch step (while the handoff's process lives). */
  paramsWaitMs?: number;
}

const LAUNCH_KEYS = [
  "shellMs",
  "startMs",
  "attempts",
  "confirmMs",
  "postCreateMs",
  "paramsWaitMs",
] as const satisfies readonly WaitKey[];

/** The launch's settings (variables and defaults), from the one table of waits. */
export const LAUNCH_SETTINGS = WAIT_SETTINGS.filter((setting) =>
  (LAUNCH_KEYS as readonly string[]).includes(setting.key),
);

/** The first polling interval is not a setting; every other default is the table's. */
const POLL_MS = 50;

export const DEFAULT_LAUNCH_TIMEOUTS: Readonly<Required<LaunchTimeouts>> = {
  shellMs: WAIT_DEFAULTS.shellMs,
  confirmMs: WAIT_DEFAULTS.confirmMs,
  pollMs: POLL_MS,
  postCreateMs: WAIT_DEFAULTS.postCreateMs,
  startMs: WAIT_DEFAULTS.startMs,
  attempts: WAIT_DEFAULTS.attempts,
  paramsWaitMs: WAIT_DEFAULTS.paramsWaitMs,
};

/** The variable that overrides each wait. */
export const LAUNCH_TIMEOUT_ENV = Object.fromEntries(
  LAUNCH_SETTINGS.map((setting) => [setting.key, setting.variable]),
) as Record<(typeof LAUNCH_KEYS)[number], (typeof LAUNCH_SETTINGS)[number]["variable"]>;

/** Every wait with its default filled in. */
export function withDefaults(timeouts: LaunchTimeouts): Required<LaunchTimeouts> {
  return {
    shellMs: timeouts.shellMs,
    confirmMs: timeouts.confirmMs,
    pollMs: timeouts.pollMs,
    postCreateMs: timeouts.postCreateMs ?? DEFAULT_LAUNCH_TIMEOUTS.postCreateMs,
    startMs: timeouts.startMs ?? DEFAULT_LAUNCH_TIMEOUTS.startMs,
    attempts: timeouts.attempts ?? DEFAULT_LAUNCH_TIMEOUTS.attempts,
    paramsWaitMs: timeouts.paramsWaitMs ?? DEFAULT_LAUNCH_TIMEOUTS.paramsWaitMs,
  };
}

/** The launch waits: the defaults, each overridden by its variable when that holds a valid value. */
export function launchTimeoutsFromEnv(env: Readonly<Record<string, string | undefined>>): Required<LaunchTimeouts> {
  return { ...readWaits(env, LAUNCH_KEYS), pollMs: POLL_MS };
}
