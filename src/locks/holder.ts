/**
 * The holder of a lock, a lease or a claim: the one identity every protocol of src/locks/ records,
 * made in one place (`holderOf`), so that "who holds it, and is that still them?" is asked the same
 * way of an action lock, a session lease, a manifest's owner and a temp file's writer.
 *
 * Invariants:
 * - A holder is a pid plus what tells that process apart from a later one with the same pid: its
 *   start token (opaque, compared by `sameStart`; on Linux it names the boot, so a pid of an earlier
 *   boot never passes for a live one) and its start time in ms (comparable across the two
 *   process-facts implementations, within liveness.ts's `START_TOLERANCE_MS`), each recorded
 *   when readable.
 * - `host` is the machine the holder ran on. A record without one (written before hosts were
 *   recorded, or a format that has no room for it, like the manifest's owner) is of this machine.
 * - Read-only: the facts come from src/process/ (signal 0 at most), through a port the caller
 *   gives, so the schema loads without the process-facts implementations.
 */
import { hostname } from "node:os";
import { z } from "zod";
import type { ProcessFacts } from "../process/facts.ts";

export const HolderSchema = z.strictObject({
  pid: z.number().int().positive(),
  /** The process's start token (src/process/), when readable. */
  start: z.string().min(1).optional(),
  /** Its start time, ms since the epoch, when readable. */
  startedAtMs: z.number().optional(),
  /** The machine it runs on (`os.hostname()`); absent: this one. */
  host: z.string().min(1).optional(),
});
export type Holder = z.infer<typeof HolderSchema>;

/** This machine's name as holders record it. */
export function thisHost(): string {
  return hostname();
}

/** This process (or `pid`) as a holder: its pid, start token and time (when readable) and this machine. */
export async function holderOf(pid: number, facts: ProcessFacts, host: string = thisHost()): Promise<Holder> {
  // One question, so the portable facts answer it from one `ps`.
  const identity = await facts.identify(pid);
  const start = identity.alive ? identity.start : undefined;
  const startedAtMs = identity.alive ? identity.startedAtMs : undefined;
  return {
    pid,
    ...(start === undefined ? {} : { start }),
    ...(startedAtMs === undefined ? {} : { startedAtMs }),
    ...(host === "" ? {} : { host }),
  };
}
