/**
 * The lease: a small JSON file naming its holder and its last heartbeat, held for as long as the
 * holder runs (the session lease of child/lease.ts is one). This is its protocol; the record's
 * format and its path are the caller's.
 *
 * Invariants:
 * - Acquiring is an exclusive create (a hard link of a complete temp file), so of two takers at once
 *   exactly one holds the lease; a lease judged dead is moved aside before the create is retried,
 *   and a lease moved aside by mistake (someone else's fresh one, written meanwhile) is put back.
 * - The holder is judged by the liveness rule (liveness.ts) with the lease's heartbeat: on this
 *   machine a gone or reused pid is dead and a confirmed live holder alive whatever its heartbeat;
 *   where the holder cannot be confirmed (its start not comparable, or another machine sharing the
 *   directory), the heartbeat decides: older than `staleAfterMs` is dead.
 * - A record that cannot be read or parsed is `unreadable`: readers must not assume there is no
 *   holder, takers move it aside (its writer died while writing it).
 * - A lease is only ever removed by its holder (while the file still names it), or moved aside by a
 *   taker once judged dead. Nothing here reads another process's command line or environment.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { readFile, rename, rm } from "node:fs/promises";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode } from "../fs/probe.ts";
import type { ProcessFacts } from "../process/facts.ts";
import type { Holder } from "./holder.ts";
import { holderLiveness, stillHeld, type Liveness } from "./liveness.ts";

/** What every lease record holds: its holder (with its machine), when it was taken, its last beat. */
export interface LeaseRecord extends Holder {
  host: string;
  acquiredAt: string;
  heartbeatAt: string;
}

export type ParsedLease<R> = { code: "ok"; record: R; text: string } | { code: "unreadable"; message: string };

export interface LeaseProtocol<R extends LeaseRecord> {
  path: string;
  /** The record in `text`, or why it is unreadable. */
  parse(text: string): ParsedLease<R>;
  /** A heartbeat older than this no longer keeps a holder that cannot be confirmed. */
  staleAfterMs: number;
  facts: ProcessFacts;
  /** This machine's name, as holders record it. */
  host: string;
  now(): Date;
}

export type LeaseTaking<R> =
  | { ok: true; lease: HeldLease<R> }
  | { ok: false; code: "held"; holder: R }
  /** The file changed under every attempt. */
  | { ok: false; code: "changing" };

/** The liveness of a lease's holder by the rule, its heartbeat included. */
export function leaseLiveness<R extends LeaseRecord>(protocol: LeaseProtocol<R>, record: R): Promise<Liveness> {
  const heartbeat = { at: record.heartbeatAt, staleAfterMs: protocol.staleAfterMs };
  return holderLiveness(record, protocol.facts, protocol.now(), heartbeat, protocol.host);
}

/** The same holder, taking the same lease (a heartbeat changes only `heartbeatAt`). */
export function sameLeaseHolder(a: LeaseRecord, b: LeaseRecord): boolean {
  return a.pid === b.pid && a.acquiredAt === b.acquiredAt && a.host === b.host;
}

const ACQUIRE_ATTEMPTS = 4;

/**
 * Takes the lease for `record` unless a holder that still holds it by the rule has it. `isOwn` is
 * a record left by this very holder before (a reload): taken over like a dead one. Throws on I/O.
 */
export async function takeLease<R extends LeaseRecord>(
  protocol: LeaseProtocol<R>,
  record: R,
  isOwn: (holder: R) => boolean,
): Promise<LeaseTaking<R>> {
  for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
    try {
      await writeFileAtomic(protocol.path, serialize(record), { overwrite: false });
      return { ok: true, lease: heldLease(protocol, record) };
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
    }
    let existing: ParsedLease<R>;
    try {
      existing = protocol.parse(await readFile(protocol.path, "utf8"));
    } catch (error) {
      if (errorCode(error) === "ENOENT") continue;
      existing = { code: "unreadable", message: `The lease ${protocol.path} could not be read.` };
    }
    if (existing.code === "ok") {
      const holder = existing.record;
      if (!isOwn(holder) && stillHeld(await leaseLiveness(protocol, holder)))
        return { ok: false, code: "held", holder };
    }
    // Dead, unreadable, or left by this very holder before: move it aside and retry.
    await moveAside(protocol, existing.code === "ok" ? existing.text : undefined);
  }
  return { ok: false, code: "changing" };
}

/**
 * Moves the lease aside if it is still the one judged (`judgedText`; undefined for an unreadable
 * one); a different lease that appeared meanwhile is put back (never overwriting).
 */
async function moveAside<R extends LeaseRecord>(
  protocol: LeaseProtocol<R>,
  judgedText: string | undefined,
): Promise<void> {
  const { path } = protocol;
  const aside = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return;
    throw error;
  }
  const movedText = await readFile(aside, "utf8").catch(() => undefined);
  const moved = movedText === undefined ? undefined : protocol.parse(movedText);
  const sameAsJudged = judgedText === undefined ? moved === undefined || moved.code !== "ok" : movedText === judgedText;
  if (!sameAsJudged && movedText !== undefined) {
    // Someone's fresh lease: put it back unless yet another one is there already.
    await writeFileAtomic(path, movedText, { overwrite: false }).catch(() => undefined);
  }
  await rm(aside, { force: true });
}

/** A lease this process holds. */
export interface HeldLease<R> {
  readonly path: string;
  readonly record: R;
  /** Refreshes the heartbeat; `lost` when the file no longer names this holder. */
  heartbeat(): Promise<"held" | "lost">;
  /** Removes the lease if it is still this holder's. */
  release(): Promise<void>;
  /** The same, synchronously, for a process that is exiting. */
  releaseSync(): void;
}

function heldLease<R extends LeaseRecord>(protocol: LeaseProtocol<R>, initial: R): HeldLease<R> {
  const { path } = protocol;
  let record = initial;
  const stillOurs = (text: string | undefined): boolean => {
    if (text === undefined) return false;
    const parsed = protocol.parse(text);
    return parsed.code === "ok" && sameLeaseHolder(parsed.record, record);
  };
  return {
    path,
    get record() {
      return record;
    },
    async heartbeat() {
      const text = await readFile(path, "utf8").catch(() => undefined);
      if (!stillOurs(text)) return "lost";
      record = { ...record, heartbeatAt: protocol.now().toISOString() };
      await writeFileAtomic(path, serialize(record));
      return "held";
    },
    async release() {
      const text = await readFile(path, "utf8").catch(() => undefined);
      if (stillOurs(text)) await rm(path, { force: true });
    },
    releaseSync() {
      let text: string | undefined;
      try {
        text = readFileSync(path, "utf8");
      } catch {
        return;
      }
      if (stillOurs(text)) rmSync(path, { force: true });
    },
  };
}

function serialize(record: LeaseRecord): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}
