/**
 * The merge queue's journal (queue/queue.ts): one file per repository,
 * `<agentDir>/handoff-worktree/queues/<queue key>.json`, saying what the current or last
 * `pi-handoff land --all` of that repository did and is doing, child by child.
 *
 * Invariants:
 * - This schema is the one definition of the journal and of the queue's outcomes (the report's
 *   types are inferred from it), so a run killed at any point is read back exactly as it was.
 * - Written atomically and durably (fs/atomic-write.ts) BEFORE each step that changes a ref: the
 *   rebase (`rebasing`: the branch's tip before, the target's tip), the landing (`landing`: the
 *   tip checked, its commits), the move back of a child sent back (`undoing`: both tips and why).
 *   So after a SIGKILL the journal names the step and both tips, and git's refs say how far it got
 *   (the refs are the truth; queue.ts reconciles).
 * - An outcome is written once decided, with `decidedAt`, before the child is told: the note's id
 *   comes from it, so telling again after a crash writes nothing.
 * - One file per repository, not fields in each manifest: a run spans several children, its order
 *   and its waiting list belong to none of them, and `--status` and the parent's widget read one
 *   small file. The intents of each child's own rebase, landing and move back stay in its manifest.
 * - Read-only readers (the widget, `--status`) never write it; only the holder of the queue's lock does.
 */
import { mkdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode } from "../fs/probe.ts";

const sha = z.string().regex(/^[0-9a-f]{40,64}$/);
const isoTime = z.string().datetime({ offset: true });

export const WaitReasonSchema = z.discriminatedUnion("code", [
  z.strictObject({ code: z.literal("in_progress"), state: z.string() }),
  z.strictObject({ code: z.literal("branch_gone") }),
  z.strictObject({ code: z.literal("nothing_to_land") }),
  z.strictObject({ code: z.literal("child_working"), label: z.string() }),
  z.strictObject({ code: z.literal("no_worktree") }),
  z.strictObject({ code: z.literal("worktree_dirty"), files: z.array(z.string()) }),
  z.strictObject({ code: z.literal("no_target") }),
  /** Found not ready when its turn came (the rebase's refusal says why). */
  z.strictObject({ code: z.literal("not_ready"), message: z.string() }),
  /** Another command held its action lock when its turn came. */
  z.strictObject({ code: z.literal("busy"), message: z.string() }),
]);
export type WaitReason = z.infer<typeof WaitReasonSchema>;

/** A check that failed (check.ts `CheckOutcome`'s failed case). */
export const FailedCheckSchema = z.strictObject({
  code: z.literal("failed"),
  why: z.enum(["exit", "timeout", "signal", "not_started"]),
  // Absent or present, never `undefined` (check.ts's type, under exactOptionalPropertyTypes).
  exitCode: z.number().int().exactOptional(),
  signal: z.string().exactOptional(),
  startError: z.string().exactOptional(),
  log: z.string(),
  tail: z.array(z.string()),
});

export const SentBackReasonSchema = z.discriminatedUnion("code", [
  z.strictObject({ code: z.literal("conflict"), into: z.string(), conflicts: z.array(z.string()) }),
  z.strictObject({
    code: z.literal("check_failed"),
    into: z.string(),
    check: FailedCheckSchema,
    timeoutMs: z.number().int().positive(),
  }),
  z.strictObject({
    code: z.literal("refused"),
    into: z.string(),
    step: z.enum(["rebase", "land"]),
    message: z.string(),
  }),
]);
export type SentBackReason = z.infer<typeof SentBackReasonSchema>;

/** Where the branch of a child sent back is. */
export const BranchAfterSchema = z.discriminatedUnion("code", [
  z.strictObject({ code: z.literal("untouched"), tip: sha }),
  z.strictObject({ code: z.literal("restored"), tip: sha, rebasedTo: sha }),
  z.strictObject({ code: z.literal("kept_rebased"), tip: sha, before: sha }),
  z.strictObject({ code: z.literal("restore_failed"), tip: sha, before: sha, message: z.string() }),
]);
export type BranchAfter = z.infer<typeof BranchAfterSchema>;

const LandedSchema = z.strictObject({
  code: z.literal("landed"),
  id: z.string(),
  branch: z.string(),
  into: z.string(),
  to: sha,
  commits: z.number().int().nonnegative(),
  checked: z.boolean(),
});
const SentBackSchema = z.strictObject({
  code: z.literal("sent_back"),
  id: z.string(),
  branch: z.string(),
  reason: SentBackReasonSchema,
  after: BranchAfterSchema,
  told: z.string().optional(),
});
const WaitingSchema = z.strictObject({
  code: z.literal("waiting"),
  id: z.string(),
  branch: z.string(),
  reason: WaitReasonSchema,
});
export const MemberOutcomeSchema = z.discriminatedUnion("code", [LandedSchema, SentBackSchema, WaitingSchema]);
export type MemberOutcome = z.infer<typeof MemberOutcomeSchema>;

/**
 * Where a member is: `pending` (its turn has not come), `rebasing` (onto the target's tip),
 * `checking`, `landing` (the target is being moved to the checked tip), `undoing` (a child sent
 * back is being moved back to its tip from before), `telling` (decided; its note not yet written),
 * `done`.
 */
export const QUEUE_STEPS = ["pending", "rebasing", "checking", "landing", "undoing", "telling", "done"] as const;
export type QueueStep = (typeof QUEUE_STEPS)[number];

export const JournalMemberSchema = z.strictObject({
  id: z.string(),
  branch: z.string(),
  into: z.string(),
  worktree: z.string(),
  step: z.enum(QUEUE_STEPS),
  /** The branch's tip before the queue touched it: where a child sent back returns to. */
  before: sha.optional(),
  /** The target's tip when the step began. */
  targetBefore: sha.optional(),
  /** The branch's tip once rebased: the tip checked, and the one that lands. */
  rebasedTo: sha.optional(),
  checkStartedAt: isoTime.optional(),
  checkLog: z.string().optional(),
  /** The check passed on exactly this tip, with the target at `targetBefore`. */
  passed: sha.optional(),
  /** While `undoing`: why it is sent back. */
  sending: SentBackReasonSchema.optional(),
  outcome: MemberOutcomeSchema.optional(),
  decidedAt: isoTime.optional(),
});
export type JournalMember = z.infer<typeof JournalMemberSchema>;

export const QUEUE_JOURNAL_VERSION = 1;

export const QueueJournalSchema = z.strictObject({
  version: z.literal(QUEUE_JOURNAL_VERSION),
  repoCommonDir: z.string(),
  /** The process that runs (or ran) it; whether it still holds the queue is the action lock's to say. */
  pid: z.number().int().positive(),
  startedAt: isoTime,
  /** Each time a run killed before it finished was taken up again. */
  resumedAt: z.array(isoTime).optional(),
  finishedAt: isoTime.optional(),
  updatedAt: isoTime,
  /** The check as the person wrote it, and its limit; none: the children land without one. */
  check: z.strictObject({ shown: z.string(), timeoutMs: z.number().int().positive() }).optional(),
  keepRebased: z.boolean(),
  members: z.array(JournalMemberSchema),
  waiting: z.array(WaitingSchema),
});
export type QueueJournal = z.infer<typeof QueueJournalSchema>;

export type JournalRead =
  | { code: "none" }
  | { code: "found"; journal: QueueJournal; mtimeMs: number }
  | { code: "invalid"; message: string };

/** Where the journal of the repository whose queue key is `queueKey` lives. */
export function queueJournalPath(agentDir: string, queueKey: string): string {
  return join(agentDir, "handoff-worktree", "queues", `${queueKey}.json`);
}

/** When the journal last changed (its mtime), or undefined when there is none. */
export async function queueJournalMtime(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return undefined;
  }
}

export async function readQueueJournal(path: string): Promise<JournalRead> {
  let text: string;
  let mtimeMs: number;
  try {
    mtimeMs = (await stat(path)).mtimeMs;
    text = await readFile(path, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return { code: "none" };
    return { code: "invalid", message: `Could not read the queue's journal ${path}: ${String(error)}` };
  }
  try {
    const parsed = QueueJournalSchema.safeParse(JSON.parse(text));
    if (parsed.success) return { code: "found", journal: parsed.data, mtimeMs };
    return { code: "invalid", message: `The queue's journal ${path} is not one this version reads.` };
  } catch {
    return { code: "invalid", message: `The queue's journal ${path} is not JSON.` };
  }
}

/** The journal as the queue's lock holder keeps it: every change written at once, durably. */
export class QueueJournalWriter {
  readonly path: string;
  #journal: QueueJournal;
  readonly #now: () => Date;

  constructor(path: string, journal: QueueJournal, now: () => Date) {
    this.path = path;
    this.#journal = journal;
    this.#now = now;
  }

  get journal(): QueueJournal {
    return this.#journal;
  }

  member(id: string): JournalMember | undefined {
    return this.#journal.members.find((member) => member.id === id);
  }

  /** Writes the whole journal (first, or after a change of the run itself). */
  async save(change: (journal: QueueJournal) => void = () => {}): Promise<void> {
    const next = structuredClone(this.#journal);
    change(next);
    next.updatedAt = this.#now().toISOString();
    const parsed = QueueJournalSchema.parse(next);
    await mkdir(join(this.path, ".."), { recursive: true });
    await writeFileAtomic(this.path, `${JSON.stringify(parsed, null, 2)}\n`);
    this.#journal = parsed;
  }

  /** Changes member `id` (added at the end when new) and writes the journal before returning. */
  async step(id: string, change: (member: JournalMember) => void): Promise<void> {
    await this.save((journal) => {
      const member = journal.members.find((entry) => entry.id === id);
      if (member === undefined) throw new Error(`The queue's journal has no member ${id}.`);
      change(member);
    });
  }
}
