/**
 * The JSON the Herdr CLI prints (shared/reference/herdr-cli.md), as zod schemas, and the one decoder
 * that turns a call's two output streams into a result, an error or "malformed".
 *
 * Invariants:
 * - Unknown extra keys are tolerated (Herdr adds fields between versions); a missing required key
 *   or a wrong type is rejected. Optional fields are absent, never null.
 * - Any id Herdr prints is accepted (today's `w1R:p2`, and the lowercase-hex ids of 0.6.10 and
 *   earlier, which a restore keeps forever: `w18b2c4d5e6f7a1`, tab `w…:1`, pane `w…-1`), because
 *   the backend never parses an id, it only passes it back. Refused is only what could be mistaken
 *   for an option or break an argument: a leading `-`, whitespace, control characters.
 * - Decoding never throws: a success is `{kind: "result"}`, an error envelope `{kind: "error"}`
 *   from whichever stream carries it (stderr normally, stdout in-band), anything else is
 *   `malformed` or `silent` (no output at all).
 * - The test double's conformance test validates the double with these same schemas.
 */
import { z } from "zod";

/**
 * An id as Herdr prints it and as it may be passed back as one argument (see the header). Herdr's
 * own shapes (src/workspace.rs): `w<N>` with N in 123456789ABCDEFGHJKMNPQRSTVWXYZ0 since 0.7, and
 * `w<hex micros><hex counter>` up to 0.6.10 (v0.6.9 src/workspace.rs `generate_workspace_id`).
 */
export const HERDR_ID_PATTERN = /^[^\s\p{Cc}-][^\s\p{Cc}]{0,255}$/u;
export const WORKSPACE_ID_PATTERN = HERDR_ID_PATTERN;
export const TAB_ID_PATTERN = HERDR_ID_PATTERN;
export const PANE_ID_PATTERN = HERDR_ID_PATTERN;

/** Whether `value` is an id this package may pass back to `herdr` (see HERDR_ID_PATTERN). */
export function isHerdrId(value: string | undefined): value is string {
  return value !== undefined && HERDR_ID_PATTERN.test(value);
}

const HerdrIdSchema = z.string().regex(HERDR_ID_PATTERN);
export const WorkspaceIdSchema = HerdrIdSchema;
export const TabIdSchema = HerdrIdSchema;
export const PaneIdSchema = HerdrIdSchema;

/** The statuses Herdr documents; decoding accepts any string so a new status breaks nothing. */
export const AGENT_STATUSES = ["idle", "working", "blocked", "done", "unknown"] as const;

const count = z.number().int().nonnegative();

/**
 * The agent session Herdr holds for a pane (`AgentSessionInfo`, src/api/schema/agents.rs): what an
 * agent reported with `pane report-agent-session`, kept across restarts. For Pi, `kind` is `path`
 * and `value` the session file; Herdr's restore types `pi --session <value>` (src/agent_resume.rs).
 */
export const AgentSessionSchema = z.object({
  source: z.string(),
  agent: z.string(),
  kind: z.string(),
  value: z.string(),
});

/** The statuses that mean Herdr sees an agent running in the pane (`unknown`: none detected). */
export const LIVE_AGENT_STATUSES: ReadonlySet<string> = new Set(
  AGENT_STATUSES.filter((status) => status !== "unknown"),
);

/**
 * What a child Pi is told about itself inside Herdr: `HERDR_AGENT=pi` is Herdr's detection hint
 * (src/platform/mod.rs `parse_agent_env_hint`), so the pane is known as Pi's before Herdr's own
 * process-name detection catches up. For the launch environment (see launch/).
 */
export const HERDR_CHILD_ENV: Readonly<Record<string, string>> = { HERDR_AGENT: "pi" };

/**
 * `pane report-agent-session --source herdr:pi --agent pi`: only this pair is an "official" source
 * Herdr resumes on restore (src/agent_resume.rs `is_official_agent_source`).
 */
export const PI_AGENT_SOURCE = "herdr:pi";
export const PI_AGENT_LABEL = "pi";

export const PaneInfoSchema = z.object({
  pane_id: PaneIdSchema,
  terminal_id: z.string(),
  workspace_id: WorkspaceIdSchema,
  tab_id: TabIdSchema,
  focused: z.boolean(),
  cwd: z.string().optional(),
  foreground_cwd: z.string().optional(),
  agent_status: z.string(),
  agent: z.string().optional(),
  agent_session: AgentSessionSchema.optional(),
  revision: count,
});
export type HerdrPaneInfo = z.infer<typeof PaneInfoSchema>;

export const TabInfoSchema = z.object({
  tab_id: TabIdSchema,
  workspace_id: WorkspaceIdSchema,
});

export const WorkspaceWorktreeSchema = z.object({
  repo_key: z.string(),
  repo_name: z.string(),
  repo_root: z.string(),
  checkout_path: z.string(),
  is_linked_worktree: z.boolean(),
});

export const WorkspaceInfoSchema = z.object({
  workspace_id: WorkspaceIdSchema,
  number: count,
  label: z.string(),
  focused: z.boolean(),
  pane_count: count,
  tab_count: count,
  active_tab_id: TabIdSchema,
  agent_status: z.string(),
  worktree: WorkspaceWorktreeSchema.optional(),
});
export type HerdrWorkspaceInfo = z.infer<typeof WorkspaceInfoSchema>;

export const WorktreeInfoSchema = z.object({
  path: z.string().min(1),
  branch: z.string().optional(),
  is_bare: z.boolean(),
  is_detached: z.boolean(),
  is_prunable: z.boolean(),
  is_linked_worktree: z.boolean(),
  open_workspace_id: WorkspaceIdSchema.optional(),
  label: z.string(),
});
export type HerdrWorktreeInfo = z.infer<typeof WorktreeInfoSchema>;

export const WorktreeSourceSchema = z.object({
  repo_key: z.string(),
  repo_name: z.string(),
  repo_root: z.string(),
  source_checkout_path: z.string(),
  source_workspace_id: WorkspaceIdSchema.optional(),
});

export const ForegroundProcessSchema = z.object({
  pid: z.number().int().positive(),
  name: z.string(),
  argv0: z.string().optional(),
  argv: z.array(z.string()).optional(),
  cmdline: z.string().optional(),
  cwd: z.string().optional(),
});

export const ProcessInfoSchema = z.object({
  pane_id: PaneIdSchema,
  shell_pid: z.number().int().positive().optional(),
  foreground_process_group_id: z.number().int().positive().optional(),
  tty: z.string().optional(),
  // Herdr omits an empty list (skip_serializing_if = Vec::is_empty).
  foreground_processes: z.array(ForegroundProcessSchema).default([]),
});

export const WorktreeCreatedSchema = z.object({
  type: z.literal("worktree_created"),
  workspace: WorkspaceInfoSchema,
  tab: TabInfoSchema,
  root_pane: PaneInfoSchema,
  worktree: WorktreeInfoSchema,
});

export const WorktreeOpenedSchema = z.object({
  type: z.literal("worktree_opened"),
  workspace: WorkspaceInfoSchema,
  tab: TabInfoSchema,
  root_pane: PaneInfoSchema,
  worktree: WorktreeInfoSchema,
  already_open: z.boolean(),
});

export const WorktreeListSchema = z.object({
  type: z.literal("worktree_list"),
  source: WorktreeSourceSchema,
  worktrees: z.array(WorktreeInfoSchema),
});

export const WorktreeRemovedSchema = z.object({
  type: z.literal("worktree_removed"),
  workspace_id: WorkspaceIdSchema,
  path: z.string(),
  forced: z.boolean(),
});

/** A result that carries one value under one key: `{ type, [key]: value }`. */
function resultOf<T extends string, K extends string, V extends z.ZodType>(type: T, key: K, value: V) {
  return z.object({ type: z.literal(type), ...({ [key]: value } as Record<K, V>) });
}

export const WorkspaceInfoResultSchema = resultOf("workspace_info", "workspace", WorkspaceInfoSchema);
export const WorkspaceListSchema = resultOf("workspace_list", "workspaces", z.array(WorkspaceInfoSchema));

export const WorkspaceCreatedSchema = z.object({
  type: z.literal("workspace_created"),
  workspace: WorkspaceInfoSchema,
  tab: TabInfoSchema,
  root_pane: PaneInfoSchema,
});

export const PaneInfoResultSchema = resultOf("pane_info", "pane", PaneInfoSchema);
export const PaneListSchema = resultOf("pane_list", "panes", z.array(PaneInfoSchema));
export const PaneProcessInfoSchema = resultOf("pane_process_info", "process_info", ProcessInfoSchema);

export const OkResultSchema = z.object({ type: z.literal("ok") });

export const ErrorEnvelopeSchema = z.object({
  id: z.string(),
  error: z.object({ code: z.string().min(1), message: z.string() }),
});

export const SuccessEnvelopeSchema = z.object({
  id: z.string(),
  result: z.looseObject({ type: z.string().min(1) }),
});

export type HerdrOutput<T> =
  | { kind: "result"; result: T }
  | { kind: "error"; code: string; message: string }
  | { kind: "malformed"; detail: string }
  | { kind: "silent" };

/** The JSON value a stream carries: the whole text, else its last line that parses. */
function parseStream(text: string): { found: true; value: unknown } | { found: false } {
  const trimmed = text.trim();
  if (trimmed === "") return { found: false };
  try {
    return { found: true, value: JSON.parse(trimmed) };
  } catch {
    // A warning line before the JSON line still leaves one line to decode.
  }
  const lines = trimmed.split("\n").reverse();
  for (const line of lines) {
    const candidate = line.trim();
    if (!candidate.startsWith("{")) continue;
    try {
      return { found: true, value: JSON.parse(candidate) };
    } catch {
      // Not this line.
    }
  }
  return { found: false };
}

function describeIssues(error: z.ZodError): string {
  const first = error.issues[0];
  if (first === undefined) return "unexpected shape";
  const where = first.path.length > 0 ? first.path.join(".") : "(top)";
  return `${where}: ${first.message}`;
}

/**
 * Decodes one call's output: a success envelope whose result matches `schema`, or an error
 * envelope, from stdout or stderr (stdout first: that is where a success and an in-band error go).
 */
export function decodeHerdrOutput<T>(
  streams: { stdout: string; stderr: string },
  schema: z.ZodType<T>,
): HerdrOutput<T> {
  for (const text of [streams.stdout, streams.stderr]) {
    const parsed = parseStream(text);
    if (!parsed.found) continue;
    const error = ErrorEnvelopeSchema.safeParse(parsed.value);
    if (error.success) return { kind: "error", code: error.data.error.code, message: error.data.error.message };
    const envelope = SuccessEnvelopeSchema.safeParse(parsed.value);
    if (!envelope.success)
      return { kind: "malformed", detail: `not a Herdr response envelope (${describeIssues(envelope.error)})` };
    const result = schema.safeParse(envelope.data.result);
    if (!result.success) {
      return {
        kind: "malformed",
        detail: `unexpected ${envelope.data.result.type} result (${describeIssues(result.error)})`,
      };
    }
    return { kind: "result", result: result.data };
  }
  const stdout = streams.stdout.trim();
  if (stdout !== "")
    return { kind: "malformed", detail: `output is not JSON: ${JSON.stringify(stdout.slice(0, 120))}` };
  return { kind: "silent" };
}
