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
 * - Pure: parsing and checking only; reading the files is `load.ts`.
 */
import { z } from "zod";
import type { MuxKind } from "../manifest/schema.ts";
import { hasControlCharacter } from "../text.ts";

/** The placeholders a `worktreeDir` template may use (see README, Configuration). */
export const WORKTREE_DIR_PLACEHOLDERS = {
  repo: "the main checkout's directory name",
  repoParent: "the directory that holds the main checkout",
  branch: "the branch name as a slug (lowercase letters, digits and -)",
} as const;
export type WorktreeDirPlaceholder = keyof typeof WORKTREE_DIR_PLACEHOLDERS;

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
}

export const CONFIG_KEYS = ["worktreeDir", "branchPrefix", "copy", "symlink", "postCreate", "mux", "reportsTriggerTurn"] as const satisfies ReadonlyArray<keyof HandoffConfig>;

/** What each key must hold, for the one-sentence type errors. */
const EXPECTED: Record<(typeof CONFIG_KEYS)[number] | "$schema", string> = {
  $schema: "a string",
  worktreeDir: "a path template (a string)",
  branchPrefix: "a string",
  copy: "a list of glob patterns (strings)",
  symlink: "a list of glob patterns (strings)",
  postCreate: "a shell command or a list of shell commands (strings)",
  mux: '"tmux" or "herdr"',
  reportsTriggerTurn: "true or false",
};

export const SettingsFileSchema = z.strictObject({
  // Editors offer completion from a `$schema`; accepting it costs nothing and means nothing here.
  $schema: z.string().optional(),
  worktreeDir: z.string().optional(),
  branchPrefix: z.string().optional(),
  copy: z.array(z.string()).optional(),
  symlink: z.array(z.string()).optional(),
  postCreate: z.union([z.string(), z.array(z.string())]).optional(),
  mux: z.enum(["tmux", "herdr"]).optional(),
  reportsTriggerTurn: z.boolean().optional(),
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
    if (hasControlCharacter(data.branchPrefix) || /\s/.test(data.branchPrefix)) return fail("branchPrefix", "must not contain spaces or control characters");
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
    if (commands.length > MAX_POST_CREATE) return fail("postCreate", `has ${commands.length} commands; at most ${MAX_POST_CREATE} are run`);
    for (const command of commands) {
      if (command.trim() === "") return fail("postCreate", "has an empty command");
      // The commands are typed into a terminal: a newline would submit half a line.
      if (hasControlCharacter(command)) return fail("postCreate", `has ${JSON.stringify(command)}, which contains a newline or another control character; join the lines with && or ;`);
    }
    if (commands.length > 0) config.postCreate = [...commands];
  }
  if (data.mux !== undefined) config.mux = data.mux;
  if (data.reportsTriggerTurn !== undefined) config.reportsTriggerTurn = data.reportsTriggerTurn;
  return { ok: true, config };
}

function describeIssue(issue: z.core.$ZodIssue | undefined, file: string): string {
  if (issue === undefined) return `${file} is not a valid handoff-worktree settings file.`;
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "?";
    return `Unknown key ${JSON.stringify(key)} in ${file}; the keys are ${CONFIG_KEYS.join(", ")}.`;
  }
  const key = issue.path[0];
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
    return `uses {${unknown}}; the placeholders are ${Object.keys(WORKTREE_DIR_PLACEHOLDERS).map((name) => `{${name}}`).join(", ")}`;
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
  if (pattern.startsWith("/") || pattern.startsWith("~") || /^[A-Za-z]:[\\/]/.test(pattern)) return "is not relative to the checkout";
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
