/**
 * The handoff manifest: the ownership record of one handoff, one JSON file per handoff.
 *
 * Invariants:
 * - This zod schema is the only definition of the file format; readers reject anything else.
 * - `version` is bumped on any incompatible change; a reader never guesses at another version.
 * - Every field is serializable, durable in meaning, and needed by recovery or by the user.
 * - `history` is append-only and starts with `provisioning`.
 */
import { z } from "zod";
import { HolderSchema } from "../locks/holder.ts";
import { ENV_VARIABLE_NAME, hasControlCharacter } from "../text.ts";

export const MANIFEST_VERSION = 1;

export const HANDOFF_STATES = [
  "provisioning",
  "provisioned",
  "forked",
  "launching",
  "running",
  "launch_unconfirmed",
  "failed",
  "removed",
] as const;
export const HandoffStateSchema = z.enum(HANDOFF_STATES);
export type HandoffState = z.infer<typeof HandoffStateSchema>;

/** The transaction step that was under way when something went wrong. */
/** `setup` (carried changes, copied files) runs between the worktree and the fork; see handoff/setup.ts. */
export const HANDOFF_STEPS = [
  "preconditions",
  "manifest",
  "worktree",
  "setup",
  "fork",
  "launch",
  "confirm",
  "focus",
] as const;
export const HandoffStepSchema = z.enum(HANDOFF_STEPS);
export type HandoffStep = z.infer<typeof HandoffStepSchema>;

const isoTime = z.string().datetime({ offset: true });

/** How long one step of the handoff command took (a monotonic clock, whole milliseconds). */
export const StepTimeSchema = z.strictObject({
  step: HandoffStepSchema,
  ms: z.number().int().nonnegative(),
});
export type StepTime = z.infer<typeof StepTimeSchema>;

export const HistoryEntrySchema = z.strictObject({
  state: HandoffStateSchema,
  at: isoTime,
  note: z.string().optional(),
  /**
   * The steps the handoff command ran since the entry before (from its start, for the first), each
   * with its time; a step the entry was written in the middle of counts up to the entry and goes
   * on in the next one. Absent in manifests older than these timings and in entries others write
   * (the child's acknowledgement, recovery).
   */
  steps: z.array(StepTimeSchema).optional(),
});
export type HistoryEntry = z.infer<typeof HistoryEntrySchema>;

// Every terminal's location schema and their union: locations.ts, beside this schema that records one.
export { MuxLocationSchema, type MuxKind, type MuxLocation } from "./locations.ts";
import { MuxLocationSchema } from "./locations.ts";

/**
 * The process that runs the handoff's transaction (or its latest relaunch). Recovery waits for an
 * unfinished handoff only while this process lives; once it is gone (killed mid-way), the handoff
 * can be relaunched or removed at once. `start` identifies the process beyond its pid (an opaque
 * start token from src/process/: boot id and start ticks, or `ps:<seconds>`), since pids are
 * reused; absent where no start time could be read. The holder identity of src/locks/ (holder.ts),
 * in the fields this format has always had.
 */
export const ManifestOwnerSchema = HolderSchema.pick({ pid: true, start: true });
export type ManifestOwner = z.infer<typeof ManifestOwnerSchema>;

/**
 * What the handoff is about to create, recorded before it creates it, so that a process killed
 * inside a step (after the window or the child session exists, before the manifest names it)
 * leaves nothing recovery cannot find and name (inventory/gather.ts). Optional, like each field.
 */
export const IntentSchema = z.strictObject({
  /** The name (tmux) / label (Herdr) the window is given, as the backend shows it (mux/label.ts). */
  windowLabel: z.string().min(1).optional(),
  /** The directory the fork writes the child session into; the file name is Pi's choice. */
  sessionDir: z.string().min(1).optional(),
});

export const GitStateSchema = z.strictObject({
  capturedAt: isoTime,
  head: z.string().optional(),
  dirtyFiles: z.array(z.string()),
  untrackedFiles: z.array(z.string()),
  /** Commits on the branch that are not in the base commit. */
  aheadOfBase: z.number().int().nonnegative().optional(),
});
export type GitState = z.infer<typeof GitStateSchema>;

/**
 * What the handoff set up in the worktree beyond checking out the branch. Optional (and every field
 * in it): manifests written before it existed, and handoffs that set up nothing, have none.
 */
export const SetupSchema = z.strictObject({
  /** `--existing`: the branch existed before the handoff, which checked it out as it was (never created it). */
  existingBranch: z.boolean().optional(),
  /** `--carry`: uncommitted changes brought from the parent's checkout `from` (counts; the list is in the handoff message). */
  carried: z
    .strictObject({
      mode: z.enum(["tracked", "all"]),
      from: z.string(),
      changes: z.number().int().nonnegative(),
      untracked: z.number().int().nonnegative(),
    })
    .optional(),
  /** Untracked or ignored entries of the main checkout copied / symlinked into the worktree (settings). */
  copied: z.array(z.string()).optional(),
  symlinked: z.array(z.string()).optional(),
  /**
   * The settings' postCreate commands, run in the pane before Pi (the runner writes `statusFile`).
   * `exitStatus` and `failedCommand` (1-based) are recorded when one failed: then Pi was not started.
   */
  postCreate: z
    .strictObject({
      commands: z.array(z.string()).min(1),
      statusFile: z.string(),
      exitStatus: z.number().int().nonnegative().optional(),
      failedCommand: z.number().int().positive().optional(),
    })
    .optional(),
});

export const LAND_STRATEGIES = ["ff", "rebase", "merge", "squash"] as const;
export const LandStrategySchema = z.enum(LAND_STRATEGIES);
export type LandStrategy = z.infer<typeof LandStrategySchema>;

const fullSha = z.string().regex(/^[0-9a-f]{40,64}$/);

/**
 * One landing of the branch's commits into another branch (`pi-handoff land`). Written as
 * `intended` before the target branch is touched (with the exact commit it will point at), then
 * `landed` once it does, or `abandoned` when a later look finds the target still at `from`: so a
 * land killed at any step leaves a record that says which of the two states the target is in.
 */
export const LANDING_STATES = ["intended", "landed", "abandoned"] as const;
export const LandingSchema = z.strictObject({
  state: z.enum(LANDING_STATES),
  at: isoTime,
  /** The branch landed into, and where it was checked out when the landing was planned. */
  into: z.string().min(1),
  checkout: z.string().optional(),
  strategy: LandStrategySchema,
  /** The target's tip before, and the commit it points at after (planned before acting). */
  from: fullSha,
  to: fullSha,
  /** The handoff branch's tip that was landed, and its commits (oldest first) that the target lacked. */
  branchTip: fullSha,
  commits: z.array(z.strictObject({ sha: fullSha, subject: z.string() })),
  /** When `state` last changed to `landed` or `abandoned`. */
  settledAt: isoTime.optional(),
});
export type Landing = z.infer<typeof LandingSchema>;
export type LandingState = Landing["state"];

/** A landing moves from `intended` once, to `landed` or `abandoned`; nothing else. */
export function canSettleLanding(from: LandingState, to: LandingState): boolean {
  return from === "intended" && (to === "landed" || to === "abandoned");
}

export const PortSchema = z.number().int().min(1).max(65_535);
const EnvNameSchema = z.string().regex(ENV_VARIABLE_NAME);
/** Data for a process's environment and the launcher's params: never a newline or NUL. */
const EnvValueSchema = z.string().refine((value) => !hasControlCharacter(value), "holds a control character");

/**
 * One rebase of the handoff's branch onto its target's tip (`pi-handoff rebase`): written as
 * `intended` before the branch moves (with the exact commit it will point at), then `rebased` once
 * it does, or `abandoned` when a later look finds the branch still at `from`; so a rebase killed at
 * any step leaves a record that says which of the two tips the branch has. `undone`: rebased, then
 * moved back to `from` by the merge queue (`pi-handoff land --all` sent the child back); `undoing`:
 * that move back's intent, written before the branch moves (the queue's next run settles it).
 */
export const REBASE_STATES = ["intended", "rebased", "abandoned", "undoing", "undone"] as const;
export const RebaseSchema = z.strictObject({
  state: z.enum(REBASE_STATES),
  at: isoTime,
  /** The target branch and the tip the commits were re-made on. */
  onto: z.strictObject({ ref: z.string().min(1), sha: fullSha }),
  /** The branch's tip before, and the commit it points at after (planned before acting). */
  from: fullSha,
  to: fullSha,
  /** The branch's commits that were re-made (as they were before), oldest first. */
  commits: z.array(z.strictObject({ sha: fullSha, subject: z.string() })),
  /** When `state` last changed to `rebased`, `abandoned`, `undoing` or `undone`. */
  settledAt: isoTime.optional(),
});
export type Rebase = z.infer<typeof RebaseSchema>;
export type RebaseState = Rebase["state"];

/** A rebase moves from `intended` once, to `rebased` or `abandoned`; nothing else. */
export function canSettleRebase(from: RebaseState, to: RebaseState): boolean {
  return from === "intended" && (to === "rebased" || to === "abandoned");
}

export const ManifestSchema = z.strictObject({
  version: z.literal(MANIFEST_VERSION),
  id: z.string().regex(/^[a-z0-9][a-z0-9-]{2,80}$/),
  createdAt: isoTime,
  updatedAt: isoTime,
  state: HandoffStateSchema,
  history: z.array(HistoryEntrySchema).min(1),
  branch: z.string().min(1),
  base: z.strictObject({ ref: z.string(), sha: z.string().regex(/^[0-9a-f]{40,64}$/) }),
  repo: z.strictObject({ root: z.string(), commonDir: z.string() }),
  parent: z.strictObject({
    sessionFile: z.string(),
    sessionId: z.string(),
    leafId: z.string().nullable(),
    cwd: z.string(),
  }),
  worktree: z.strictObject({ path: z.string() }),
  mux: MuxLocationSchema,
  child: z
    .strictObject({
      sessionFile: z.string().optional(),
      sessionId: z.string().optional(),
      pid: z.number().int().positive().optional(),
      ackAt: isoTime.optional(),
      /** How the launch was confirmed: the child's own acknowledgement or the process probe. */
      confirmedBy: z.enum(["ack", "probe"]).optional(),
      command: z.string().optional(),
      /**
       * How the child was started, recorded at launch so that recovery can start it again in a
       * different environment (the recorded `command` may name a Pi that no longer exists) without
       * guessing the model. Optional: manifests written before these fields existed still parse.
       */
      model: z.strictObject({ provider: z.string().min(1), id: z.string().min(1) }).optional(),
      thinkingLevel: z.string().optional(),
      /** Pi flags mirrored from the parent's command line (`--extension <abs path>`, `--offline`). */
      extraArgs: z.array(z.string()).optional(),
      /** Whether the child was started with `--approve` (only when the parent's project was trusted). */
      approve: z.boolean().optional(),
      /**
       * The child session's directory, chosen once at fork time; `custom` when it is not Pi's
       * default for the worktree (then the child gets `--session-dir`). Absent in older manifests.
       */
      sessionDir: z.strictObject({ dir: z.string(), custom: z.boolean() }).optional(),
    })
    .default({}),
  /**
   * The latest launch: the launcher file beside the manifest, whether the window was created with
   * it as its command (tmux, nothing typed) or how many times its line was typed, and when the
   * launcher announced its start. Absent in older manifests and before the launch step.
   */
  launch: z
    .strictObject({
      launcherFile: z.string(),
      windowCommand: z.boolean().optional(),
      typed: z.number().int().nonnegative().optional(),
      startedAt: isoTime.optional(),
      startedPid: z.number().int().positive().optional(),
    })
    .optional(),
  task: z.string().optional(),
  setup: SetupSchema.optional(),
  /** Optional: manifests written before it existed still parse (they get the 2-minute grace alone). */
  owner: ManifestOwnerSchema.optional(),
  intent: IntentSchema.optional(),
  focus: z.union([z.strictObject({ at: isoTime }), z.strictObject({ error: z.string(), at: isoTime })]).optional(),
  error: z.strictObject({ step: HandoffStepSchema, message: z.string(), at: isoTime }).optional(),
  gitState: GitStateSchema.optional(),
  /** Optional (version-compatible): manifests from before `pi-handoff land` existed have none. Append-only. */
  landings: z.array(LandingSchema).optional(),
  /**
   * The ports reserved for this handoff (settings `ports`), chosen free and held by no other live
   * handoff, under the store's lock, when the manifest was created; held until it is `removed`.
   * Optional (version-compatible): manifests from before, and handoffs that reserve none, have none.
   */
  ports: z.array(PortSchema).min(1).optional(),
  /**
   * The variables the settings' `env` gave this handoff, its port placeholders filled in: with the
   * ports, what the launcher, postCreate and the child Pi get (child/launch-command.ts), the
   * same at every relaunch whatever the settings say by then. Optional, like `ports`.
   */
  env: z.record(EnvNameSchema, EnvValueSchema).optional(),
  /** Optional (version-compatible): manifests from before `pi-handoff rebase` existed have none. Append-only. */
  rebases: z.array(RebaseSchema).optional(),
});
export type Manifest = z.infer<typeof ManifestSchema>;

/** Transitions the transaction may make; anything else is a programming error. */
export const ALLOWED_TRANSITIONS: Readonly<Record<HandoffState, readonly HandoffState[]>> = {
  // `removed` from the unfinished states: recovery (`pi-handoff remove`) may retire a handoff whose
  // transaction died mid-way (the Pi that ran it was killed); it checks that no one is working on it.
  provisioning: ["provisioned", "failed", "removed"],
  provisioned: ["forked", "failed", "removed"],
  forked: ["launching", "failed", "removed"],
  // `launching` again: recovery relaunches a child whose launch was never confirmed because the
  // process that typed the command died before it could record the outcome.
  launching: ["running", "launch_unconfirmed", "failed", "launching", "removed"],
  // A late acknowledgement turns an unconfirmed launch into a running one; relaunch goes back to launching.
  launch_unconfirmed: ["running", "launching", "failed", "removed"],
  running: ["launching", "running", "failed", "removed"],
  // A child started by hand after a failed launch acknowledges straight from failed.
  failed: ["launching", "running", "removed"],
  removed: [],
};

export function canTransition(from: HandoffState, to: HandoffState): boolean {
  return ALLOWED_TRANSITIONS[from].includes(to);
}
