/**
 * The report message's type and details (lineage/reports.ts writes them): apart from the sending
 * code, so that the renderer (pi-extension/renderers.ts, loaded with Pi) and the fork's rule for
 * addressed messages (session/addressed-messages.ts) load only this.
 *
 * Invariants: this zod schema is the only definition of a report message's details; `commitsTotal`,
 * `summary` and `landing` are absent from messages delivered by older versions.
 */
import { z } from "zod";

export const REPORT_MESSAGE_TYPE = "handoff-worktree-report";

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
