/**
 * The published shape of recovery's reports: what `pi-handoff list --json` and
 * `pi-handoff inspect --json` print, and what the shared inventory returns to `/handoffs`.
 *
 * Invariants:
 * - These zod schemas are the only definition of the reports; the TypeScript types are inferred
 *   from them, so the code cannot drift from what is published.
 * - `version` changes on any incompatible change; fields may be added compatibly.
 * - Every outcome is a discriminated union on `code`; each variant carries what a person or a
 *   script needs to act on it, and nothing that depends on the terminal it is shown in.
 */
import { z } from "zod";
import {
  HandoffStateSchema,
  HandoffStepSchema,
  LANDING_STATES,
  REBASE_STATES,
  LandStrategySchema,
  ManifestSchema,
  MuxLocationSchema,
  PortSchema,
  StepTimeSchema,
} from "../manifest/schema.ts";
import { CHILD_STATES } from "./status.ts";
import { ChildReportSchema } from "../manifest/child-reports.ts";

export const RECOVERY_JSON_VERSION = 1;

const sha = z.string().regex(/^[0-9a-f]{40,64}$/);
const isoTime = z.string().datetime({ offset: true });

/** A variant that carries nothing but its code (a fresh object each time: the JSON Schema inlines it). */
function bare<const Code extends string>(code: Code) {
  return z.strictObject({ code: z.literal(code) });
}

/** The variant of a fact that could not be read, with the sentence saying why. */
function unreadable() {
  return z.strictObject({ code: z.literal("unknown"), message: z.string() });
}

export const CommitSummarySchema = z.strictObject({ sha, subject: z.string() });

/** Commits of some kind: how many there are, and the newest of them (possibly not all). */
export const CommitListSchema = z.strictObject({
  total: z.number().int().nonnegative(),
  commits: z.array(CommitSummarySchema),
});
export type CommitList = z.infer<typeof CommitListSchema>;

/** Why a live process counts as a writer of the child session. */
export const WRITER_EVIDENCE = ["lease", "recorded_pid", "marker", "cwd", "herdr_agent"] as const;
export const LiveWriterSchema = z.strictObject({
  pid: z.number().int().positive(),
  /**
   * `lease`: the Pi holding the live lease on the child session (child/lease.ts), the first
   * evidence, the same on every platform; `recorded_pid`: the pid the manifest recorded is alive and is a `pi` that matches the handoff;
   * `marker`: a `pi` carrying `PI_HANDOFF_ID=<id>`; `cwd`: a `pi` working in the worktree (Herdr
   * restarts Pi there by itself, without the marker); `herdr_agent`: Herdr sees an agent running in
   * the handoff's pane on the child session (its `agent_status` and `agent_session`), which holds
   * where process details cannot be read.
   */
  evidence: z.array(z.enum(WRITER_EVIDENCE)).min(1),
});
export type LiveWriter = z.infer<typeof LiveWriterSchema>;

/** The checkout on disk, compared with what git says about it. */
export const WorktreeFactSchema = z.discriminatedUnion("code", [
  /** The directory exists and git lists it as a worktree on the handoff's branch. */
  bare("present"),
  /** The directory is gone and git no longer lists it (or it was never created). */
  bare("missing"),
  /** The directory is gone but git still lists it: `git worktree prune` would drop the entry. */
  bare("prunable"),
  /**
   * The directory exists, empty, and git does not list it: the handoff claimed it for a checkout
   * git never made (it was killed in between). Removing it loses nothing.
   */
  bare("claimed"),
  /** The directory exists but is not git's worktree of the handoff's branch any more. */
  z.strictObject({ code: z.literal("orphaned"), reason: z.string() }),
]);
export type WorktreeFact = z.infer<typeof WorktreeFactSchema>;

/** The terminal workspace (tmux window, Herdr workspace) the child runs in. */
export const WorkspaceFactSchema = z.discriminatedUnion("code", [
  z.strictObject({
    code: z.literal("open"),
    /** Where the pane is now when it answered under new ids (a moved Herdr pane); recorded by recovery. */
    location: MuxLocationSchema.optional(),
    /** What the multiplexer says runs there (Herdr's `agent_status`, the session its agent reported). */
    agent: z
      .strictObject({
        status: z.string(),
        /** The agent Herdr sees in the pane (`pi` for the child), also while its state is `unknown`. */
        label: z.string().optional(),
        sessionFile: z.string().optional(),
        pids: z.array(z.number().int().positive()).optional(),
      })
      .optional(),
  }),
  bare("closed"),
  /** The handoff never got one (it failed before). */
  bare("none"),
  /** The backend could not be asked (not running here, not supported). */
  unreadable(),
]);
export type WorkspaceFact = z.infer<typeof WorkspaceFactSchema>;

/**
 * Why the branch counts as merged (git/types.ts `MergedBy`): `ancestry` (its tip is in the target),
 * `landing` (this package landed exactly this tip and the target still holds `landed`, the commit
 * it made), `patch` (every commit's patch is in the target: a rebase), `tree` (merging it would
 * change nothing: a squash).
 */
export const MERGE_RULES = ["ancestry", "landing", "patch", "tree"] as const;
export const MergedSchema = z.strictObject({ rule: z.enum(MERGE_RULES), landed: sha.optional() });
export type MergedFact = z.infer<typeof MergedSchema>;

export const BranchFactSchema = z.discriminatedUnion("code", [
  z.strictObject({
    code: z.literal("present"),
    tip: sha,
    /** What "merged" is measured against: the base ref as it resolves now (the base SHA when it no longer resolves). */
    mergeTarget: z.strictObject({ ref: z.string(), sha }),
    /** Commits since the base commit the handoff started from. */
    aheadOfBase: z.number().int().nonnegative(),
    /** Commits whose changes are not in the merge target (by any rule of `merged`): deleting the branch would lose them. */
    unmerged: CommitListSchema,
    /** Set when the branch has commits and all their changes are in the merge target, with the rule that says so. */
    merged: MergedSchema.optional(),
    /** Commits the merge target has that the branch lacks: how far the target moved past it. */
    behind: z.number().int().nonnegative().optional(),
    /** Commits since the base that no remote-tracking branch contains. */
    unpushed: CommitListSchema,
  }),
  bare("gone"),
  unreadable(),
]);
export type BranchFact = z.infer<typeof BranchFactSchema>;

export const ChangesSchema = z.strictObject({
  dirtyFiles: z.array(z.string()),
  untrackedFiles: z.array(z.string()),
});
export type Changes = z.infer<typeof ChangesSchema>;

/**
 * One reserved port as `inspect` finds it, by a bind test on 127.0.0.1 and ::1 and who listens:
 * `free`; `in_use_by_handoff` (its own processes: the handoff's marker, or working in its worktree;
 * a server it runs); `taken` by someone else (the processes this user can see; none listed when
 * the listener is another user's); `unknown` when it could not be told, with why.
 */
export const PortCheckSchema = z.discriminatedUnion("code", [
  z.strictObject({ code: z.literal("free"), port: PortSchema }),
  z.strictObject({
    code: z.literal("in_use_by_handoff"),
    port: PortSchema,
    pids: z.array(z.number().int().positive()).min(1),
  }),
  z.strictObject({
    code: z.literal("taken"),
    port: PortSchema,
    holders: z.array(z.strictObject({ pid: z.number().int().positive(), name: z.string() })),
  }),
  z.strictObject({ code: z.literal("unknown"), port: PortSchema, message: z.string() }),
]);
export type PortCheck = z.infer<typeof PortCheckSchema>;

/** The one-word verdict on a handoff, most urgent first (see classify.ts for the order). */
export const HandoffStatusSchema = z.discriminatedUnion("code", [
  z.strictObject({ code: z.literal("removed"), at: isoTime.optional() }),
  /** A live Pi works on the child session (or in the worktree): nothing may start another one. */
  z.strictObject({ code: z.literal("child_running"), writers: z.array(LiveWriterSchema).min(1) }),
  /**
   * The transaction has not finished; `inProgress` when it changed the manifest recently and its
   * process (`owner`, when the manifest records it) is alive: it may still be running.
   */
  z.strictObject({
    code: z.literal("unfinished"),
    step: HandoffStepSchema,
    inProgress: z.boolean(),
    owner: z.strictObject({ pid: z.number().int().positive(), alive: z.boolean() }).optional(),
  }),
  /** The handoff failed at `step`; `worktreeCreated` is false when it failed before any worktree existed. */
  z.strictObject({
    code: z.literal("failed"),
    step: HandoffStepSchema,
    message: z.string(),
    worktreeCreated: z.boolean(),
  }),
  bare("worktree_missing"),
  bare("prunable"),
  z.strictObject({ code: z.literal("orphaned_checkout"), reason: z.string() }),
  /** Typed, but the child never confirmed its start. */
  // `launch`: the line was typed and no launcher started; `confirm`: it started, nothing confirmed.
  z.strictObject({ code: z.literal("unconfirmed"), step: z.enum(["launch", "confirm"]), message: z.string() }),
  /** The worktree is there, no Pi runs on it, and its window/workspace is closed. */
  bare("workspace_closed"),
  /** The worktree and its window are there, but no Pi runs on it. */
  bare("no_child"),
]);
export type HandoffStatus = z.infer<typeof HandoffStatusSchema>;

export const HANDOFF_FLAGS = ["dirty", "untracked", "unpushed", "unmerged", "merged"] as const;
export const HandoffFlagSchema = z.enum(HANDOFF_FLAGS);
export type HandoffFlag = z.infer<typeof HandoffFlagSchema>;

export const RECOVERY_ACTIONS = ["relaunch", "focus", "land", "remove", "prune"] as const;
export const RecoveryActionSchema = z.enum(RECOVERY_ACTIONS);
export type RecoveryAction = z.infer<typeof RecoveryActionSchema>;

/** The child as its parent sees it (inventory/status.ts): its state and since when. */
export const ChildStatusSchema = z.strictObject({
  state: z.enum(CHILD_STATES),
  since: isoTime.optional(),
  basis: z.string(),
  /** `working`: the tool the child's Pi runs now, when it said. */
  tool: z.string().optional(),
  /** `exited`: the child's Pi's exit code, when it said. */
  exitCode: z.number().int().optional(),
});

/**
 * `verdict`: `landed` (recorded), `abandoned` (recorded as not done), or for a landing still marked
 * intended (its process died): `landed_unrecorded` (the target is at the new commit),
 * `not_landed` (still at the old one), `unknown` (elsewhere, or unreadable).
 */
export const LandingReportSchema = z.strictObject({
  handoffId: z.string(),
  state: z.enum(LANDING_STATES),
  verdict: z.enum(["landed", "abandoned", "landed_unrecorded", "not_landed", "unknown"]),
  into: z.string(),
  strategy: LandStrategySchema,
  from: sha,
  to: sha,
  commits: z.number().int().nonnegative(),
  at: isoTime,
  targetAt: sha.optional(),
});
export type LandingReport = z.infer<typeof LandingReportSchema>;

/**
 * The latest rebase (`pi-handoff rebase`). `verdict`: `rebased` / `abandoned` / `undone` (recorded; undone: the
 * merge queue moved the branch back to `from`), or for
 * one still marked intended (its process died): `rebased_unrecorded` (the branch is at the new
 * tip), `not_rebased` (still at the old one), `unknown` (elsewhere); for one being moved back by
 * the queue when its process died (`undoing`): `undone_unrecorded` (back at `from`), `not_undone`
 * (still at `to`), `unknown`.
 */
export const RebaseReportSchema = z.strictObject({
  state: z.enum(REBASE_STATES),
  verdict: z.enum([
    "rebased",
    "abandoned",
    "undone",
    "rebased_unrecorded",
    "not_rebased",
    "undone_unrecorded",
    "not_undone",
    "unknown",
  ]),
  onto: z.strictObject({ ref: z.string(), sha }),
  from: sha,
  to: sha,
  commits: z.number().int().nonnegative(),
  at: isoTime,
  branchAt: sha.optional(),
});
export type RebaseReport = z.infer<typeof RebaseReportSchema>;

export const HandoffReportSchema = z.strictObject({
  id: z.string(),
  state: HandoffStateSchema,
  status: HandoffStatusSchema,
  flags: z.array(HandoffFlagSchema),
  /** What can be done now (`pi-handoff <action> <id>`). */
  actions: z.array(RecoveryActionSchema),
  /**
   * Set when it could not be checked whether a Pi writes the child session (the lease could not
   * be read, or the process table could not): relaunch is then refused, with this reason.
   */
  writerUnknown: z.string().optional(),
  branch: z.string(),
  base: z.strictObject({ ref: z.string(), sha }),
  repo: z.string(),
  worktreePath: z.string(),
  /** The recorded child session, else one found through the manifest's intent (see `unrecorded`). */
  childSessionFile: z.string().optional(),
  childSessionExists: z.boolean(),
  /** The recorded window, else one found through the manifest's intent (see `unrecorded`). */
  mux: MuxLocationSchema,
  /**
   * What exists that the manifest does not name yet, found by what it recorded before creating it
   * (the window's name, the session directory): a handoff killed inside a step. `remove` records
   * and handles it like a recorded one.
   */
  unrecorded: z.array(z.enum(["window", "session"])).optional(),
  worktree: WorktreeFactSchema,
  workspace: WorkspaceFactSchema,
  branchState: BranchFactSchema,
  /** Uncommitted work in the worktree; absent when there is no worktree to look at. */
  changes: ChangesSchema.optional(),
  /** Facts that could not be read (each one sentence); the verdict is made without them. */
  problems: z.array(z.string()),
  createdAt: isoTime,
  updatedAt: isoTime,
  /** Optional in the schema: reports from before the child's state was published lack it. */
  child: ChildStatusSchema.optional(),
  /** The latest landing (`pi-handoff land`) and, for one that was interrupted, where its target is now. */
  landing: LandingReportSchema.optional(),
  /** The ports the handoff holds (absent when it reserved none, and once removed: they are free again). */
  ports: z.array(PortSchema).optional(),
  /** Each held port as `inspect` finds it now (not in `list`, which does not test them). */
  portChecks: z.array(PortCheckSchema).optional(),
  /** The latest rebase (`pi-handoff rebase`) and, for one that was interrupted, which tip the branch has. */
  rebase: RebaseReportSchema.optional(),
});
export type HandoffReport = z.infer<typeof HandoffReportSchema>;

export const UnreadableManifestSchema = z.strictObject({ id: z.string(), path: z.string(), error: z.string() });

/** `pi-handoff list --json`. */
export const InventoryReportSchema = z.strictObject({
  version: z.literal(RECOVERY_JSON_VERSION),
  agentDir: z.string(),
  generatedAt: isoTime,
  handoffs: z.array(HandoffReportSchema),
  /** Removed handoffs left out of `handoffs` (shown with `--all`). */
  hiddenRemoved: z.number().int().nonnegative(),
  /** Manifest files that could not be read; they are reported, never repaired. */
  unreadable: z.array(UnreadableManifestSchema),
});
export type InventoryReport = z.infer<typeof InventoryReportSchema>;

/** `pi-handoff env <handoff> --json`: what everything run for the handoff gets, for another shell. */
export const EnvReportSchema = z.strictObject({
  version: z.literal(RECOVERY_JSON_VERSION),
  id: z.string(),
  branch: z.string(),
  worktreePath: z.string(),
  ports: z.array(PortSchema),
  /** In the order the launcher exports them: PI_HANDOFF_PORT, PI_HANDOFF_PORTS, then the settings' env. */
  env: z.record(z.string(), z.string()),
});
export type EnvReport = z.infer<typeof EnvReportSchema>;

/** `pi-handoff inspect <id> --json`: the verdict plus the manifest it was made from, and the child's last report. */
/** Where a handoff spent its time (inventory/step-times.ts): each step's total, then the launch until the child acknowledged. */
export const StepTimesSchema = z.strictObject({
  steps: z.array(StepTimeSchema),
  launchToAckMs: z.number().int().nonnegative().optional(),
});
export type StepTimes = z.infer<typeof StepTimesSchema>;

export const InspectReportSchema = z.strictObject({
  version: z.literal(RECOVERY_JSON_VERSION),
  handoff: HandoffReportSchema,
  manifest: ManifestSchema,
  lastReport: ChildReportSchema.optional(),
  /** Absent for a handoff whose manifest carries no step times (made before they were recorded). */
  stepTimes: StepTimesSchema.optional(),
});

/**
 * One handoff in `pi-handoff forecast --json` (an array of these): the branch it lands into, how
 * many commits that target has that the branch lacks, the files that would conflict landing it now,
 * and, for each sibling (same repository, same target), the files that would conflict between them.
 */
const forecastHandoff = {
  id: z.string(),
  branch: z.string(),
  target: z.string(),
  behind: z.number().int().nonnegative(),
};
/**
 * One handoff's forecast: `to-land` (commits of its own the target lacks: the conflicts they would
 * meet, with the target and with each sibling that has commits to land); `nothing-to-land` (no
 * commits since it started, or none the target lacks); `landed` (its commits are in the target,
 * by the merged rule `rule`). Only `to-land` handoffs are ever party to a conflict.
 */
export const ForecastEntrySchema = z.discriminatedUnion("code", [
  z.strictObject({
    code: z.literal("to-land"),
    ...forecastHandoff,
    conflicts: z.array(z.string()),
    siblings: z.array(z.strictObject({ id: z.string(), branch: z.string(), conflicts: z.array(z.string()) })),
  }),
  z.strictObject({ code: z.literal("nothing-to-land"), ...forecastHandoff }),
  z.strictObject({ code: z.literal("landed"), ...forecastHandoff, rule: z.enum(MERGE_RULES) }),
]);
export type ForecastEntry = z.infer<typeof ForecastEntrySchema>;

/** `pi-handoff forecast --json`. */
export const ForecastReportSchema = z.array(ForecastEntrySchema);
