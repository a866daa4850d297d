/**
 * The one handoff message appended to a child session: what the model in the worktree is told.
 *
 * Invariants:
 * - The content is bounded (`MAX_HANDOFF_CONTENT_CHARS`) whatever the task's size.
 * - Secrets are redacted and control characters dropped before anything is written.
 * - `details` carries the handoff id, which is how the child's extension finds its manifest.
 */
import { z } from "zod";
import { boundText, redactSecrets, sanitizeText } from "./redact.ts";

export const HANDOFF_MESSAGE_TYPE = "handoff-worktree";
export const MAX_TASK_CHARS = 8_000;
export const MAX_HANDOFF_CONTENT_CHARS = 12_000;

export const HandoffDetailsSchema = z.object({
  handoffId: z.string(),
  manifestPath: z.string(),
  branch: z.string(),
  baseRef: z.string(),
  baseSha: z.string(),
  worktreePath: z.string(),
  mainCheckout: z.string(),
  parentSessionFile: z.string(),
  hasTask: z.boolean(),
  taskOmittedChars: z.number().int().nonnegative(),
  redactions: z.record(z.string(), z.number()),
});
export type HandoffDetails = z.infer<typeof HandoffDetailsSchema>;

export interface HandoffMessageInput {
  handoffId: string;
  manifestPath: string;
  branch: string;
  baseRef: string;
  baseSha: string;
  worktreePath: string;
  mainCheckout: string;
  parentSessionFile: string;
  task?: string;
  /** `--existing`: the branch was checked out as it was, not created from a base. */
  existingBranch?: boolean;
  /** What the worktree was set up with and anything the user was warned about (one line each). */
  setupNotes?: readonly string[];
}

export interface HandoffMessage {
  customType: typeof HANDOFF_MESSAGE_TYPE;
  content: string;
  details: HandoffDetails;
}

/** Clean a task for storage and display: control characters dropped, secrets redacted, size bounded. */
export function prepareTask(task: string | undefined): {
  task?: string;
  omittedChars: number;
  redactions: Record<string, number>;
} {
  const cleaned = sanitizeText(task ?? "").trim();
  if (cleaned.length === 0) return { omittedChars: 0, redactions: {} };
  const { text, redacted } = redactSecrets(cleaned);
  const bounded = boundText(text, MAX_TASK_CHARS);
  return { task: bounded.text, omittedChars: bounded.omittedChars, redactions: redacted };
}

function oneLine(value: string): string {
  return sanitizeText(value).replace(/\s+/g, " ");
}

export function buildHandoffMessage(input: HandoffMessageInput): HandoffMessage {
  const prepared = prepareTask(input.task);
  const baseLabel = input.baseRef === input.baseSha ? input.baseSha : `${oneLine(input.baseRef)} at ${input.baseSha}`;
  const lines = [
    "# Handoff to a new git worktree",
    "",
    "This conversation was handed off from another session into its own git worktree.",
    "From here on, work only inside this worktree; the original checkout belongs to the other session.",
    "",
    input.existingBranch === true
      ? `- Branch: ${oneLine(input.branch)} (an existing branch, checked out as it was, at ${input.baseSha})`
      : `- Branch: ${oneLine(input.branch)} (new, created from ${baseLabel})`,
    `- Worktree: ${oneLine(input.worktreePath)}`,
    `- Main checkout: ${oneLine(input.mainCheckout)}`,
    `- Parent session: ${oneLine(input.parentSessionFile)}`,
    `- Handoff id: ${input.handoffId}`,
    "",
  ];
  const notes = (input.setupNotes ?? [])
    .map((note) => redactSecrets(oneLine(note)).text)
    .filter((note) => note.length > 0);
  if (notes.length > 0) lines.push("## Worktree setup", "", ...notes.map((note) => `- ${note}`), "");
  if (prepared.task !== undefined) {
    lines.push("## Task", "", prepared.task);
    if (prepared.omittedChars > 0) {
      lines.push("", `[The task was cut here: ${prepared.omittedChars} more characters were not included.]`);
    }
  } else {
    lines.push("No task was given with the handoff: wait for the user's next message before doing anything.");
  }
  const bounded = boundText(lines.join("\n"), MAX_HANDOFF_CONTENT_CHARS);
  return {
    customType: HANDOFF_MESSAGE_TYPE,
    content: bounded.text,
    details: {
      handoffId: input.handoffId,
      manifestPath: input.manifestPath,
      branch: input.branch,
      baseRef: input.baseRef,
      baseSha: input.baseSha,
      worktreePath: input.worktreePath,
      mainCheckout: input.mainCheckout,
      parentSessionFile: input.parentSessionFile,
      hasTask: prepared.task !== undefined,
      taskOmittedChars: prepared.omittedChars + bounded.omittedChars,
      redactions: prepared.redactions,
    },
  };
}
