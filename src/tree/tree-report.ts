/**
 * The published shape of `pi-handoff tree --json`: the handoff tree of sessions, each node with its
 * handoff's state and what the node cost itself and with everything under it.
 *
 * Invariants:
 * - This zod schema is the only definition of the report (schemas/tree-report.schema.json is
 *   generated from it); `version` changes on any incompatible change.
 * - `own` is `usage` plus the costed `runs`; `total` is `own` plus every child's `total`, so the
 *   root's `total` is the whole tree's and nothing is counted twice.
 * - Tokens are Pi's (input, output, cache read, cache write); `cost` is the sum of `usage.cost.total`
 *   Pi records (dollars, as the provider's catalog prices them: 0 for a free or unpriced model).
 */
import { z } from "zod";
import { HandoffStateSchema } from "../manifest/schema.ts";
import { FORK_POINTS, UsageTotalsSchema } from "../session/usage.ts";
import { RunCostSchema } from "./run-costs.ts";

export const TREE_JSON_VERSION = 1;

const isoTime = z.string().datetime({ offset: true });

/** The handoff that made a node's session: as `list` judges it, or what an unreadable manifest still says. */
export const TreeHandoffSchema = z.discriminatedUnion("code", [
  z.strictObject({
    code: z.literal("handoff"),
    id: z.string(),
    branch: z.string(),
    /** The manifest's state. */
    state: HandoffStateSchema,
    /** The status as `pi-handoff list` says it (`child running (pid 42)`, `removed`), and its code. */
    status: z.string(),
    statusCode: z.string(),
    /** The child's own state (`idle 2m`, `working`), when it publishes one. */
    child: z.string().optional(),
    /** Commits of the branch its target lacks, and commits the target has that the branch lacks (absent when the branch cannot be read). */
    ahead: z.number().int().nonnegative().optional(),
    behind: z.number().int().nonnegative().optional(),
    /** Its commits are in its target (by the rule `list` uses), or a landing of it is recorded. */
    landed: z.boolean(),
    removed: z.boolean(),
  }),
  /** A manifest this version cannot read (an older or newer format): what it still says, and why. */
  z.strictObject({
    code: z.literal("unreadable"),
    id: z.string(),
    path: z.string(),
    error: z.string(),
    branch: z.string().optional(),
    state: z.string().optional(),
  }),
]);
export type TreeHandoff = z.infer<typeof TreeHandoffSchema>;

/** The node's session file: read (`pending`: its last line was still being written), gone, or never recorded. */
export const TreeSessionSchema = z.discriminatedUnion("code", [
  z.strictObject({
    code: z.literal("read"),
    file: z.string(),
    bytes: z.number().int().nonnegative(),
    pending: z.boolean(),
  }),
  z.strictObject({ code: z.literal("missing"), file: z.string() }),
  z.strictObject({ code: z.literal("none") }),
]);

export const TreeNodeSchema = z
  .strictObject({
    /** Absent for a root: a conversation no handoff made. */
    handoff: TreeHandoffSchema.optional(),
    session: TreeSessionSchema,
    /** What the session added itself, after its fork point (`forkPoint`, see src/session/usage.ts). */
    usage: UsageTotalsSchema,
    forkPoint: z.enum(FORK_POINTS),
    /** Background runs the session started, each with its cost when its record says it. */
    runs: z.array(RunCostSchema),
    own: UsageTotalsSchema,
    total: UsageTotalsSchema,
    get children() {
      return z.array(TreeNodeSchema);
    },
  })
  .meta({ id: "TreeNode" });
export type TreeNode = z.infer<typeof TreeNodeSchema>;

/** `pi-handoff tree --json`. */
export const TreeReportSchema = z.strictObject({
  version: z.literal(TREE_JSON_VERSION),
  agentDir: z.string(),
  generatedAt: isoTime,
  roots: z.array(TreeNodeSchema),
  /** Every root's total: the whole of what was asked. */
  total: UsageTotalsSchema,
});
export type TreeReport = z.infer<typeof TreeReportSchema>;
