/**
 * Every wait on an outside system that a user can change: its key and variable, in one table (the
 * README's settings table lists the same, checked by test/unit/launch-timeouts.test.ts). What a
 * value may hold, and its default, is env.ts's, the only definition; an entry point refuses an unusable one
 * (`readHandoffEnv`) before anything waits. `child/timeouts.ts` reads the launch's waits from here,
 * `mux/registry.ts` the multiplexer calls', the composition roots git's.
 *
 * Invariants:
 * - Pure: reads only the environment it is given.
 * - A value that is not valid leaves the default in place (it was refused at the entry point).
 */
import { envDefault, validHandoffEnv, type NumericEnvName } from "./env.ts";

/** Every setting's key and variable, in the order the README documents them. */
const WAIT_VARIABLES = [
  ["shellMs", "PI_HANDOFF_SHELL_TIMEOUT_MS"],
  ["startMs", "PI_HANDOFF_LAUNCH_START_TIMEOUT_MS"],
  ["attempts", "PI_HANDOFF_LAUNCH_ATTEMPTS"],
  ["confirmMs", "PI_HANDOFF_CONFIRM_TIMEOUT_MS"],
  ["postCreateMs", "PI_HANDOFF_POST_CREATE_TIMEOUT_MS"],
  ["paramsWaitMs", "PI_HANDOFF_LAUNCHER_WAIT_MS"],
  ["muxCallMs", "PI_HANDOFF_MUX_TIMEOUT_MS"],
  ["herdrWorktreeMs", "PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS"],
  ["herdrPingMs", "PI_HANDOFF_HERDR_PING_TIMEOUT_MS"],
  ["gitFetchMs", "PI_HANDOFF_GIT_FETCH_TIMEOUT_MS"],
  ["gitWorktreeMs", "PI_HANDOFF_GIT_WORKTREE_TIMEOUT_MS"],
] as const satisfies readonly (readonly [string, NumericEnvName])[];

export type WaitKey = (typeof WAIT_VARIABLES)[number][0];

export interface WaitSetting {
  key: WaitKey;
  variable: NumericEnvName;
  /** The default (env.ts's). */
  fallback: number;
}

/** Every setting with its default, in the order the README documents them. */
export const WAIT_SETTINGS: readonly WaitSetting[] = WAIT_VARIABLES.map(([key, variable]) => ({
  key,
  variable,
  fallback: envDefault(variable),
}));

/** Each wait's default, by key: what a backend or runner uses when its caller gives no bound. */
export const WAIT_DEFAULTS = Object.fromEntries(
  WAIT_SETTINGS.map((setting) => [setting.key, setting.fallback]),
) as Record<WaitKey, number>;

/**
 * The most one git call may take: `PI_HANDOFF_GIT_TIMEOUT_MS` when set, else the caller's own
 * bound (recovery's reads are quick, a landing's merge may be slow), so one variable raises all
 * of them on a slow disk or a huge repository. Completions keep their short bound: they answer
 * while the user types.
 */
export function gitCallMs(env: Readonly<Record<string, string | undefined>>, callerDefault: number): number {
  return validHandoffEnv(env, ["PI_HANDOFF_GIT_TIMEOUT_MS"]).PI_HANDOFF_GIT_TIMEOUT_MS ?? callerDefault;
}

/** The value of each named wait: its variable when valid, else its default. */
export function readWaits<K extends WaitKey>(
  env: Readonly<Record<string, string | undefined>>,
  keys: readonly K[],
): Record<K, number> {
  const settings = WAIT_SETTINGS.filter((setting) => (keys as readonly string[]).includes(setting.key));
  const valid = validHandoffEnv(
    env,
    settings.map((setting) => setting.variable),
  ) as Partial<Record<NumericEnvName, number>>;
  const values = {} as Record<K, number>;
  for (const setting of settings) values[setting.key as K] = valid[setting.variable] ?? setting.fallback;
  return values;
}

/**
 * How often a running Pi polls (adopted runs, the parent's own handoffs): the variable when valid,
 * else its default; /handoff-worktree refuses an unusable one.
 */
export function pollIntervalMs(
  env: Readonly<Record<string, string | undefined>>,
  variable: "PI_HANDOFF_LINEAGE_POLL_MS" | "PI_HANDOFF_WATCH_POLL_MS",
): number {
  return validHandoffEnv(env, [variable])[variable] ?? envDefault(variable);
}
