/**
 * What a session cost: the token usage and cost Pi records in a session file, summed as Pi sums a
 * session's totals, and the part of it a handoff's child added after its fork point.
 *
 * Invariants:
 * - Pi's rule (1.6, `AgentSession.getSessionStats`): an assistant message's `usage`, a tool
 *   result's `usage` when it has one, a `usage` entry's, and a `compaction` or `branch_summary`
 *   entry's when it has one. Nothing else counts; a usage field that is not a number counts 0.
 * - A child's own usage is what follows the handoff message the fork appended (`custom_message`
 *   of type `handoff-worktree` whose `details.handoffId` is the handoff's): the fork copies the
 *   parent's root-to-leaf path before that message, so nothing the parent paid is counted twice,
 *   whatever ids the copy has (an older parent is migrated, with new ids). A session with no such
 *   message for the id is counted from its last handoff message, and one with none from its start,
 *   and the answer says which (`forkPoint`).
 * - Only complete lines count: a last line without its newline (Pi writing it now) is left for the
 *   next read. Lines that are not JSON are skipped.
 * - Cheap on large files: only lines holding `"usage":{` or the handoff message's type are looked
 *   at (JSON text never holds those bytes inside a string, where quotes are escaped); the rest is
 *   scanned as bytes, a chunk at a time (fs/line-runs.ts), never the whole file in memory. An
 *   assistant message as Pi writes it has only its usage object decoded (`assistantUsage`); any
 *   other line is decoded whole.
 * - Cached per file (`SessionUsageCache`), keyed by device, inode, size and modification time: an
 *   unchanged file is one `stat`; a file that only grew (same inode, its first and last bytes before
 *   the last read offset unchanged) is read from that offset on; anything else is read again whole.
 *   The cache is this package's own file, `<agent dir>/handoff-worktree/usage-cache.json` (zod
 *   schema below), read once per `SessionUsageCache` (however many reads begin at once) and
 *   replaced atomically; an unreadable cache is an empty one. It is bounded
 *   (`MAX_CACHED_FILES`, the least recently used dropped first).
 * - A missing or unreadable session file is `{ code: "missing" }`, never an error.
 */
import { createHash } from "node:crypto";
import { mkdir, open, readFile, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { readLineRuns } from "../fs/line-runs.ts";
import { errorCode } from "../fs/probe.ts";
import { HANDOFF_MESSAGE_TYPE } from "./handoff-message.ts";

/** Tokens and cost, as Pi adds them up (`cost` is `usage.cost.total`, in the provider's currency: dollars). */
export const UsageTotalsSchema = z.strictObject({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cacheRead: z.number().nonnegative(),
  cacheWrite: z.number().nonnegative(),
  cost: z.number().nonnegative(),
});
export type UsageTotals = z.infer<typeof UsageTotalsSchema>;

export const ZERO_USAGE: UsageTotals = Object.freeze({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 });

export function addUsage(a: UsageTotals, b: UsageTotals): UsageTotals {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    cost: a.cost + b.cost,
  };
}

/** `a - b`, never below zero (a mark is always a prefix sum of `a`; rounding stays out). */
function subtractUsage(a: UsageTotals, b: UsageTotals): UsageTotals {
  const minus = (x: number, y: number) => Math.max(0, x - y);
  return {
    input: minus(a.input, b.input),
    output: minus(a.output, b.output),
    cacheRead: minus(a.cacheRead, b.cacheRead),
    cacheWrite: minus(a.cacheWrite, b.cacheWrite),
    cost: minus(a.cost, b.cost),
  };
}

/**
 * Where the child's own part starts: after its handoff message (`handoff_message`), after the last
 * handoff message when none has the handoff's id (`last_handoff_message`), or at the start of the
 * file (`start`: a session no handoff made, or one whose handoff message is missing).
 */
export const FORK_POINTS = ["handoff_message", "last_handoff_message", "start"] as const;
export type ForkPoint = (typeof FORK_POINTS)[number];

export type SessionUsage =
  | {
      code: "read";
      /** What the session added itself: after its fork point. */
      own: UsageTotals;
      /** Everything the file records, the copied part included (what Pi's footer shows). */
      whole: UsageTotals;
      forkPoint: ForkPoint;
      /** The bytes read (complete lines); `pending` is true when a last line was still being written. */
      bytes: number;
      pending: boolean;
    }
  | { code: "missing" };

/** A number usage field; anything else counts 0 (Pi would add NaN). */
const count = z.number().finite().nonnegative().catch(0);
const UsageFieldSchema = z.looseObject({
  input: count.optional(),
  output: count.optional(),
  cacheRead: count.optional(),
  cacheWrite: count.optional(),
  cost: z.looseObject({ total: count.optional() }).optional().catch(undefined),
});
/** The entries that carry usage, and the handoff message, as far as this module reads them. */
const CountedEntrySchema = z.looseObject({
  type: z.string(),
  customType: z.string().optional().catch(undefined),
  details: z
    .looseObject({ handoffId: z.string().optional().catch(undefined) })
    .optional()
    .catch(undefined),
  usage: UsageFieldSchema.optional().catch(undefined),
  message: z
    .looseObject({ role: z.string().optional().catch(undefined), usage: UsageFieldSchema.optional().catch(undefined) })
    .optional()
    .catch(undefined),
});

/** The totals a usage field adds (an absent count is 0). */
function totalsOf(usage: z.infer<typeof UsageFieldSchema>): UsageTotals {
  return {
    input: usage.input ?? 0,
    output: usage.output ?? 0,
    cacheRead: usage.cacheRead ?? 0,
    cacheWrite: usage.cacheWrite ?? 0,
    cost: usage.cost?.total ?? 0,
  };
}

/** The usage an entry counts for in Pi's totals, or undefined. */
function countedUsage(entry: z.infer<typeof CountedEntrySchema>): UsageTotals | undefined {
  let usage: z.infer<typeof UsageFieldSchema> | undefined;
  if (entry.type === "usage" || entry.type === "compaction" || entry.type === "branch_summary") usage = entry.usage;
  else if (entry.type === "message" && (entry.message?.role === "assistant" || entry.message?.role === "toolResult"))
    usage = entry.message.usage;
  return usage === undefined ? undefined : totalsOf(usage);
}

/** The running sums of one file, up to `offset`: the whole, and the whole as it was at each handoff message. */
const ScanStateSchema = z.strictObject({
  offset: z.number().int().nonnegative(),
  whole: UsageTotalsSchema,
  marks: z.array(z.strictObject({ handoffId: z.string().optional(), at: UsageTotalsSchema })),
});
type ScanState = z.infer<typeof ScanStateSchema>;

const USAGE_NEEDLE = Buffer.from('"usage":{');
const HANDOFF_NEEDLE = Buffer.from(JSON.stringify(HANDOFF_MESSAGE_TYPE));
const NEWLINE = 0x0a;
const CHUNK_BYTES = 1024 * 1024;
/**
 * How much of the start and of the end before the read offset is fingerprinted, to tell a file
 * that grew from one rewritten: Pi's entries carry ids and times, so a rewrite changes those bytes.
 */
const FINGERPRINT_BYTES = 4096;

/** Adds the complete lines of `bytes` (which ends with a newline) to `state`. */
function scanLines(bytes: Buffer, state: ScanState): void {
  let nextUsage = bytes.indexOf(USAGE_NEEDLE);
  let nextHandoff = bytes.indexOf(HANDOFF_NEEDLE);
  let position = 0;
  while (nextUsage !== -1 || nextHandoff !== -1) {
    const hit = nextUsage === -1 ? nextHandoff : nextHandoff === -1 ? nextUsage : Math.min(nextUsage, nextHandoff);
    const start = bytes.lastIndexOf(NEWLINE, hit) + 1;
    const end = bytes.indexOf(NEWLINE, hit);
    const usage = nextHandoff === hit ? undefined : assistantUsage(bytes, start, end);
    if (usage !== undefined) state.whole = addUsage(state.whole, usage);
    else countLine(bytes.toString("utf8", start, end), state);
    position = end + 1;
    if (nextUsage !== -1 && nextUsage < position) nextUsage = bytes.indexOf(USAGE_NEEDLE, position);
    if (nextHandoff !== -1 && nextHandoff < position) nextHandoff = bytes.indexOf(HANDOFF_NEEDLE, position);
  }
}

const MESSAGE_PREFIX = Buffer.from('{"type":"message",');
const ASSISTANT_ROLE = Buffer.from('"message":{"role":"assistant",');
const STOP_REASON_NEXT = Buffer.from(',"stopReason":"');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * The usage of an assistant message line as Pi writes it, without decoding the line: the entry's
 * message is an assistant's, and the line's last `"usage":{` opens an object followed by the
 * message's `stopReason` (Pi writes `usage` after `content`, then `stopReason`), so it is the
 * message's own, not a key inside its content. Undefined when the line is not of that shape: it
 * is then decoded whole (`countLine`).
 */
function assistantUsage(bytes: Buffer, start: number, end: number): UsageTotals | undefined {
  if (
    end - start < MESSAGE_PREFIX.length ||
    bytes.compare(MESSAGE_PREFIX, 0, MESSAGE_PREFIX.length, start, start + MESSAGE_PREFIX.length) !== 0
  )
    return undefined;
  const role = bytes.indexOf(ASSISTANT_ROLE, start);
  if (role === -1 || role >= end) return undefined;
  const key = bytes.lastIndexOf(USAGE_NEEDLE, end - USAGE_NEEDLE.length);
  if (key < role) return undefined;
  const open = key + USAGE_NEEDLE.length - 1;
  const close = objectEnd(bytes, open, end);
  if (close === undefined) return undefined;
  const next = close + 1;
  if (
    next + STOP_REASON_NEXT.length > end ||
    bytes.compare(STOP_REASON_NEXT, 0, STOP_REASON_NEXT.length, next, next + STOP_REASON_NEXT.length) !== 0
  )
    return undefined;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8", open, close + 1));
  } catch {
    return undefined;
  }
  const usage = UsageFieldSchema.safeParse(value);
  return usage.success ? totalsOf(usage.data) : undefined;
}

/** Where the JSON object opening at `open` closes (strings and escapes respected), before `end`. */
function objectEnd(bytes: Buffer, open: number, end: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let index = open; index < end; index++) {
    const byte = bytes[index];
    if (inString) {
      if (byte === BACKSLASH) index++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE) depth++;
    else if (byte === CLOSE_BRACE && --depth === 0) return index;
  }
  return undefined;
}

function countLine(line: string, state: ScanState): void {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return;
  }
  const entry = CountedEntrySchema.safeParse(value);
  if (!entry.success) return;
  if (entry.data.type === "custom_message" && entry.data.customType === HANDOFF_MESSAGE_TYPE) {
    const handoffId = entry.data.details?.handoffId;
    state.marks.push({ ...(handoffId === undefined ? {} : { handoffId }), at: { ...state.whole } });
    return;
  }
  const usage = countedUsage(entry.data);
  if (usage !== undefined) state.whole = addUsage(state.whole, usage);
}

/** The own part of a scanned file for the handoff `handoffId` (undefined: a session no handoff made). */
function ownUsage(state: ScanState, handoffId: string | undefined): { own: UsageTotals; forkPoint: ForkPoint } {
  const mark = handoffId === undefined ? undefined : state.marks.find((candidate) => candidate.handoffId === handoffId);
  if (mark !== undefined) return { own: subtractUsage(state.whole, mark.at), forkPoint: "handoff_message" };
  const last = handoffId === undefined ? undefined : state.marks.at(-1);
  if (last !== undefined) return { own: subtractUsage(state.whole, last.at), forkPoint: "last_handoff_message" };
  return { own: { ...state.whole }, forkPoint: "start" };
}

interface FileStamp {
  dev: string;
  ino: string;
  size: number;
  mtimeNs: string;
}

const CachedFileSchema = z.strictObject({
  dev: z.string(),
  ino: z.string(),
  size: z.number().int().nonnegative(),
  mtimeNs: z.string(),
  /** sha256 of the first and the last bytes before `state.offset`: unchanged in a file that only grew. */
  fingerprint: z.string(),
  state: ScanStateSchema,
  usedAt: z.number(),
});
type CachedFile = z.infer<typeof CachedFileSchema>;

export const USAGE_CACHE_VERSION = 1;
/** The cache file's format. */
export const UsageCacheFileSchema = z.strictObject({
  version: z.literal(USAGE_CACHE_VERSION),
  files: z.record(z.string(), CachedFileSchema),
});

/** Entries the cache keeps; beyond it the least recently used are dropped when it is saved. */
export const MAX_CACHED_FILES = 5_000;

const USED_AT_REFRESH_MS = 60 * 60_000;

export function usageCacheFile(agentDir: string): string {
  return join(agentDir, "handoff-worktree", "usage-cache.json");
}

/** The usage of session files, each read only as far as it changed since the last time (in memory and on disk). */
export class SessionUsageCache {
  readonly #file: string | undefined;
  #files: Map<string, CachedFile> | undefined;
  #loading: Promise<Map<string, CachedFile>> | undefined;
  #changed = false;
  readonly #now: () => number;

  /** `file`: where the cache is kept between processes; undefined keeps it in memory only. */
  constructor(file: string | undefined, now: () => number = Date.now) {
    this.#file = file;
    this.#now = now;
  }

  static forAgentDir(agentDir: string): SessionUsageCache {
    return new SessionUsageCache(usageCacheFile(agentDir));
  }

  /** The usage of `sessionFile`; `handoffId` names the handoff that forked it (its own part starts after that message). */
  async usageOf(sessionFile: string, handoffId?: string): Promise<SessionUsage> {
    const files = await this.#load();
    let stamp: FileStamp;
    try {
      const stats = await stat(sessionFile, { bigint: true });
      if (!stats.isFile()) return { code: "missing" };
      stamp = {
        dev: String(stats.dev),
        ino: String(stats.ino),
        size: Number(stats.size),
        mtimeNs: String(stats.mtimeNs),
      };
    } catch {
      return { code: "missing" };
    }
    const cached = files.get(sessionFile);
    let state: ScanState | undefined;
    if (cached !== undefined && sameStamp(cached, stamp)) state = cached.state;
    else {
      const scanned = await scanFile(sessionFile, stamp, cached);
      if (scanned === undefined) {
        files.delete(sessionFile);
        return { code: "missing" };
      }
      state = scanned.state;
      files.set(sessionFile, { ...stamp, fingerprint: scanned.fingerprint, state, usedAt: this.#now() });
      this.#changed = true;
    }
    // Recency only orders what the bound drops: refreshed at most hourly, so a warm run writes nothing.
    const entry = files.get(sessionFile);
    if (entry !== undefined && this.#now() - entry.usedAt > USED_AT_REFRESH_MS) {
      entry.usedAt = this.#now();
      this.#changed = true;
    }
    return {
      code: "read",
      ...ownUsage(state, handoffId),
      whole: { ...state.whole },
      bytes: state.offset,
      pending: state.offset < stamp.size,
    };
  }

  /** Writes what changed to the cache file (a failure to write only costs the next run a re-read). */
  async save(): Promise<void> {
    if (this.#file === undefined || this.#files === undefined || !this.#changed) return;
    const kept = [...this.#files.entries()].sort((a, b) => b[1].usedAt - a[1].usedAt).slice(0, MAX_CACHED_FILES);
    const text = JSON.stringify({ version: USAGE_CACHE_VERSION, files: Object.fromEntries(kept) });
    try {
      await mkdir(dirname(this.#file), { recursive: true });
      await writeFileAtomic(this.#file, `${text}\n`, { durable: false });
      this.#changed = false;
    } catch {
      // The cache is only an accelerator: the next run reads the files again.
    }
  }

  /** The cache file read once, however many reads ask for it at once (a tree reads 16 sessions at a time). */
  #load(): Promise<Map<string, CachedFile>> {
    this.#loading ??= this.#read();
    return this.#loading;
  }

  async #read(): Promise<Map<string, CachedFile>> {
    let files = new Map<string, CachedFile>();
    if (this.#file !== undefined) {
      try {
        const parsed = UsageCacheFileSchema.safeParse(JSON.parse(await readFile(this.#file, "utf8")));
        if (parsed.success) files = new Map(Object.entries(parsed.data.files));
      } catch {
        // Missing or unreadable: an empty cache.
      }
    }
    this.#files = files;
    return files;
  }
}

function sameStamp(cached: FileStamp, stamp: FileStamp): boolean {
  return (
    cached.dev === stamp.dev &&
    cached.ino === stamp.ino &&
    cached.size === stamp.size &&
    cached.mtimeNs === stamp.mtimeNs
  );
}

/**
 * Scans `file` from where `cached` stopped when the file only grew since, else from its start.
 * Undefined when the file cannot be read.
 */
async function scanFile(
  file: string,
  stamp: FileStamp,
  cached: CachedFile | undefined,
): Promise<{ state: ScanState; fingerprint: string } | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, "r");
  } catch {
    return undefined;
  }
  try {
    let state: ScanState = { offset: 0, whole: { ...ZERO_USAGE }, marks: [] };
    if (
      cached !== undefined &&
      cached.dev === stamp.dev &&
      cached.ino === stamp.ino &&
      stamp.size >= cached.state.offset &&
      (await fingerprint(handle, cached.state.offset)) === cached.fingerprint
    )
      state = { offset: cached.state.offset, whole: { ...cached.state.whole }, marks: [...cached.state.marks] };
    // Read up to the size stat saw: what is appended meanwhile waits for the next read.
    await readLineRuns(handle, { start: state.offset, end: stamp.size }, CHUNK_BYTES, (bytes, offset) => {
      scanLines(bytes, state);
      state.offset = offset + bytes.length;
    });
    return { state, fingerprint: await fingerprint(handle, state.offset) };
  } catch (error) {
    // A file that cannot be read (gone, permissions) is missing; anything else is a fault to show.
    if (/^E[A-Z]+$/.test(errorCode(error) ?? "")) return undefined;
    throw error;
  } finally {
    await handle.close();
  }
}

/** The fingerprint of the bytes before `offset`: its first and last `FINGERPRINT_BYTES`. */
async function fingerprint(handle: Awaited<ReturnType<typeof open>>, offset: number): Promise<string> {
  const hash = createHash("sha256");
  const length = Math.min(FINGERPRINT_BYTES, offset);
  for (const position of [0, offset - length]) {
    const bytes = Buffer.alloc(length);
    const { bytesRead } = await handle.read(bytes, 0, length, position);
    hash.update(bytes.subarray(0, bytesRead));
  }
  return `${offset}:${hash.digest("hex")}`;
}
