/**
 * Lineage source for the handoff chain itself: every handoff message on the current branch (a
 * fork copies its ancestors' handoff messages too), newest last. The newest one is this session's
 * own handoff: its worktree, branch, base and parent.
 *
 * Invariants:
 * - Reads only the branch entries it is given (no files); every entry's details are decoded with
 *   the handoff message's own schema, and one that does not decode is skipped with a note.
 * - Each handoff is a `notice`: said once, never watched.
 */
import { HANDOFF_MESSAGE_TYPE, HandoffDetailsSchema } from "../../session/handoff-message.ts";
import { cleanLine } from "../text.ts";
import type { AdoptedRun, LineageSource, ScanContext, SourceScan } from "../types.ts";

export const HANDOFF_SOURCE = "handoff";

export function handoffChainSource(): LineageSource {
  async function scan(context: ScanContext): Promise<SourceScan> {
    const notes: string[] = [];
    const handoffs = context.branch.filter(
      (entry) => entry.type === "custom_message" && entry.customType === HANDOFF_MESSAGE_TYPE,
    );
    const runs: AdoptedRun[] = [];
    handoffs.forEach((entry, index) => {
      const parsed = HandoffDetailsSchema.safeParse(entry.details);
      if (!parsed.success) {
        notes.push("handoff: a handoff message on this branch has unreadable details; skipped.");
        return;
      }
      const d = parsed.data;
      // Newest last: the last one is this session's own handoff, earlier ones its ancestors'.
      const depth = handoffs.length - 1 - index;
      const base = d.baseRef === d.baseSha ? d.baseSha : `${cleanLine(d.baseRef, 80)} at ${d.baseSha.slice(0, 12)}`;
      runs.push({
        source: HANDOFF_SOURCE,
        runId: d.handoffId,
        outcome: "notice",
        state: depth === 0 ? "this session" : "earlier handoff",
        title: `worktree ${cleanLine(d.worktreePath, 200)} on branch ${cleanLine(d.branch, 120)} (from ${base})`,
        progress: `handed off from ${cleanLine(d.parentSessionFile, 200)}`,
        owner: { key: d.parentSessionFile, depth: depth + 1 },
        paths: { runDir: d.worktreePath, status: d.manifestPath, outputs: [], sessionFiles: [d.parentSessionFile] },
        inspect: [`read ${d.manifestPath}`],
      });
    });
    return { runs, notes };
  }

  const refresh = async (runs: readonly AdoptedRun[]): Promise<SourceScan> => ({
    runs: runs.filter((run) => run.source === HANDOFF_SOURCE),
    notes: [],
  });

  return { name: HANDOFF_SOURCE, scan, refresh };
}
