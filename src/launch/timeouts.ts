/**
 * How long the launch waits for each thing outside it, and where those bounds come from: one
 * place for the defaults and for the variables that change them, read by the handoff and by
 * recovery alike.
 *
 * Invariants:
 * - Every wait of the launch is named here, with its default; no other module reads a
 *   `PI_HANDOFF_*_TIMEOUT_MS` variable.
 * - The variables are validated by config/env.ts (their one schema); an entry point refuses an
 *   unusable one before it waits for anything (`readHandoffEnv`), so here one that is not valid
 *   can only leave the default in place.
 */
import { validHandoffEnv } from "../config/env.ts";

export interface LaunchTimeouts {
  /** How long the pane's shell may take to own the terminal. */
  shellMs: number;
  /** How long to wait for the child's acknowledgement before probing the pane. */
  confirmMs: number;
  /** How often the manifest is read while waiting. */
  pollMs: number;
  /** How long the settings' postCreate commands may run before Pi starts. */
  postCreateMs?: number;
}

export const DEFAULT_LAUNCH_TIMEOUTS = { shellMs: 15_000, confirmMs: 45_000, pollMs: 50, postCreateMs: 600_000 } as const satisfies Required<LaunchTimeouts>;

/** The variable that overrides each wait. */
export const LAUNCH_TIMEOUT_ENV = {
  shellMs: "PI_HANDOFF_SHELL_TIMEOUT_MS",
  confirmMs: "PI_HANDOFF_CONFIRM_TIMEOUT_MS",
  postCreateMs: "PI_HANDOFF_POST_CREATE_TIMEOUT_MS",
} as const satisfies Partial<Record<keyof LaunchTimeouts, string>>;

/** The launch waits: the defaults, each overridden by its variable when that holds a valid value. */
export function launchTimeoutsFromEnv(env: NodeJS.ProcessEnv): LaunchTimeouts {
  const valid = validHandoffEnv(env, Object.values(LAUNCH_TIMEOUT_ENV));
  return {
    shellMs: valid[LAUNCH_TIMEOUT_ENV.shellMs] ?? DEFAULT_LAUNCH_TIMEOUTS.shellMs,
    confirmMs: valid[LAUNCH_TIMEOUT_ENV.confirmMs] ?? DEFAULT_LAUNCH_TIMEOUTS.confirmMs,
    pollMs: DEFAULT_LAUNCH_TIMEOUTS.pollMs,
    postCreateMs: valid[LAUNCH_TIMEOUT_ENV.postCreateMs] ?? DEFAULT_LAUNCH_TIMEOUTS.postCreateMs,
  };
}
