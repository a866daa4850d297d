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
 * - Acquiring is an exclusive create (a hard link of a complete temp file), so of two Pi starting
 *   at once exactly one holds the lease; a stale lease is moved aside before the exclusive create
 *   is retried, and a lease moved aside by mistake (someone else's fresh one) is put back.
 * - Staleness is decided by the holder's pid AND its start time AND the heartbeat: on this host a
 *   lease is stale once its pid is dead or belongs to a process started at another time; when the
 *   holder's identity cannot be confirmed (start unreadable, or another host sharing the agent
 *   dir), only a heartbeat younger than `LEASE_STALE_AFTER_MS` keeps it live. A holder that is
 *   alive and confirmed stays live even with an old heartbeat (a suspended Pi still writes later).
 * - Nothing here reads another process's command line or environment: only pid, start and time.
 * - A lease is only ever removed by its holder, or moved aside by a taker once judged stale.
 * - Every outcome a caller sees is `{ ok: true, ... } | { ok: false, code, message }`; a lease file
 *   that cannot be read is `unreadable` for readers, who then must not assume there is no writer.
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { mkdir, readFile, rename, rm } from "node:fs/promises";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { errorClause } from "../errors.ts";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode, readSmallFile } from "../fs/probe.ts";
import { processFacts, sameStart, type ProcessFacts } from "../process/facts.ts";
import type { Failed, Succeeded } from "../outcome.ts";

/** How often a holder refreshes its heartbeat. */
export const LEASE_HEARTBEAT_MS = 5_000;
/** A heartbeat older than this no longer keeps a lease live when its holder cannot be confirmed. */
export const LEASE_STALE_AFTER_MS = 30_000;
/** Start times read by different implementations (clock ticks, whole seconds) agree within this. */
const START_TOLERANCE_MS = 2_000;

export const LeaseFileSchema = z.strictObject({
  version: z.literal(1),
  /** The canonical session path the lease is for (the file name is its hash). */
  sessionFile: z.string().min(1),
  pid: z.number().int().positive(),
  /** The holder's start token (src/process/), when readable. */
  start: z.string().min(1).optional(),
  /** The holder's start time, ms since the epoch, comparable across process-facts implementations. */
  startedAtMs: z.number().optional(),
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

async function readLeaseFile(path: string): Promise<Parsed> {
  const read = readSmallFile(path);
  if (read.code === "missing") return { code: "none" };
  if (read.code === "error")
    return { code: "unreadable", message: `The session lease ${path} could not be read: ${errorClause(read.error)}.` };
  return parseLease(path, read.text);
}

function parseLease(path: string, text: string): Parsed {
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

/** What is known now about the lease's holder process. */
export interface HolderFacts {
  alive: boolean;
  start?: string;
  startedAtMs?: number;
}

/** Live or stale, from the record, the holder's facts (undefined on another host) and the time (see the header). */
export function judgeLease(record: LeaseFile, holder: HolderFacts | undefined, now: Date): "live" | "stale" {
  const heartbeatFresh = now.getTime() - Date.parse(record.heartbeatAt) <= LEASE_STALE_AFTER_MS;
  if (holder === undefined) return heartbeatFresh ? "live" : "stale";
  if (!holder.alive) return "stale";
  const same = sameProcess(record, holder);
  if (same !== undefined) return same ? "live" : "stale";
  return heartbeatFresh ? "live" : "stale";
}

function sameProcess(record: LeaseFile, holder: HolderFacts): boolean | undefined {
  const byToken = sameStart(record.start, holder.start);
  if (byToken !== undefined) return byToken;
  if (record.startedAtMs === undefined || holder.startedAtMs === undefined) return undefined;
  return Math.abs(record.startedAtMs - holder.startedAtMs) <= START_TOLERANCE_MS;
}

async function holderFacts(record: LeaseFile, options: LeaseOptions): Promise<HolderFacts | undefined> {
  if (record.host !== (options.host ?? hostname())) return undefined;
  const facts = options.facts ?? processFacts();
  // One question, so the portable facts answer it from one `ps`.
  return facts.identify(record.pid);
}

async function judge(record: LeaseFile, options: LeaseOptions): Promise<"live" | "stale"> {
  return judgeLease(record, await holderFacts(record, options), (options.now ?? (() => new Date()))());
}

/** Who writes `sessionFile` according to its lease. */
export async function readSessionLease(
  agentDir: string,
  sessionFile: string,
  options: LeaseOptions = {},
): Promise<SessionLease> {
  const read = await readLeaseFile(leasePath(agentDir, sessionFile));
  if (read.code === "none") return { state: "none" };
  if (read.code === "unreadable") return { state: "unreadable", message: read.message };
  const { record } = read;
  if ((await judge(record, options)) === "stale")
    return { state: "stale", pid: record.pid, heartbeatAt: record.heartbeatAt };
  return {
    state: "live",
    pid: record.pid,
    heartbeatAt: record.heartbeatAt,
    ...(record.handoffId === undefined ? {} : { handoffId: record.handoffId }),
  };
}

/** A lease this process holds. */
export interface HeldLease {
  readonly path: string;
  readonly record: LeaseFile;
  /** Refreshes the heartbeat; `lost` when the file no longer names this holder. */
  heartbeat(): Promise<"held" | "lost">;
  /** Removes the lease if it is still this holder's. */
  release(): Promise<void>;
  /** The same, synchronously, for a process that is exiting. */
  releaseSync(): void;
}

function isSameHolder(a: LeaseFile, b: LeaseFile): boolean {
  return a.pid === b.pid && a.acquiredAt === b.acquiredAt && a.host === b.host;
}

const ACQUIRE_ATTEMPTS = 4;

/** Takes the lease on `sessionFile` for `pid` (default: this process), unless a live holder has it. */
export async function acquireSessionLease(
  input: { agentDir: string; sessionFile: string; pid?: number; handoffId?: string } & LeaseOptions,
): Promise<LeaseAcquisition> {
  const now = input.now ?? (() => new Date());
  const facts = input.facts ?? processFacts();
  const pid = input.pid ?? process.pid;
  const path = leasePath(input.agentDir, input.sessionFile);
  const identity = await facts.identify(pid);
  const { start, startedAtMs } = identity.alive ? identity : { start: undefined, startedAtMs: undefined };
  const at = now().toISOString();
  const record: LeaseFile = {
    version: 1,
    sessionFile: canonicalSessionPath(input.sessionFile),
    pid,
    ...(start === undefined ? {} : { start }),
    ...(startedAtMs === undefined ? {} : { startedAtMs }),
    host: input.host ?? hostname(),
    acquiredAt: at,
    heartbeatAt: at,
    ...(input.handoffId === undefined ? {} : { handoffId: input.handoffId }),
  };
  try {
    await mkdir(leaseDir(input.agentDir), { recursive: true });
    for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
      try {
        await writeFileAtomic(path, `${JSON.stringify(record, null, 2)}\n`, { overwrite: false });
        return { ok: true, lease: heldLease(path, record, now) };
      } catch (error) {
        if (errorCode(error) !== "EEXIST") throw error;
      }
      const existing = await readLeaseFile(path);
      if (existing.code === "none") continue;
      if (existing.code === "ok") {
        const holder = existing.record;
        const own = holder.pid === pid && holder.host === record.host;
        if (!own && (await judge(holder, input)) === "live") {
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
        }
      }
      // Stale, unreadable, or left by this very process before (a reload): move it aside and retry.
      await moveAside(path, existing.code === "ok" ? existing.text : undefined);
    }
    return {
      ok: false,
      code: "io_error",
      message: `The lease on session ${record.sessionFile} kept changing while it was taken; try again.`,
    };
  } catch (error) {
    return {
      ok: false,
      code: "io_error",
      message: `The lease on session ${record.sessionFile} could not be taken: ${errorClause(error)}.`,
    };
  }
}

/**
 * Moves the lease at `path` aside if it is still the one judged (`judgedText`; undefined for an
 * unreadable one); a different lease that appeared meanwhile is put back (never overwriting).
 */
async function moveAside(path: string, judgedText: string | undefined): Promise<void> {
  const aside = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return;
    throw error;
  }
  const movedText = await readFile(aside, "utf8").catch(() => undefined);
  const moved = movedText === undefined ? undefined : parseLease(path, movedText);
  const sameAsJudged = judgedText === undefined ? moved === undefined || moved.code !== "ok" : movedText === judgedText;
  if (!sameAsJudged && movedText !== undefined) {
    // Someone's fresh lease: put it back unless yet another one is there already.
    await writeFileAtomic(path, movedText, { overwrite: false }).catch(() => undefined);
  }
  await rm(aside, { force: true });
}

function heldLease(path: string, initial: LeaseFile, now: () => Date): HeldLease {
  let record = initial;
  const stillOurs = (text: string | undefined): boolean => {
    if (text === undefined) return false;
    const parsed = parseLease(path, text);
    return parsed.code === "ok" && isSameHolder(parsed.record, record);
  };
  return {
    path,
    get record() {
      return record;
    },
    async heartbeat() {
      const text = await readFile(path, "utf8").catch(() => undefined);
      if (!stillOurs(text)) return "lost";
      record = { ...record, heartbeatAt: now().toISOString() };
      await writeFileAtomic(path, `${JSON.stringify(record, null, 2)}\n`);
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
