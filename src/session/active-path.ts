/**
 * Write the child session straight from the parent file: Pi's branched session of the active path
 * (what `SessionManager.createBranchedSession` writes) plus the handoff message (what
 * `appendCustomMessageEntry` adds), without loading the conversation into memory (ADR 0014).
 *
 * Invariants:
 * - Reads the parent; writes only the new child file (a temp file beside it, fsynced, then linked
 *   into place, so the child exists complete or not at all, and never replaces a file).
 * - Memory is bounded by a read chunk plus a small index per entry (id, parent, type, byte range),
 *   never the whole file: the lines are parsed as far as their first keys, in full only where Pi's
 *   rules need a value (labels, a re-chained or compaction entry, a message line not in Pi's shape).
 * - The result is Pi's, entry for entry: the same header fields in Pi's order, the root-to-leaf path
 *   without label entries (re-chained where a label sat between two of them, the root's parent
 *   null), the labels Pi resolves for the path re-emitted after it with fresh ids, then one custom
 *   message. Kept lines Pi would not change are copied byte for byte.
 * - Pi's rule for writing at all holds: a path with no user or assistant message writes nothing.
 * - One exception to Pi's result, the same on both fork paths: a message addressed to the parent
 *   alone (a child's report, a note) is written as a custom entry in its place (addressed-messages.ts),
 *   so the child's context does not receive it.
 * - Only for the one session format its rules were checked against (`LEAN_WRITER_SESSION_VERSION`,
 *   pinned by test/integration/fork-equivalence.test.ts against the Pi installed): any other file,
 *   or a Pi that calls another version current, goes through Pi's SessionManager (see fork.ts).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { link, mkdir, open, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fsyncDirectory, tempPathBeside } from "../fs/atomic-write.ts";
import { readLineRuns } from "../fs/line-runs.ts";
import { isAddressedMessage, notHandedOn } from "./addressed-messages.ts";
import type { HandoffMessage } from "./handoff-message.ts";

/**
 * The session format whose branching rules this writer reproduces, as checked entry for entry
 * against Pi's SessionManager. A Pi with another current version changes those rules for all we
 * know: its forks go through its own SessionManager until the equivalence test passes on it.
 */
export const LEAN_WRITER_SESSION_VERSION = 3;

const CHUNK_BYTES = 4 * 1024 * 1024;
const NEWLINE = 0x0a;

interface Line {
  start: number;
  /** Exclusive; the newline (if any) is not part of the line. */
  end: number;
}

interface IndexedEntry extends Line {
  id: string;
  parentId: string | null;
  /** False when the line's `parentId` is neither a string nor null (Pi writes null there). */
  parentIdExact: boolean;
  type: string;
  /** For `message` entries: whether it is a user or assistant message (Pi's "has a conversation"). */
  conversation?: boolean;
  /** A message addressed to this session alone: not handed on (addressed-messages.ts). */
  addressed?: boolean;
}

/** Calls `onLine` for each line with its bytes and absolute byte range, reading in large chunks. */
async function scanLines(file: string, onLine: (bytes: Buffer, line: Line) => void): Promise<void> {
  const handle = await open(file, "r");
  try {
    const { rest, restStart } = await readLineRuns(handle, { start: 0 }, CHUNK_BYTES, (bytes, offset) => {
      let lineStart = 0;
      for (let newline = bytes.indexOf(NEWLINE); newline !== -1; newline = bytes.indexOf(NEWLINE, lineStart)) {
        onLine(bytes.subarray(lineStart, newline), { start: offset + lineStart, end: offset + newline });
        lineStart = newline + 1;
      }
    });
    if (rest.length > 0) onLine(rest, { start: restStart, end: restStart + rest.length });
  } finally {
    await handle.close();
  }
}

/**
 * Pi writes entries with `type`, `id` and `parentId` as the first keys (and a message's `role`
 * first inside it). When a line starts that way, those are the top-level values (nothing nested
 * can come first), so the rest of the line need not be parsed; any other line is parsed in full.
 */
const ENTRY_PREFIX = /^\{"type":"([a-z_]+)","id":"([A-Za-z0-9_.:-]+)","parentId":(?:null|"([A-Za-z0-9_.:-]+)")[,}]/;
const MESSAGE_ROLE =
  /^\{"type":"message","id":"[^"\\]*","parentId":(?:null|"[^"\\]*"),"timestamp":"[^"\\]*","message":\{"role":"([a-zA-Z]+)"/;
const PREFIX_BYTES = 240;

type Parsed = Record<string, unknown>;

function parseLine(bytes: Buffer): Parsed | undefined {
  if (bytes.length === 0) return undefined;
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Parsed) : undefined;
  } catch {
    return undefined;
  }
}

function isConversation(message: unknown): boolean {
  const role = typeof message === "object" && message !== null ? (message as { role?: unknown }).role : undefined;
  return role === "user" || role === "assistant";
}

interface LabelState {
  label: unknown;
  timestamp: unknown;
}

/** The index of a session file: its entries by id, and its labels resolved as Pi resolves them. */
interface SessionIndex {
  header: Line | undefined;
  entries: Map<string, IndexedEntry>;
  /** Target id -> label, in Pi's map order (a label set again keeps its place; a cleared one leaves). */
  labels: Map<unknown, LabelState>;
}

async function indexSession(file: string): Promise<SessionIndex> {
  const entries = new Map<string, IndexedEntry>();
  const labels = new Map<unknown, LabelState>();
  let header: Line | undefined;
  let first = true;
  await scanLines(file, (bytes, line) => {
    const head =
      bytes.length === 0 ? null : ENTRY_PREFIX.exec(bytes.toString("latin1", 0, Math.min(bytes.length, PREFIX_BYTES)));
    let type: unknown;
    let id: unknown;
    let parentId: unknown;
    let full: Parsed | undefined;
    // The fast path only for a whole object (a line cut off mid-write is parsed, and skipped as Pi skips it).
    if (
      head !== null &&
      head[1] !== "label" &&
      head[1] !== "session" &&
      head[1] !== "custom_message" &&
      endsObject(bytes)
    ) {
      [, type, id, parentId = null] = head;
    } else {
      full = parseLine(bytes);
      if (full === undefined) return;
      ({ type, id, parentId } = full);
    }
    // Pi's loader takes the first parsed line as the header (fork.ts checked it is one).
    if (first) {
      first = false;
      if (type === "session") {
        header = line;
        return;
      }
    }
    if (type === "label" && full !== undefined) {
      // Pi's index: a label with text sets its target's label, an empty one clears it (whatever its id).
      if (full.label) labels.set(full.targetId, { label: full.label, timestamp: full.timestamp });
      else labels.delete(full.targetId);
    }
    if (type === "session" || typeof id !== "string") return;
    const entry: IndexedEntry = {
      ...line,
      id,
      parentId: typeof parentId === "string" ? parentId : null,
      parentIdExact: typeof parentId === "string" || parentId === null,
      type: typeof type === "string" ? type : "",
    };
    if (type === "message") {
      const role = MESSAGE_ROLE.exec(bytes.toString("latin1", 0, Math.min(bytes.length, PREFIX_BYTES)));
      entry.conversation =
        role !== null
          ? role[1] === "user" || role[1] === "assistant"
          : isConversation((full ?? parseLine(bytes))?.message);
    }
    if (full !== undefined && isAddressedMessage(full)) entry.addressed = true;
    entries.set(id, entry);
  });
  return { header, entries, labels };
}

/** Whether the line's last character (before trailing whitespace) closes an object. */
function endsObject(bytes: Buffer): boolean {
  let end = bytes.length - 1;
  while (end >= 0 && (bytes[end] === 0x0d || bytes[end] === 0x20 || bytes[end] === 0x09)) end--;
  return end >= 0 && bytes[end] === 0x7d;
}

/** Pi's short entry id: 8 hex characters not yet taken (a full UUID after 100 collisions). */
function newEntryId(taken: ReadonlySet<string>): string {
  for (let i = 0; i < 100; i++) {
    const id = randomUUID().slice(0, 8);
    if (!taken.has(id)) return id;
  }
  return randomUUID();
}

/** A version 7 UUID (time-ordered), the form of Pi's session ids. */
function newSessionId(now: number): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** One piece of the child file: a line of the parent copied as it is, or a line written anew. */
type Part = { kind: "copy"; line: Line } | { kind: "text"; text: string };

/** Copied lines that are neighbours in the parent become one range (with the newline between). */
function mergeNeighbours(parts: readonly Part[]): Part[] {
  const merged: Part[] = [];
  for (const part of parts) {
    const last = merged.at(-1);
    if (part.kind === "copy" && last?.kind === "copy" && last.line.end + 1 === part.line.start) {
      last.line = { start: last.line.start, end: part.line.end };
    } else {
      merged.push(part.kind === "copy" ? { kind: "copy", line: { start: part.line.start, end: part.line.end } } : part);
    }
  }
  return merged;
}

export interface BranchedSessionRequest {
  parentSessionFile: string;
  leafId: string;
  childCwd: string;
  childSessionDir: string;
  message: HandoffMessage;
  sessionVersion: number;
}

export type BranchedSessionOutcome =
  | {
      code: "written";
      childSessionFile: string;
      childSessionId: string;
      /** Entries on the root-to-leaf path (labels not counted), and in the parent (header not counted). */
      pathEntries: number;
      parentEntries: number;
    }
  | { code: "leaf_missing" }
  | { code: "no_conversation" };

/** Writes the child session (see the header); `onIndexed` marks the end of reading the parent. */
export async function writeBranchedSession(
  request: BranchedSessionRequest,
  onIndexed: () => void = () => {},
): Promise<BranchedSessionOutcome> {
  const index = await indexSession(request.parentSessionFile);
  const leaf = index.entries.get(request.leafId);
  if (leaf === undefined) return { code: "leaf_missing" };
  onIndexed();

  // Pi's getBranch: from the leaf up through the parents it finds (a cycle ends the walk).
  const path: IndexedEntry[] = [];
  const seen = new Set<string>();
  for (let entry: IndexedEntry | undefined = leaf; entry !== undefined && !seen.has(entry.id); ) {
    seen.add(entry.id);
    path.push(entry);
    entry = entry.parentId === null ? undefined : index.entries.get(entry.parentId);
  }
  path.reverse();

  // Pi's createBranchedSession: label entries leave the path, which is re-chained around them.
  const kept: IndexedEntry[] = [];
  const replacementByLabelId = new Map<string, string>();
  const pendingLabelIds: string[] = [];
  const newParent = new Map<IndexedEntry, string | null>();
  // A compaction's kept-from label is replaced by what Pi knew at that point of the path.
  const replacementsAtCompaction = new Map<IndexedEntry, ReadonlyMap<string, string>>();
  let pathParentId: string | null = null;
  for (const entry of path) {
    if (entry.type === "label") {
      pendingLabelIds.push(entry.id);
      continue;
    }
    for (const labelId of pendingLabelIds) replacementByLabelId.set(labelId, entry.id);
    pendingLabelIds.length = 0;
    kept.push(entry);
    newParent.set(entry, pathParentId);
    if (entry.type === "compaction" && replacementByLabelId.size > 0)
      replacementsAtCompaction.set(entry, new Map(replacementByLabelId));
    pathParentId = entry.id;
  }
  if (!kept.some((entry) => entry.conversation === true)) return { code: "no_conversation" };

  const parent = await open(request.parentSessionFile, "r");
  try {
    const readLine = async (line: Line): Promise<Buffer> => {
      const bytes = Buffer.allocUnsafe(line.end - line.start);
      let done = 0;
      while (done < bytes.length) {
        const { bytesRead } = await parent.read(bytes, done, bytes.length - done, line.start + done);
        if (bytesRead === 0) throw new Error(`${request.parentSessionFile} changed while it was being read.`);
        done += bytesRead;
      }
      return bytes;
    };

    const parts: Part[] = [];
    for (const entry of kept) {
      const parentId = newParent.get(entry) ?? null;
      const rechained = parentId !== entry.parentId || !entry.parentIdExact;
      const replacements = replacementsAtCompaction.get(entry);
      if (!rechained && replacements === undefined && entry.addressed !== true) {
        parts.push({ kind: "copy", line: entry });
        continue;
      }
      const value = parseLine(await readLine(entry));
      if (value === undefined) throw new Error(`An entry of ${request.parentSessionFile} changed while it was read.`);
      const rewritten: Parsed = { ...(entry.addressed === true ? notHandedOn(value) : value), parentId };
      if (entry.type === "compaction") {
        const firstKept = value.firstKeptEntryId;
        rewritten.firstKeptEntryId =
          firstKept === entry.id
            ? entry.id
            : ((typeof firstKept === "string" ? replacements?.get(firstKept) : undefined) ?? firstKept);
      }
      parts.push({ kind: "text", text: JSON.stringify(rewritten) });
    }

    const now = Date.now();
    const timestamp = new Date(now).toISOString();
    const sessionId = newSessionId(now);
    const header = {
      type: "session",
      version: request.sessionVersion,
      id: sessionId,
      timestamp,
      cwd: resolve(request.childCwd),
      parentSession: request.parentSessionFile,
    };
    const ids = new Set(kept.map((entry) => entry.id));
    let lastId = kept.at(-1)?.id ?? null;
    const labelLines: string[] = [];
    for (const [targetId, { label, timestamp: labelTimestamp }] of index.labels) {
      if (typeof targetId !== "string" || !ids.has(targetId)) continue;
      const id = newEntryId(ids);
      labelLines.push(
        JSON.stringify({ type: "label", id, parentId: lastId, timestamp: labelTimestamp, targetId, label }),
      );
      ids.add(id);
      lastId = id;
    }
    const message = request.message;
    const messageLine = JSON.stringify({
      type: "custom_message",
      customType: message.customType,
      content: message.content,
      display: true,
      details: message.details,
      id: newEntryId(ids),
      parentId: lastId,
      timestamp: new Date().toISOString(),
    });

    const childSessionDir = resolve(request.childSessionDir);
    await mkdir(childSessionDir, { recursive: true });
    const childSessionFile = join(childSessionDir, `${timestamp.replace(/[:.]/g, "-")}_${sessionId}.jsonl`);
    const temp = tempPathBeside(childSessionFile);
    try {
      const out = await open(temp, "wx");
      try {
        const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
        let pending = 0;
        // A write may take fewer bytes than offered (a full disk says so only on the next one).
        const writeAll = async (bytes: Buffer, length: number): Promise<void> => {
          for (let done = 0; done < length; ) {
            const { bytesWritten } = await out.write(bytes, done, length - done);
            if (bytesWritten === 0) throw new Error(`Could not write ${temp}.`);
            done += bytesWritten;
          }
        };
        const flush = async (): Promise<void> => {
          if (pending > 0) await writeAll(buffer, pending);
          pending = 0;
        };
        const emit = async (text: string): Promise<void> => {
          const bytes = Buffer.from(text);
          if (bytes.length > buffer.length - pending) await flush();
          if (bytes.length > buffer.length) await writeAll(bytes, bytes.length);
          else pending += bytes.copy(buffer, pending);
        };
        // Copied lines are read straight into the output buffer: nothing is allocated per line.
        const copy = async (line: Line): Promise<void> => {
          for (let position = line.start; position < line.end; ) {
            if (pending === buffer.length) await flush();
            const length = Math.min(line.end - position, buffer.length - pending);
            const { bytesRead } = await parent.read(buffer, pending, length, position);
            if (bytesRead === 0) throw new Error(`${request.parentSessionFile} changed while it was being read.`);
            pending += bytesRead;
            position += bytesRead;
          }
        };
        await emit(`${JSON.stringify(header)}\n`);
        for (const part of mergeNeighbours(parts)) {
          if (part.kind === "copy") await copy(part.line);
          else await emit(part.text);
          await emit("\n");
        }
        for (const line of [...labelLines, messageLine]) await emit(`${line}\n`);
        await flush();
        await out.sync();
      } finally {
        await out.close();
      }
      await link(temp, childSessionFile);
    } finally {
      await rm(temp, { force: true });
    }
    await fsyncDirectory(childSessionDir);
    return {
      code: "written",
      childSessionFile,
      childSessionId: sessionId,
      pathEntries: kept.length,
      parentEntries: index.entries.size,
    };
  } finally {
    await parent.close();
  }
}
