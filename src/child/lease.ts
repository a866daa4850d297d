/**
 * The session lease: every Pi running this extension holds a live lease on its own session file
 * for as long as it runs, so "is a Pi writing this session?" is answered the same way on every
 * platform, for a launched child, a relaunch, a Pi started by hand or one Herdr restored.
 *
 * Layout: `<agentDir>/handoff-worktree/leases/<sha256 of the canonical session path, 32 hex>.json`,
 * one small JSON file (`LeaseFileSchema`) written atomically; its `heartbeatAt` is refreshed every
 * `LEASE_HEARTBEAT_MS` by the holder.
 *
 * Invariants:
 * - The protocol (exclusive create, takeover of a dead holder, heartbeat, release) is the lease of
 *   src/locks/ (locks/lease.ts), and the holder is judged by its one liveness rule with this
 *   lease's heartbeat: on this host a lease is stale once its pid is dead or belongs to a process
 *   started at another time; when the holder's identity cannot be confirmed (start unreadable, or
 *   another host sharing the agent dir), only a heartbeat younger than `LEASE_STALE_AFTER_MS`
 *   keeps it live. A holder that is alive and confirmed stays live even with an old heartbeat (a
 *   suspended Pi still writes later).
 * - Every outcome a caller sees is `{ ok: true, ... } | { ok: false, code, message }`; a lease file
 *   that cannot be read is `unreadable` for readers, who then must not assume there is no writer.
 */
import { createHash } from "node:crypto";
import { existsSync, realpathSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { errorClause } from "../errors.ts";
import { readSmallFile } from "../fs/probe.ts";
import { HolderSchema, holderOf, thisHost } from "../locks/holder.ts";
import { leaseLiveness, takeLease, type HeldLease as HeldLeaseOf, type LeaseProtocol } from "../locks/lease.ts";
import { decideLiveness, stillHeld } from "../locks/liveness.ts";
import { processFacts, type ProcessFacts } from "../process/facts.ts";
import type { Failed, Succeeded } from "../outcome.ts";

/** How often a holder refreshes its heartbeat. */
export const LEASE_HEARTBEAT_MS = 5_000;
/** A heartbeat older than this (six beats missed) no longer keeps a lease live when its holder cannot be confirmed. */
export const LEASE_STALE_AFTER_MS = 6 * LEASE_HEARTBEAT_MS;

/** The holder identity of src/locks/ (holder.ts; its machine always recorded), plus the lease's own fields. */
export const LeaseFileSchema = HolderSchema.extend({
  version: z.literal(1),
  /** The canonical session path the lease is for (the file name is its hash). */
  sessionFile: z.string().min(1),
  host: z.string(),
  acquiredAt: z.string(),
  heartbeatAt: z.string(),
  /** The handoff whose child session this is, when the holder is a handoff child. */
  handoffId: z.string().optional(),
});
export type LeaseFile = z.infer<typeof LeaseFileSchema>;

export type SessionLease =
  | { state: "live"; pid: number; heartbeatAt: string; handoffId?: string }
  | { state: "stale"; pid: number; heartbeatAt: string }
  | { state: "none" }
  /** The lease file exists but could not be read or parsed: the writer is unknown. */
  | { state: "unreadable"; message: string };

export type LeaseAcquisition =
  | Succeeded<{ lease: HeldLease }>
  | Failed<"held", { holder: { pid: number; heartbeatAt: string; handoffId?: string } }>
  | Failed<"io_error">;

export interface LeaseOptions {
  facts?: ProcessFacts;
  now?: () => Date;
  host?: string;
}

/** The canonical form of a session path: its realpath when it exists, else the resolved path. */
export function canonicalSessionPath(sessionFile: string): string {
  // A missing file (a child that never started, a listing of old handoffs) is the common case:
  // asked first, it costs no thrown error, which Node makes dearly.
  if (!existsSync(sessionFile)) return resolve(sessionFile);
  try {
    // The system's realpath: Node's own walks the path with an lstat per component.
    return realpathSync.native(sessionFile);
  } catch {
    return resolve(sessionFile);
  }
}

export function leaseDir(agentDir: string): string {
  return join(agentDir, "handoff-worktree", "leases");
}

/** The file name a session's files under the agent dir go by (its lease, its published state): a hash of its canonical path. */
export function sessionKey(sessionFile: string): string {
  const hash = createHash("sha256").update(canonicalSessionPath(sessionFile)).digest("hex").slice(0, 32);
  return `${hash}.json`;
}

export function leasePath(agentDir: string, sessionFile: string): string {
  return join(leaseDir(agentDir), sessionKey(sessionFile));
}

type Parsed =
  | { code: "none" }
  | { code: "unreadable"; message: string }
  | { code: "ok"; record: LeaseFile; text: string };

function readLeaseFile(path: string): Parsed {
  const read = readSmallFile(path);
  if (read.code === "missing") return { code: "none" };
  if (read.code === "error")
    return { code: "unreadable", message: `The session lease ${path} could not be read: ${errorClause(read.error)}.` };
  return parseLease(path, read.text);
}

function parseLease(path: string, text: string): Exclude<Parsed, { code: "none" }> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { code: "unreadable", message: `The session lease ${path} is not valid JSON.` };
  }
  const parsed = LeaseFileSchema.safeParse(json);
  if (!parsed.success)
    return { code: "unreadable", message: `The session lease ${path} does not have the expected fields.` };
  return { code: "ok", record: parsed.data, text };
}

/** The session lease's protocol (locks/lease.ts) at `path`. */
function protocolAt(path: string, options: LeaseOptions): LeaseProtocol<LeaseFile> {
  return {
    path,
    parse: (text) => parseLease(path, text),
    staleAfterMs: LEASE_STALE_AFTER_MS,
    facts: options.facts ?? processFacts(),
    host: options.host ?? thisHost(),
    now: options.now ?? (() => new Date()),
  };
}

/** What is known now about the lease's holder process. */
export interface HolderFacts {
  alive: boolean;
  start?: string;
  startedAtMs?: number;
}

/**
 * Live or stale, from the record, the holder's facts (undefined on another host) and the time:
 * the liveness rule of locks/liveness.ts with this lease's heartbeat (see the header).
 */
export function judgeLease(record: LeaseFile, holder: HolderFacts | undefined, now: Date): "live" | "stale" {
  const observed =
    holder === undefined
      ? { where: "elsewhere" as const }
      : {
          where: "here" as const,
          process: holder.alive
            ? {
                alive: true as const,
                ...(holder.start === undefined ? {} : { start: holder.start }),
                ...(holder.startedAtMs === undefined ? {} : { startedAtMs: holder.startedAtMs }),
              }
            : { alive: false as const },
        };
  const heartbeat = { at: record.heartbeatAt, staleAfterMs: LEASE_STALE_AFTER_MS };
  return stillHeld(decideLiveness(record, observed, now, heartbeat)) ? "live" : "stale";
}

/** Who writes `sessionFile` according to its lease. */
export async function readSessionLease(
  agentDir: string,
  sessionFile: string,
  options: LeaseOptions = {},
): Promise<SessionLease> {
  const path = leasePath(agentDir, sessionFile);
  const read = readLeaseFile(path);
  if (read.code === "none") return { state: "none" };
  if (read.code === "unreadable") return { state: "unreadable", message: read.message };
  const { record } = read;
  if (!stillHeld(await leaseLiveness(protocolAt(path, options), record)))
    return { state: "stale", pid: record.pid, heartbeatAt: record.heartbeatAt };
  return {
    state: "live",
    pid: record.pid,
    heartbeatAt: record.heartbeatAt,
    ...(record.handoffId === undefined ? {} : { handoffId: record.handoffId }),
  };
}

/** A lease this process holds. */
export type HeldLease = HeldLeaseOf<LeaseFile>;

/** Takes the lease on `sessionFile` for `pid` (default: this process), unless a live holder has it. */
export async function acquireSessionLease(
  input: { agentDir: string; sessionFile: string; pid?: number; handoffId?: string } & LeaseOptions,
): Promise<LeaseAcquisition> {
  const path = leasePath(input.agentDir, input.sessionFile);
  const protocol = protocolAt(path, input);
  const pid = input.pid ?? process.pid;
  const at = protocol.now().toISOString();
  const record: LeaseFile = {
    version: 1,
    sessionFile: canonicalSessionPath(input.sessionFile),
    ...(await holderOf(pid, protocol.facts, protocol.host)),
    host: protocol.host,
    acquiredAt: at,
    heartbeatAt: at,
    ...(input.handoffId === undefined ? {} : { handoffId: input.handoffId }),
  };
  try {
    await mkdir(leaseDir(input.agentDir), { recursive: true });
    // A lease this very process left before (a reload) is taken over like a stale one.
    const taken = await takeLease(protocol, record, (holder) => holder.pid === pid && holder.host === record.host);
    if (taken.ok) return taken;
    if (taken.code === "changing")
      return {
        ok: false,
        code: "io_error",
        message: `The lease on session ${record.sessionFile} kept changing while it was taken; try again.`,
      };
    const { holder } = taken;
    return {
      ok: false,
      code: "held",
      holder: {
        pid: holder.pid,
        heartbeatAt: holder.heartbeatAt,
        ...(holder.handoffId === undefined ? {} : { handoffId: holder.handoffId }),
      },
      message: `Another Pi (pid ${holder.pid}${holder.host === record.host ? "" : ` on ${holder.host}`}) holds the lease on session ${record.sessionFile} (heartbeat ${holder.heartbeatAt}).`,
    };
  } catch (error) {
    return {
      ok: false,
      code: "io_error",
      message: `The lease on session ${record.sessionFile} could not be taken: ${errorClause(error)}.`,
    };
  }
}
