/**
 * The settings file of `/handoff-worktree`: `<agentDir>/handoff-worktree.json` (the user's) and
 * `<checkout>/.pi/handoff-worktree.json` (the repository's, honoured only in a project Pi trusts).
 *
 * Invariants:
 * - This zod schema is the only definition of the format. It is strict: an unknown key, a value of
 *   the wrong type or a value that could not be used as written is an error that names the file
 *   and the key in one sentence. Nothing is guessed or silently dropped.
 * - Every value that reaches a shell (postCreate commands) or a path (worktreeDir, copy, symlink)
 *   is checked here first: no control characters (a typed newline would run half a line), glob
 *   patterns stay inside the checkout (relative, no `..`, never `.git`), and a worktree template
 *   uses only the documented placeholders and names the branch.
 * - `ports` and `env` (what each handoff reserves and sets for the processes run for it): a port
 *   count and range within the bounds below, variable names a shell can export (never the
 *   handoff's own `PI_HANDOFF_*` nor `PI_CODING_AGENT_DIR`), values without control characters
 *   whose only `${...}` are the port placeholders (`checkPortPlaceholders` checks them against the
 *   merged `ports`, which may come from the other file).
 * - Pure: parsing and checking only; reading the files is `load.ts`.
 */
import { z } from "zod";
import { listMuxKinds, MUX_KINDS, type MuxKind } from "../manifest/locations.ts";
import { ENV_VARIABLE_NAME, hasControlCharacter } from "../text.ts";

/** The placeholders a `worktreeDir` template may use (see README, Configuration). */
export const WORKTREE_DIR_PLACEHOLDERS = {
  repo: "the main checkout's directory name",
  repoParent: "the directory that holds the main checkout",
  branch: "the branch name as a slug (lowercase letters, digits and -)",
} as const;

/** Settings after validation, merged (repository over user, key by key). */
export interface HandoffConfig {
  /** Where a worktree goes: a template with `{repo}`, `{repoParent}`, `{branch}` (required), and `~`. */
  worktreeDir?: string;
  /** Put before the typed branch name (unless it already starts with it), e.g. `pi/`. */
  branchPrefix?: string;
  /** Globs (relative to the main checkout) of untracked or ignored files to copy into the worktree. */
  copy?: string[];
  /** Globs of untracked or ignored files or directories to symlink into the worktree. */
  symlink?: string[];
  /** Shell commands run in the new pane, in the worktree, before Pi starts; Pi starts only if all succeed. */
  postCreate?: string[];
  /** The backend when `--mux` is not given. */
  mux?: MuxKind;
  /** A child's report (or a landing notice) starts a turn in the parent when delivered (default: never). */
  reportsTriggerTurn?: boolean;
  /** How many ports each handoff reserves (0: none), and the range they are taken from. */
  ports?: PortSettings;
  /** Variables for everything run for the handoff; `${PORT}`, `${PORTS}`, `${PORT_<n>}` name its ports. */
  env?: Record<string, string>;
  /**
   * What `pi-handoff land --all` runs in a child's worktree before it lands: a shell command
   * (`sh -c`) or an argument list (no shell), with `checkTimeoutMs` (default `DEFAULT_CHECK_TIMEOUT_MS`).
   */
  check?: string | string[];
  checkTimeoutMs?: number;
}

/** How long a `check` may run when `checkTimeoutMs` is not set: 10 minutes. */
export const DEFAULT_CHECK_TIMEOUT_MS = 10 * 60_000;
/** The bounds of `checkTimeoutMs`: a second to a day. */
const CHECK_TIMEOUT_BOUNDS: readonly [number, number] = [1_000, 24 * 60 * 60_000];

export interface PortSettings {
  count: number;
  /** The first and the last port (both included). */
  range: readonly [number, number];
}

/** Where ports come from when `ports` gives only a count: above the well-known ports and below every system's ephemeral range. */
export const DEFAULT_PORT_RANGE: readonly [number, number] = [20_000, 29_999];
/** The most ports one handoff may reserve. */
export const MAX_PORTS = 16;
/** Ports below this need root to bind. */
const LOWEST_PORT = 1024;
const HIGHEST_PORT = 65_535;
/** Names the launch sets itself: the handoff's own variables and the agent dir the child must share. */
const RESERVED_ENV = (name: string): boolean => name.startsWith("PI_HANDOFF_") || name === "PI_CODING_AGENT_DIR";

export const CONFIG_KEYS = [
  "worktreeDir",
  "branchPrefix",
  "copy",
  "symlink",
  "postCreate",
  "mux",
  "reportsTriggerTurn",
  "ports",
  "env",
  "check",
  "checkTimeoutMs",
] as const satisfies ReadonlyArray<keyof HandoffConfig>;

/** What each key must hold, for the one-sentence type errors. */
const EXPECTED: Record<(typeof CONFIG_KEYS)[number] | "$schema", string> = {
  $schema: "a string",
  worktreeDir: "a path template (a string)",
  branchPrefix: "a string",
  copy: "a list of glob patterns (strings)",
  symlink: "a list of glob patterns (strings)",
  postCreate: "a shell command or a list of shell commands (strings)",
  mux: listMuxKinds((kind) => JSON.stringify(kind)),
  reportsTriggerTurn: "true or false",
  ports: 'a number of ports, or {"count": <number>, "range": [<first>, <last>]}',
  env: 'an object of variables and their values (strings), like {"DATABASE_URL": "postgres://localhost:${PORT}/app"}',
  check: 'a shell command (a string, like "npm test") or an argument list (strings, like ["npm", "test"])',
  checkTimeoutMs: "a number of milliseconds",
};

export const SettingsFileSchema = z.strictObject({
  // Editors offer completion from a `$schema`; accepting it costs nothing and means nothing here.
  $schema: z.string().optional(),
  worktreeDir: z.string().optional(),
  branchPrefix: z.string().optional(),
  copy: z.array(z.string()).optional(),
  symlink: z.array(z.string()).optional(),
  postCreate: z.union([z.string(), z.array(z.string())]).optional(),
  mux: z.enum(MUX_KINDS).optional(),
  reportsTriggerTurn: z.boolean().optional(),
  ports: z
    .union([z.number(), z.strictObject({ count: z.number(), range: z.tuple([z.number(), z.number()]).optional() })])
    .optional(),
  env: z.record(z.string(), z.string()).optional(),
  check: z.union([z.string(), z.array(z.string())]).optional(),
  checkTimeoutMs: z.number().optional(),
});

const MAX_POST_CREATE = 20;

export type ParsedConfig = { ok: true; config: HandoffConfig } | { ok: false; message: string };

/** Validates the parsed JSON of one settings file; `file` is named in every error. */
export function parseConfig(value: unknown, file: string): ParsedConfig {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, message: `${file} must hold one JSON object (like {"branchPrefix": "pi/"}).` };
  }
  const parsed = SettingsFileSchema.safeParse(value);
  if (!parsed.success) return { ok: false, message: describeIssue(parsed.error.issues[0], file) };
  const data = parsed.data;
  const config: HandoffConfig = {};
  const fail = (key: string, why: string): ParsedConfig => ({ ok: false, message: `"${key}" in ${file} ${why}.` });

  if (data.worktreeDir !== undefined) {
    const problem = checkWorktreeTemplate(data.worktreeDir);
    if (problem !== undefined) return fail("worktreeDir", problem);
    config.worktreeDir = data.worktreeDir;
  }
  if (data.branchPrefix !== undefined) {
    if (hasControlCharacter(data.branchPrefix) || /\s/.test(data.branchPrefix))
      return fail("branchPrefix", "must not contain spaces or control characters");
    if (data.branchPrefix.startsWith("-")) return fail("branchPrefix", 'must not start with "-"');
    if (data.branchPrefix !== "") config.branchPrefix = data.branchPrefix;
  }
  for (const key of ["copy", "symlink"] as const) {
    const patterns = data[key];
    if (patterns === undefined) continue;
    for (const pattern of patterns) {
      const problem = checkGlob(pattern);
      if (problem !== undefined) return fail(key, `has ${JSON.stringify(pattern)}, which ${problem}`);
    }
    config[key] = [...patterns];
  }
  if (data.postCreate !== undefined) {
    const commands = typeof data.postCreate === "string" ? [data.postCreate] : data.postCreate;
    if (commands.length > MAX_POST_CREATE)
      return fail("postCreate", `has ${commands.length} commands; at most ${MAX_POST_CREATE} are run`);
    for (const command of commands) {
      if (command.trim() === "") return fail("postCreate", "has an empty command");
      // The commands are typed into a terminal: a newline would submit half a line.
      if (hasControlCharacter(command))
        return fail(
          "postCreate",
          `has ${JSON.stringify(command)}, which contains a newline or another control character; join the lines with && or ;`,
        );
    }
    if (commands.length > 0) config.postCreate = [...commands];
  }
  if (data.mux !== undefined) config.mux = data.mux;
  if (data.reportsTriggerTurn !== undefined) config.reportsTriggerTurn = data.reportsTriggerTurn;
  if (data.ports !== undefined) {
    const ports = checkPorts(data.ports);
    if (typeof ports === "string") return fail("ports", ports);
    config.ports = ports;
  }
  if (data.env !== undefined) {
    for (const [name, value] of Object.entries(data.env)) {
      const problem = checkEnvEntry(name, value);
      if (problem !== undefined) return fail("env", problem);
    }
    config.env = { ...data.env };
  }
  if (data.check !== undefined) {
    const problem = checkCheckCommand(data.check);
    if (problem !== undefined) return fail("check", problem);
    config.check = typeof data.check === "string" ? data.check : [...data.check];
  }
  if (data.checkTimeoutMs !== undefined) {
    const [least, most] = CHECK_TIMEOUT_BOUNDS;
    if (!Number.isInteger(data.checkTimeoutMs) || data.checkTimeoutMs < least || data.checkTimeoutMs > most)
      return fail(
        "checkTimeoutMs",
        `must be a whole number of milliseconds from ${least} to ${most}, not ${data.checkTimeoutMs}`,
      );
    config.checkTimeoutMs = data.checkTimeoutMs;
  }
  return { ok: true, config };
}

/** Why a `check` cannot be run as written, or undefined when it can. */
function checkCheckCommand(check: string | readonly string[]): string | undefined {
  const words = typeof check === "string" ? [check] : check;
  if (words.length === 0 || (words[0] ?? "").trim() === "") return "names no command";
  // A newline in a shell command would run as two; in an argument it is never meant.
  const bad = words.find((word) => hasControlCharacter(word));
  if (bad !== undefined)
    return `has ${JSON.stringify(bad)}, which contains a newline or another control character; join the lines with && or ;`;
  return undefined;
}

/** The port settings, or why they cannot be used. */
function checkPorts(value: number | { count: number; range?: [number, number] | undefined }): PortSettings | string {
  const count = typeof value === "number" ? value : value.count;
  const range = typeof value === "number" || value.range === undefined ? DEFAULT_PORT_RANGE : value.range;
  if (!Number.isInteger(count) || count < 0 || count > MAX_PORTS)
    return `must reserve a whole number of ports from 0 to ${MAX_PORTS}, not ${count}`;
  const [first, last] = range;
  if (![first, last].every((port) => Number.isInteger(port) && port >= LOWEST_PORT && port <= HIGHEST_PORT))
    return `has the range [${first}, ${last}]; ports are whole numbers from ${LOWEST_PORT} to ${HIGHEST_PORT} (lower ones need root)`;
  if (first > last) return `has the range [${first}, ${last}], whose first port is above its last`;
  if (last - first + 1 < count) return `has the range [${first}, ${last}], too small for ${count} ports`;
  return { count, range: [first, last] };
}

/** The placeholders an `env` value may use, for the sentences. */
const PLACEHOLDERS_TEXT =
  "${PORT} (the first port), ${PORT_1}, ${PORT_2} and so on (each port), and ${PORTS} (all, comma-separated)";

/** Why one `env` entry cannot be used, or undefined when it can. */
function checkEnvEntry(name: string, value: string): string | undefined {
  if (!ENV_VARIABLE_NAME.test(name))
    return `has ${JSON.stringify(name)}, which is not a variable name (letters, digits and _, not starting with a digit)`;
  if (RESERVED_ENV(name)) return `sets ${name}, which the handoff sets itself`;
  // Values reach the launcher's params and the environment of every process: a newline or NUL there is never data.
  if (hasControlCharacter(value))
    return `sets ${name} to ${JSON.stringify(value)}, which contains a newline or another control character`;
  const unknown = placeholdersOf(value).find((placeholder) => portIndexOf(placeholder) === undefined);
  if (unknown !== undefined) return `sets ${name} with ${unknown}; the placeholders are ${PLACEHOLDERS_TEXT}`;
  return undefined;
}

/** Every `${...}` in a value, as written; an unclosed `${` is one too. */
function placeholdersOf(value: string): string[] {
  return [...value.matchAll(/\$\{[^}]*\}?/g)].map((match) => match[0]);
}

/** 1-based index a placeholder stands for (`${PORT}` is 1), 0 for `${PORTS}`, undefined when it is none. */
function portIndexOf(placeholder: string): number | undefined {
  if (placeholder === "${PORT}") return 1;
  if (placeholder === "${PORTS}") return 0;
  const match = /^\$\{PORT_([1-9]\d?)\}$/.exec(placeholder);
  return match === null ? undefined : Number(match[1]);
}

/**
 * Why the merged settings' `env` names a port that `ports` does not reserve (the two keys may come
 * from different files), or undefined when every placeholder has its port.
 */
export function checkPortPlaceholders(config: HandoffConfig): string | undefined {
  const count = config.ports?.count ?? 0;
  for (const [name, value] of Object.entries(config.env ?? {})) {
    for (const placeholder of placeholdersOf(value)) {
      const index = portIndexOf(placeholder) ?? 0;
      if (index > count || count === 0)
        return `sets ${name} with ${placeholder}, but "ports" reserves ${count === 0 ? "none" : `only ${count}`}`;
    }
  }
  return undefined;
}

/** A value with its placeholders replaced by the reserved ports (checked by `checkPortPlaceholders`). */
export function fillPortPlaceholders(value: string, ports: readonly number[]): string {
  return value.replace(/\$\{[^}]*\}/g, (placeholder) => {
    const index = portIndexOf(placeholder);
    if (index === 0) return ports.join(",");
    const port = index === undefined ? undefined : ports[index - 1];
    if (port === undefined) throw new Error(`No port for ${placeholder}: the settings were not checked.`);
    return String(port);
  });
}

function describeIssue(issue: z.core.$ZodIssue | undefined, file: string): string {
  if (issue === undefined) return `${file} is not a valid handoff-worktree settings file.`;
  const key = issue.path[0];
  if (issue.code === "unrecognized_keys" && typeof key === "string" && key in EXPECTED) {
    // Inside a key's own object (`ports`): the key it belongs to, and what that key holds.
    return `"${key}" in ${file} has the unknown key ${JSON.stringify(issue.keys[0] ?? "?")}; it must be ${EXPECTED[key as keyof typeof EXPECTED]}.`;
  }
  if (issue.code === "unrecognized_keys") {
    const unknown = issue.keys[0] ?? "?";
    return `Unknown key ${JSON.stringify(unknown)} in ${file}; the keys are ${CONFIG_KEYS.join(", ")}.`;
  }
  if (typeof key === "string" && key in EXPECTED) {
    return `"${key}" in ${file} must be ${EXPECTED[key as keyof typeof EXPECTED]}.`;
  }
  return `${file} is not a valid handoff-worktree settings file: ${issue.message}.`;
}

/** Why a `worktreeDir` template cannot be used, or undefined when it can. */
export function checkWorktreeTemplate(template: string): string | undefined {
  if (template.trim() === "") return "is empty";
  if (hasControlCharacter(template)) return "contains a control character";
  const placeholders = [...template.matchAll(/\{([^{}]*)\}/g)].map((match) => match[1] ?? "");
  const unknown = placeholders.find((name) => !(name in WORKTREE_DIR_PLACEHOLDERS));
  if (unknown !== undefined) {
    return `uses {${unknown}}; the placeholders are ${Object.keys(WORKTREE_DIR_PLACEHOLDERS)
      .map((name) => `{${name}}`)
      .join(", ")}`;
  }
  if (/[{}]/.test(template.replace(/\{[^{}]*\}/g, ""))) return "has an unmatched { or }";
  // Without the branch every handoff of a repository would share one directory name.
  if (!placeholders.includes("branch")) return "must contain {branch}, so each handoff gets its own directory";
  return undefined;
}

/** Why a copy/symlink glob cannot be used, or undefined when it can. */
export function checkGlob(pattern: string): string | undefined {
  if (pattern.trim() === "") return "is empty";
  if (hasControlCharacter(pattern)) return "contains a control character";
  if (pattern.startsWith("/") || pattern.startsWith("~") || /^[A-Za-z]:[\\/]/.test(pattern))
    return "is not relative to the checkout";
  const segments = pattern.split(/[\\/]/);
  if (segments.includes("..")) return 'leaves the checkout (".." is not allowed)';
  if (segments[0] === ".git" || segments[0] === ".") {
    return segments[0] === ".git" ? "names git's own directory" : 'starts with "."; write the path without "./"';
  }
  return undefined;
}

/** Merges settings key by key: a key set in `override` replaces the one in `base` (lists too). */
export function mergeConfig(base: HandoffConfig, override: HandoffConfig): HandoffConfig {
  const merged: HandoffConfig = { ...base };
  for (const key of CONFIG_KEYS) {
    const value = override[key];
    if (value !== undefined) Object.assign(merged, { [key]: value });
  }
  return merged;
}

/** The branch a typed name stands for: the prefix in front, unless the name already starts with it. */
export function applyBranchPrefix(name: string, prefix: string | undefined): string {
  if (prefix === undefined || prefix === "" || name.startsWith(prefix)) return name;
  return `${prefix}${name}`;
}
