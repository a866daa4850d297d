/**
 * The action lock: a small JSON file naming its holder (`Holder` plus what the caller records, e.g.
 * which action since when), held for a whole decision-and-action and never waited for: a second
 * taker is told at once who holds it. The manifest store keeps one per handoff (manifest/store.ts
 * `withActionLock`); the format of its record is the caller's schema.
 *
 * Invariants:
 * - Taking is an exclusive create of a complete file (`writeFileAtomic` without overwrite), so of
 *   two takers exactly one wins the create.
 * - A holder is judged by the liveness rule (liveness.ts) with no heartbeat: dead (gone, or its pid
 *   reused) is taken over; alive and unknown (another machine, an uncomparable start) are held, and
 *   the refusal carries the verdict so it can say why. An unreadable record is a writer that died
 *   while writing it: taken over.
 * - The caller takes and takes over only under a short lock of its own (`assertHeld` is checked
 *   right before the create), so two takers cannot both take over one dead holder's lock.
 * - A holder removes the record only while it is still its own (after being judged dead and taken
 *   over, the file is someone else's).
 */
import { rm } from "node:fs/promises";
import type { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode, readTextIfPresent } from "../fs/probe.ts";
import { unlinkIfPresent } from "../fs/unlink.ts";
import type { ProcessFacts } from "../process/facts.ts";
import type { Holder } from "./holder.ts";
import { holderLiveness, stillHeld, type Liveness } from "./liveness.ts";

export interface ActionLockFile<R extends Holder> {
  path: string;
  schema: z.ZodType<R>;
  facts: ProcessFacts;
  /** This machine's name, as holders record it. */
  host: string;
}

export type ActionLockTaking<R> = { ok: true } | { ok: false; holder: R; liveness: Liveness };

/** The record at `lock.path`; undefined when there is none or it is unreadable. */
export async function readActionLock<R extends Holder>(
  lock: Pick<ActionLockFile<R>, "path" | "schema">,
): Promise<R | undefined> {
  const text = await readTextIfPresent(lock.path);
  if (text === undefined) return undefined;
  try {
    const parsed = lock.schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The liveness of a recorded holder (no heartbeat: an action lock keeps none). */
export function actionHolderLiveness<R extends Holder>(lock: ActionLockFile<R>, holder: R): Promise<Liveness> {
  return holderLiveness(holder, lock.facts, new Date(), undefined, lock.host);
}

/** A holder that still holds its lock by the rule (alive or unknown), with its verdict. */
export async function liveActionHolder<R extends Holder>(
  lock: ActionLockFile<R>,
): Promise<{ holder: R; liveness: Liveness } | undefined> {
  const holder = await readActionLock(lock);
  if (holder === undefined) return undefined;
  const liveness = await actionHolderLiveness(lock, holder);
  return stillHeld(liveness) ? { holder, liveness } : undefined;
}

/**
 * Takes the lock for `me`, taking over a dead holder's; a holder that still holds it is returned.
 * Call under the caller's short lock (`assertHeld`); `tooBusy` is the error after two lost races.
 */
export async function takeActionLock<R extends Holder>(
  lock: ActionLockFile<R>,
  me: R,
  assertHeld: () => void,
  tooBusy: () => Error,
): Promise<ActionLockTaking<R>> {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      assertHeld();
      await writeFileAtomic(lock.path, `${JSON.stringify(me)}\n`, { overwrite: false });
      return { ok: true };
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
    }
    const live = await liveActionHolder(lock);
    if (live !== undefined) return { ok: false, ...live };
    // Its holder died (or it is unreadable: the writer died before it was complete).
    await rm(lock.path, { force: true });
  }
  throw tooBusy();
}

/** Removes the lock if `isMine` says its record is still this holder's. */
export async function releaseActionLock<R extends Holder>(
  lock: ActionLockFile<R>,
  isMine: (record: R) => boolean,
): Promise<void> {
  const holder = await readActionLock(lock);
  if (holder !== undefined && isMine(holder)) await rm(lock.path, { force: true });
}

/** Removes the lock if its holder is dead by the rule (or unreadable); call under the caller's short lock. */
export async function removeDeadActionLock<R extends Holder>(lock: ActionLockFile<R>): Promise<boolean> {
  if ((await liveActionHolder(lock)) !== undefined) return false;
  return unlinkIfPresent(lock.path);
}
