/**
 * The `PI_HANDOFF_*` environment variables a user sets: one zod schema, the only definition of
 * what each may hold, read the way the settings file is (schema.ts): a value that cannot be used
 * as written is refused in one sentence that names the variable, never ignored or guessed.
 *
 * Invariants:
 * - Pure: reads the given environment object only.
 * - An unset or empty variable (`VAR= pi`) means "not set": the default applies.
 * - Durations are whole milliseconds within the bounds below, with the default each has when
 *   unset (the only place a default is written; the README's table states both, compared by
 *   test/unit/docs.test.ts and test/unit/launch-timeouts.test.ts), the launch attempts a whole
 *   number from 1 to 10; the worktree root is
 *   an absolute path (or `~/...`), since a relative one would put worktrees wherever Pi happens to
 *   run, inside the repository.
 * - `PI_HANDOFF_FAULT` (tests only) and the variables the package sets for its children
 *   (`PI_HANDOFF_ID`, `PI_HANDOFF_BRANCH`, `PI_HANDOFF_PORT`, ...) are not user settings and are not read here.
 */
import { isAbsolute } from "node:path";
import { z } from "zod";

/** Each variable with the schema of its value (after trimming) and what it must hold, for the sentence. */
const VARIABLES = {
  PI_HANDOFF_WORKTREE_ROOT: {
    schema: z.string().refine((value) => isAbsolute(value) || value === "~" || value.startsWith("~/")),
    expected:
      "an absolute path (such as ~/worktrees or /srv/worktrees): a relative one would put worktrees inside whatever directory Pi runs in",
  },
  PI_HANDOFF_SHELL_TIMEOUT_MS: whole(100, 600_000, 15_000),
  PI_HANDOFF_CONFIRM_TIMEOUT_MS: whole(100, 600_000, 45_000),
  PI_HANDOFF_POST_CREATE_TIMEOUT_MS: whole(1_000, 86_400_000, 600_000),
  PI_HANDOFF_LINEAGE_POLL_MS: whole(100, undefined, 2_000),
  PI_HANDOFF_WATCH_POLL_MS: whole(100, undefined, 2_000),
  PI_HANDOFF_LAUNCH_START_TIMEOUT_MS: whole(100, 120_000, 3_000),
  PI_HANDOFF_LAUNCH_ATTEMPTS: whole(1, 10, 3, "number"),
  PI_HANDOFF_LAUNCHER_WAIT_MS: whole(1_000, 3_600_000, 300_000),
  PI_HANDOFF_MUX_TIMEOUT_MS: whole(100, 120_000, 5_000),
  PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS: whole(1_000, 3_600_000, 120_000),
  PI_HANDOFF_HERDR_PING_TIMEOUT_MS: whole(100, 60_000, 3_000),
  // No default of its own: unset, each git caller keeps its bound (config/waits.ts `gitCallMs`).
  PI_HANDOFF_GIT_TIMEOUT_MS: exampleOnly(whole(1_000, 3_600_000, 60_000)),
  PI_HANDOFF_GIT_FETCH_TIMEOUT_MS: whole(1_000, 3_600_000, 30_000),
  PI_HANDOFF_GIT_WORKTREE_TIMEOUT_MS: whole(1_000, 86_400_000, 600_000),
} as const;

/** The value a numeric variable stands for when it is unset. */
export function envDefault(name: NumericEnvName): number {
  return VARIABLES[name].fallback;
}

export type NumericEnvName = {
  [K in HandoffEnvName]: (typeof VARIABLES)[K] extends { fallback: number } ? K : never;
}[HandoffEnvName];

/** The bounds of each numeric variable, for the README's table (checked by test/unit/docs.test.ts). */
export const NUMERIC_BOUNDS: Readonly<Partial<Record<HandoffEnvName, { minimum: number; maximum?: number }>>> =
  Object.fromEntries(
    Object.entries(VARIABLES).flatMap(([name, variable]) => ("bounds" in variable ? [[name, variable.bounds]] : [])),
  );

export type HandoffEnvName = keyof typeof VARIABLES;
export const HANDOFF_ENV_NAMES = Object.keys(VARIABLES) as HandoffEnvName[];

/** The variables as validated; absent when unset (one optional field per entry of the table above). */
export const HandoffEnvSchema = z.object(
  Object.fromEntries(Object.entries(VARIABLES).map(([name, variable]) => [name, variable.schema.optional()])) as {
    [K in HandoffEnvName]: z.ZodOptional<(typeof VARIABLES)[K]["schema"]>;
  },
);
export type HandoffEnv = z.infer<typeof HandoffEnvSchema>;

export type ReadEnv = { ok: true; env: HandoffEnv } | { ok: false; variable: HandoffEnvName; message: string };

/** The variables `names` (default: all), validated; the first unusable one refuses. */
export function readHandoffEnv(
  env: Readonly<Record<string, string | undefined>>,
  names: readonly HandoffEnvName[] = HANDOFF_ENV_NAMES,
): ReadEnv {
  const present: Record<string, string> = {};
  for (const name of names) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== "") present[name] = value;
  }
  // Nothing set is the usual case, asked for every handoff a listing judges.
  if (Object.keys(present).length === 0) return { ok: true, env: {} };
  const parsed = HandoffEnvSchema.safeParse(present);
  if (parsed.success) return { ok: true, env: parsed.data };
  const variable =
    HANDOFF_ENV_NAMES.find((name) => parsed.error.issues.some((issue) => issue.path[0] === name)) ??
    names[0] ??
    "PI_HANDOFF_WORKTREE_ROOT";
  return {
    ok: false,
    variable,
    message: `${variable} is ${JSON.stringify(present[variable] ?? "")}, but it must be ${VARIABLES[variable].expected}; set it so, or unset it.`,
  };
}

/** The variables' values where they are valid, ignoring those that are not (for code that must not fail: it was checked at the entry point). */
export function validHandoffEnv(
  env: Readonly<Record<string, string | undefined>>,
  names: readonly HandoffEnvName[],
): HandoffEnv {
  const valid: HandoffEnv = {};
  for (const name of names) {
    const read = readHandoffEnv(env, [name]);
    if (read.ok) Object.assign(valid, read.env);
  }
  return valid;
}

/**
 * A whole number (of milliseconds, unless `unit` says otherwise) from `minimum` to `maximum`, with
 * the sentence that says so; `fallback` is the default, shown as "such as".
 */
function whole(
  minimum: number,
  maximum: number | undefined,
  fallback: number,
  unit: "milliseconds" | "number" = "milliseconds",
) {
  const what = unit === "number" ? "a whole number" : "a whole number of milliseconds";
  const range = maximum === undefined ? `, at least ${minimum}` : ` from ${minimum} to ${maximum}`;
  return {
    schema: z
      .string()
      .regex(/^\d+$/)
      .transform(Number)
      .pipe(
        z
          .number()
          .int()
          .min(minimum)
          .max(maximum ?? Number.MAX_SAFE_INTEGER),
      ),
    expected: `${what}${range} (such as ${fallback})`,
    bounds: maximum === undefined ? { minimum } : { minimum, maximum },
    fallback,
  };
}

/** A variable whose figure in the sentence is only an example: it has no default of its own. */
function exampleOnly<T extends { fallback: number }>(variable: T): Omit<T, "fallback"> {
  const { fallback: _example, ...rest } = variable;
  return rest;
}
