/**
 * The `PI_HANDOFF_*` environment variables a user sets: one zod schema, the only definition of
 * what each may hold, read the way the settings file is (schema.ts): a value that cannot be used
 * as written is refused in one sentence that names the variable, never ignored or guessed.
 *
 * Invariants:
 * - Pure: reads the given environment object only.
 * - An unset or empty variable (`VAR= pi`) means "not set": the default applies.
 * - Durations are whole milliseconds above 0 (the lineage and watch polls at least 100; the
 *   launch's and the multiplexers' waits within the bounds the README gives, config/waits.ts has
 *   their defaults), the launch attempts a whole number from 1 to 10; the worktree root is
 *   an absolute path (or `~/...`), since a relative one would put worktrees wherever Pi happens to
 *   run, inside the repository.
 * - `PI_HANDOFF_FAULT` (tests only) and the variables the package sets for its children
 *   (`PI_HANDOFF_ID`, `PI_HANDOFF_BRANCH`, ...) are not user settings and are not read here.
 */
import { isAbsolute } from "node:path";
import { z } from "zod";

/** Each variable with the schema of its value (after trimming) and what it must hold, for the sentence. */
const VARIABLES = {
  PI_HANDOFF_WORKTREE_ROOT: {
    schema: z.string().refine((value) => isAbsolute(value) || value === "~" || value.startsWith("~/")),
    expected: "an absolute path (such as ~/worktrees or /srv/worktrees): a relative one would put worktrees inside whatever directory Pi runs in",
  },
  PI_HANDOFF_SHELL_TIMEOUT_MS: { schema: wholeMs(1), expected: "a whole number of milliseconds above 0 (such as 15000)" },
  PI_HANDOFF_CONFIRM_TIMEOUT_MS: { schema: wholeMs(1), expected: "a whole number of milliseconds above 0 (such as 45000)" },
  PI_HANDOFF_POST_CREATE_TIMEOUT_MS: { schema: wholeMs(1), expected: "a whole number of milliseconds above 0 (such as 600000)" },
  PI_HANDOFF_LINEAGE_POLL_MS: { schema: wholeMs(100), expected: "a whole number of milliseconds, at least 100 (such as 2000)" },
  PI_HANDOFF_WATCH_POLL_MS: { schema: wholeMs(100), expected: "a whole number of milliseconds, at least 100 (such as 2000)" },
  PI_HANDOFF_LAUNCH_START_TIMEOUT_MS: { schema: wholeMs(100, 120_000), expected: "a whole number of milliseconds from 100 to 120000 (such as 3000)" },
  PI_HANDOFF_LAUNCH_ATTEMPTS: { schema: wholeMs(1, 10), expected: "a whole number from 1 to 10 (such as 3)" },
  PI_HANDOFF_LAUNCHER_WAIT_MS: { schema: wholeMs(1_000, 3_600_000), expected: "a whole number of milliseconds from 1000 to 3600000 (such as 300000)" },
  PI_HANDOFF_MUX_TIMEOUT_MS: { schema: wholeMs(100, 120_000), expected: "a whole number of milliseconds from 100 to 120000 (such as 5000)" },
  PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS: { schema: wholeMs(1_000, 3_600_000), expected: "a whole number of milliseconds from 1000 to 3600000 (such as 120000)" },
  PI_HANDOFF_HERDR_PING_TIMEOUT_MS: { schema: wholeMs(100, 60_000), expected: "a whole number of milliseconds from 100 to 60000 (such as 3000)" },
} as const;

export type HandoffEnvName = keyof typeof VARIABLES;
export const HANDOFF_ENV_NAMES = Object.keys(VARIABLES) as HandoffEnvName[];

/** The variables as validated; absent when unset. */
export const HandoffEnvSchema = z.object({
  PI_HANDOFF_WORKTREE_ROOT: VARIABLES.PI_HANDOFF_WORKTREE_ROOT.schema.optional(),
  PI_HANDOFF_SHELL_TIMEOUT_MS: VARIABLES.PI_HANDOFF_SHELL_TIMEOUT_MS.schema.optional(),
  PI_HANDOFF_CONFIRM_TIMEOUT_MS: VARIABLES.PI_HANDOFF_CONFIRM_TIMEOUT_MS.schema.optional(),
  PI_HANDOFF_POST_CREATE_TIMEOUT_MS: VARIABLES.PI_HANDOFF_POST_CREATE_TIMEOUT_MS.schema.optional(),
  PI_HANDOFF_LINEAGE_POLL_MS: VARIABLES.PI_HANDOFF_LINEAGE_POLL_MS.schema.optional(),
  PI_HANDOFF_WATCH_POLL_MS: VARIABLES.PI_HANDOFF_WATCH_POLL_MS.schema.optional(),
  PI_HANDOFF_LAUNCH_START_TIMEOUT_MS: VARIABLES.PI_HANDOFF_LAUNCH_START_TIMEOUT_MS.schema.optional(),
  PI_HANDOFF_LAUNCH_ATTEMPTS: VARIABLES.PI_HANDOFF_LAUNCH_ATTEMPTS.schema.optional(),
  PI_HANDOFF_LAUNCHER_WAIT_MS: VARIABLES.PI_HANDOFF_LAUNCHER_WAIT_MS.schema.optional(),
  PI_HANDOFF_MUX_TIMEOUT_MS: VARIABLES.PI_HANDOFF_MUX_TIMEOUT_MS.schema.optional(),
  PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS: VARIABLES.PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS.schema.optional(),
  PI_HANDOFF_HERDR_PING_TIMEOUT_MS: VARIABLES.PI_HANDOFF_HERDR_PING_TIMEOUT_MS.schema.optional(),
});
export type HandoffEnv = z.infer<typeof HandoffEnvSchema>;

export type ReadEnv = { ok: true; env: HandoffEnv } | { ok: false; variable: HandoffEnvName; message: string };

/** The variables `names` (default: all), validated; the first unusable one refuses. */
export function readHandoffEnv(env: Readonly<Record<string, string | undefined>>, names: readonly HandoffEnvName[] = HANDOFF_ENV_NAMES): ReadEnv {
  const present: Record<string, string> = {};
  for (const name of names) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== "") present[name] = value;
  }
  const parsed = HandoffEnvSchema.safeParse(present);
  if (parsed.success) return { ok: true, env: parsed.data };
  const variable = HANDOFF_ENV_NAMES.find((name) => parsed.error.issues.some((issue) => issue.path[0] === name)) ?? names[0] ?? "PI_HANDOFF_WORKTREE_ROOT";
  return {
    ok: false,
    variable,
    message: `${variable} is ${JSON.stringify(present[variable] ?? "")}, but it must be ${VARIABLES[variable].expected}; set it so, or unset it.`,
  };
}

/** The variables' values where they are valid, ignoring those that are not (for code that must not fail: it was checked at the entry point). */
export function validHandoffEnv(env: Readonly<Record<string, string | undefined>>, names: readonly HandoffEnvName[]): HandoffEnv {
  const valid: HandoffEnv = {};
  for (const name of names) {
    const read = readHandoffEnv(env, [name]);
    if (read.ok) Object.assign(valid, read.env);
  }
  return valid;
}

function wholeMs(minimum: number, maximum: number = Number.MAX_SAFE_INTEGER) {
  return z
    .string()
    .regex(/^\d+$/)
    .transform(Number)
    .pipe(z.number().int().min(minimum).max(maximum));
}
