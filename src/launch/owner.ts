/**
 * The owner of a handoff: the process running its transaction (or its latest relaunch), recorded in
 * the manifest so that recovery can tell a handoff still being set up from one whose process died.
 *
 * Invariants:
 * - Read-only (procfs and signal 0 only).
 * - A recorded owner counts as alive only while its pid is alive (not a zombie) and, when a start
 *   time was recorded, still has that start time: a reused pid is another process.
 */
import type { ManifestOwner } from "../manifest/schema.ts";
import { isAlive, readProcessStart } from "../process/procfs.ts";

/** This process (or `pid`) as a manifest owner. */
export async function ownerOf(pid: number = process.pid): Promise<ManifestOwner> {
  const start = await readProcessStart(pid);
  return start === undefined ? { pid } : { pid, start };
}

export async function isOwnerAlive(owner: ManifestOwner): Promise<boolean> {
  if (!(await isAlive(owner.pid))) return false;
  if (owner.start === undefined) return true;
  const start = await readProcessStart(owner.pid);
  // Unreadable right after the liveness check: it exited in between, or procfs hides it; only a
  // different start time proves another process.
  return start === undefined || start === owner.start;
}
