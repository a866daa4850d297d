/**
 * The owner of a handoff: the process running its transaction (or its latest relaunch), recorded in
 * the manifest so that recovery can tell a handoff still being set up from one whose process died.
 *
 * Invariants:
 * - Read-only (process facts through src/process/, signal 0 only).
 * - A recorded owner counts as alive only while its pid is alive (not a zombie) and, when a start
 *   time was recorded, still has that start time: a reused pid is another process. A start time
 *   that cannot be compared (unreadable now, or recorded by the other process-facts
 *   implementation) does not prove reuse, so the live pid counts.
 */
import type { ManifestOwner } from "./schema.ts";
import { processFacts, sameStart, type ProcessFacts } from "../process/facts.ts";

/** This process (or `pid`) as a manifest owner. */
export async function ownerOf(pid: number = process.pid, facts: ProcessFacts = processFacts()): Promise<ManifestOwner> {
  const start = await facts.startToken(pid);
  return start === undefined ? { pid } : { pid, start };
}

export async function isOwnerAlive(owner: ManifestOwner, facts: ProcessFacts = processFacts()): Promise<boolean> {
  const identity = await facts.identify(owner.pid);
  if (!identity.alive) return false;
  if (owner.start === undefined) return true;
  return sameStart(owner.start, identity.start) !== false;
}
