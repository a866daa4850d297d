/**
 * The owner of a handoff: the process running its transaction (or its latest relaunch), recorded in
 * the manifest so that recovery can tell a handoff still being set up from one whose process died.
 *
 * Invariants:
 * - The owner is the holder identity of src/locks/ (holder.ts) in the manifest's fields (`pid`,
 *   `start`: the manifest's format has no room for the rest, so a recorded owner is of this machine).
 * - Judged by the one liveness rule (locks/liveness.ts), with no heartbeat: alive while its pid lives
 *   with the recorded start; dead once the pid is gone or reused; a start that cannot be compared
 *   (unreadable now, or recorded by the other process-facts implementation) does not prove reuse,
 *   so the live pid counts (`unknown`, which counts as alive).
 * - Read-only (process facts through src/process/, signal 0 only).
 */
import type { ManifestOwner } from "./schema.ts";
import { holderOf } from "../locks/holder.ts";
import { holderLiveness, stillHeld } from "../locks/liveness.ts";
import { processFacts, type ProcessFacts } from "../process/facts.ts";

/** This process (or `pid`) as a manifest owner. */
export async function ownerOf(pid: number = process.pid, facts: ProcessFacts = processFacts()): Promise<ManifestOwner> {
  const { start } = await holderOf(pid, facts);
  return start === undefined ? { pid } : { pid, start };
}

export async function isOwnerAlive(owner: ManifestOwner, facts: ProcessFacts = processFacts()): Promise<boolean> {
  return stillHeld(await holderLiveness(owner, facts, new Date()));
}
