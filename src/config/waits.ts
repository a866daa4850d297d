/**
 * Every wait on an outside system that a user can change: its variable and default, in one table
 * (the README's settings table lists the same, checked by test/unit/launch-timeouts.test.ts). What
 * a value may hold is env.ts's schema, the only definition; an entry point refuses an unusable one
 * (`readHandoffEnv`) before anything waits. `launch/timeouts.ts` reads the launch's waits from here,
 * `mux/detect.ts` and `mux/for-location.ts` the multiplexer calls', the composition roots git's.
 *
 * Invariants:
 * - Pure: reads only the environment it is given.
 * - A value that is not valid leaves the default in place (it was refused at the entry point).
 */
import { validHandoffEnv, type HandoffEnvName } from "./env.ts";

export interface WaitSetting {
  key: string;
  variable: HandoffEnvName;
  fallback: number;
}

/** Every setting, in the order the README documents them. */
export const WAIT_SETTINGS = [
  { key: "shellMs", variable: "PI_HANDOFF_SHELL_TIMEOUT_MS", fallback: 15_000 },
  { key: "startMs", variable: "PI_HANDOFF_LAUNCH_START_TIMEOUT_MS", fallback: 3_000 },
  { key: "attempts", variable: "PI_HANDOFF_LAUNCH_ATTEMPTS", fallback: 3 },
  { key: "confirmMs", variable: "PI_HANDOFF_CONFIRM_TIMEOUT_MS", fallback: 45_000 },
  { key: "postCreateMs", variable: "PI_HANDOFF_POST_CREATE_TIMEOUT_MS", fallback: 600_000 },
  { key: "paramsWaitMs", variable: "PI_HANDOFF_LAUNCHER_WAIT_MS", fallback: 300_000 },
  { key: "muxCallMs", variable: "PI_HANDOFF_MUX_TIMEOUT_MS", fallback: 5_000 },
  { key: "herdrWorktreeMs", variable: "PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS", fallback: 120_000 },
  { key: "herdrPingMs", variable: "PI_HANDOFF_HERDR_PING_TIMEOUT_MS", fallback: 3_000 },
  { key: "gitFetchMs", variable: "PI_HANDOFF_GIT_FETCH_TIMEOUT_MS", fallback: 30_000 },
  { key: "gitWorktreeMs", variable: "PI_HANDOFF_GIT_WORKTREE_TIMEOUT_MS", fallback: 600_000 },
] as const satisfies readonly WaitSetting[];

/**
 * The most one git call may take: `PI_HANDOFF_GIT_TIMEOUT_MS` when set, else the caller's own
 * bound (recovery's reads are quick, a landing's merge may be slow), so one variable raises all
 * of them on a slow disk or a huge repository. Completions keep their short bound: they answer
 * while the user types.
 */
export function gitCallMs(env: Readonly<Record<string, string | undefined>>, callerDefault: number): number {
  return validHandoffEnv(env, ["PI_HANDOFF_GIT_TIMEOUT_MS"]).PI_HANDOFF_GIT_TIMEOUT_MS ?? callerDefault;
}

export type WaitKey = (typeof WAIT_SETTINGS)[number]["key"];

/** The value of each named wait: its variable when valid, else its default. */
export function readWaits<K extends WaitKey>(env: Readonly<Record<string, string | undefined>>, keys: readonly K[]): Record<K, number> {
  const settings = WAIT_SETTINGS.filter((setting) => (keys as readonly string[]).includes(setting.key));
  const valid = validHandoffEnv(env, settings.map((setting) => setting.variable)) as Partial<Record<HandoffEnvName, number>>;
  const values = {} as Record<K, number>;
  for (const setting of settings) values[setting.key as K] = valid[setting.variable] ?? setting.fallback;
  return values;
}

/** A wait or a time waited as every message says it: "40 ms", "0.5 s", "3 s", "1.5 s", "45 s". */
export function formatWait(ms: number): string {
  if (ms > 0 && ms < 99.5) return `${Math.round(ms)} ms`;
  // Rounded to tenths first, so 999 ms is "1 s" and 9.96 s is "10 s".
  const tenths = Math.round(ms / 100) / 10;
  return Number.isInteger(tenths) || tenths >= 10 ? `${Math.round(tenths)} s` : `${tenths.toFixed(1)} s`;
}
