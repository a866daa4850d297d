/**
 * `pi-handoff land --all --status`: the current or last run of a repository's merge queue, from
 * its journal (queue-journal.ts), whether its holder still lives (the queue's action lock), and
 * for a run killed before it finished, what git's refs say of each child it left mid-step.
 *
 * Invariants: read-only (the journal, the lock, and `rev-parse`/`merge-base` through the git port);
 * the refs are the truth: a child the journal has `landing` is landed when the target holds its
 * checked tip, whatever the journal has not written yet.
 */
import type { ActionHolder } from "../manifest/store.ts";
import { type JournalMember, type QueueJournal, queueJournalPath, readQueueJournal } from "./queue-journal.ts";
import { type QueueDeps, queueLockId } from "./queue-plan.ts";

/** What `land --all --status` shows: the current or last run, and whether its holder lives. */
export interface QueueStatus {
  repoCommonDir: string;
  /** `running`: its holder lives; `interrupted`: it died before the run finished; `none`: no run yet. */
  state: "none" | "running" | "interrupted" | "finished";
  holder?: ActionHolder;
  journal?: QueueJournal;
  /** For a child whose step an interrupted run left open: what git's refs say of it now. */
  refs: { id: string; verdict: RefsVerdict }[];
}

export type RefsVerdict =
  | { code: "not_rebased"; tip: string }
  | { code: "rebased_unchecked"; tip: string }
  | { code: "landed_unrecorded"; target: string }
  | { code: "not_landed"; tip: string }
  | { code: "moved_back"; tip: string }
  | { code: "not_moved_back"; tip: string }
  | { code: "moved"; tip: string | undefined };

/** The status of the repository's queue, read only: its journal, its lock's holder, and the refs of the children it left open. */
export async function queueStatus(
  deps: Pick<QueueDeps, "agentDir" | "store" | "git">,
  repoCommonDir: string,
  repoRoot: string,
): Promise<{ ok: true; status: QueueStatus } | { ok: false; message: string }> {
  const key = queueLockId(repoCommonDir);
  const [read, holder] = await Promise.all([
    readQueueJournal(queueJournalPath(deps.agentDir, key)),
    deps.store.actionHolder(key),
  ]);
  if (read.code === "invalid") return { ok: false, message: read.message };
  if (read.code === "none")
    return {
      ok: true,
      // A run that holds the lock and has not written its journal yet still runs.
      status: {
        repoCommonDir,
        state: holder === undefined ? "none" : "running",
        refs: [],
        ...(holder === undefined ? {} : { holder }),
      },
    };
  const journal = read.journal;
  const state = holder !== undefined ? "running" : journal.finishedAt === undefined ? "interrupted" : "finished";
  const refs: QueueStatus["refs"] = [];
  if (state === "interrupted")
    for (const member of journal.members) {
      const verdict = await refsVerdict(deps, repoRoot, member);
      if (verdict !== undefined) refs.push({ id: member.id, verdict });
    }
  return { ok: true, status: { repoCommonDir, state, journal, refs, ...(holder === undefined ? {} : { holder }) } };
}

async function refsVerdict(
  deps: Pick<QueueDeps, "git">,
  repo: string,
  member: JournalMember,
): Promise<RefsVerdict | undefined> {
  const at = (branch: string): Promise<string | undefined> => deps.git.resolveCommit(repo, `refs/heads/${branch}`);
  const tip = await at(member.branch);
  switch (member.step) {
    case "rebasing":
    case "checking":
      if (tip !== undefined && tip === member.before) return { code: "not_rebased", tip };
      if (tip !== undefined && (member.step === "rebasing" || tip === member.rebasedTo))
        return { code: "rebased_unchecked", tip };
      return { code: "moved", tip };
    case "landing": {
      const target = await at(member.into);
      if (
        member.rebasedTo !== undefined &&
        target !== undefined &&
        (await deps.git.isAncestor(repo, member.rebasedTo, target))
      )
        return { code: "landed_unrecorded", target };
      return tip === undefined ? { code: "moved", tip } : { code: "not_landed", tip };
    }
    case "undoing":
      if (tip !== undefined && tip === member.before) return { code: "moved_back", tip };
      if (tip !== undefined && tip === member.rebasedTo) return { code: "not_moved_back", tip };
      return { code: "moved", tip };
    default:
      return undefined;
  }
}
