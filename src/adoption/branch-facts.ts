/**
 * What a session's start reads of it before anything is loaded for its lineage: whether it
 * continues another session at all, and whether a handoff child's kickoff turn is still to come.
 * Every Pi asks at its start, so this module stays small (the lineage session, scan and sources
 * load only for a session that has a lineage).
 *
 * Invariants: pure; reads only the header value and the branch it is given.
 */
import { findHandoffDetails, kickoffSent } from "../child/acknowledge.ts";
import type { LineageEntryView } from "./types.ts";

/** Whether a session has any lineage at all: a parent in its header, or a handoff message on its branch. */
export function hasLineage(parentSession: string | undefined, branch: readonly LineageEntryView[]): boolean {
  if (parentSession !== undefined && parentSession.length > 0) return true;
  return findHandoffDetails(branch) !== undefined;
}

/** Whether a handoff child's kickoff turn is still to come on this branch (it starts during start-up). */
export function kickoffExpected(branch: readonly LineageEntryView[]): boolean {
  const handoff = findHandoffDetails(branch);
  return handoff !== undefined && handoff.hasTask && !kickoffSent(branch);
}
