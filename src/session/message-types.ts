/**
 * The custom types of the messages addressed to one session (a child's report or a landing's
 * notice, written by adoption/reports.ts; a note to a child, adoption/notes.ts) and the report's
 * details: apart from the sending code, so that the renderer (pi-extension/renderers.ts, loaded
 * with Pi) and the fork's rule for addressed messages (addressed-messages.ts) load only this.
 *
 * Invariants: this zod schema is the only definition of a report message's details; `commitsTotal`,
 * `summary` and `landing` are absent from messages delivered by older versions.
 */
import { z } from "zod";

export const REPORT_MESSAGE_TYPE = "handoff-worktree-report";
export const NOTE_MESSAGE_TYPE = "handoff-worktree-note";

/** The details of a report message, what its renderer draws from. */
export const ReportMessageDetailsSchema = z.object({
  handoffId: z.string(),
  reportId: z.string(),
  kind: z.enum(["report", "landed"]),
  branch: z.string(),
  commits: z.array(z.string()),
  commitsTotal: z.number().int().nonnegative().optional(),
  /** The first line of the child's words (`report`), shortened. */
  summary: z.string().optional(),
  landing: z.object({ into: z.string(), strategy: z.string(), result: z.string() }).optional(),
});
export type ReportMessageDetails = z.infer<typeof ReportMessageDetailsSchema>;
