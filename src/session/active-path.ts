/**
 * Copy just the active path of a session file (header, the root-to-leaf entries, and labels) into
 * a private file, so the fork never loads abandoned branches and never opens the parent with a
 * SessionManager (which may write to what it opens).
 *
 * Invariants:
 * - Reads the source; writes only the destination (created new, never overwritten).
 * - Memory is bounded by one read chunk plus a small index per entry (id, parent, byte range),
 *   never the whole file.
 * - Kept lines are copied byte for byte, in file order; a line that does not parse is dropped
 *   (Pi drops it too).
 */
import { open } from "node:fs/promises";

const CHUNK_BYTES = 4 * 1024 * 1024;
const NEWLINE = 0x0a;

interface Line {
  start: number;
  /** Exclusive; the newline (if any) is not part of the line. */
  end: number;
}

interface IndexedEntry extends Line {
  parentId: string | null;
}

/** Calls `onLine` for each line with its bytes and absolute byte range, reading in large chunks. */
async function scanLines(file: string, onLine: (bytes: Buffer, line: Line) => void): Promise<void> {
  const handle = await open(file, "r");
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let carry: Buffer = Buffer.alloc(0);
    let carryStart = 0;
    let position = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      const chunk =
        carry.length > 0 ? Buffer.concat([carry, buffer.subarray(0, bytesRead)]) : buffer.subarray(0, bytesRead);
      const chunkStart = carry.length > 0 ? carryStart : position;
      position += bytesRead;
      let lineStart = 0;
      for (let newline = chunk.indexOf(NEWLINE); newline !== -1; newline = chunk.indexOf(NEWLINE, lineStart)) {
        onLine(chunk.subarray(lineStart, newline), { start: chunkStart + lineStart, end: chunkStart + newline });
        lineStart = newline + 1;
      }
      // The unfinished line is copied out: `buffer` is reused by the next read.
      carry = Buffer.from(chunk.subarray(lineStart));
      carryStart = chunkStart + lineStart;
    }
    if (carry.length > 0) onLine(carry, { start: carryStart, end: carryStart + carry.length });
  } finally {
    await handle.close();
  }
}

/**
 * Pi writes most entries with `type`, `id` and `parentId` as the first three keys. When a line
 * starts that way, those are the top-level values (nothing nested can come first), so the rest of
 * the line need not be parsed; any other line is parsed in full.
 */
const ENTRY_PREFIX = /^\{"type":"([a-z_]+)","id":"([A-Za-z0-9_.:-]+)","parentId":(?:null|"([A-Za-z0-9_.:-]+)")[,}]/;
const PREFIX_BYTES = 160;

function parseEntryHead(bytes: Buffer): { type?: unknown; id?: unknown; parentId?: unknown } | undefined {
  if (bytes.length === 0) return undefined;
  const prefix = ENTRY_PREFIX.exec(bytes.toString("latin1", 0, Math.min(bytes.length, PREFIX_BYTES)));
  if (prefix !== null) return { type: prefix[1], id: prefix[2], parentId: prefix[3] ?? null };
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8"));
    return typeof value === "object" && value !== null
      ? (value as { type?: unknown; id?: unknown; parentId?: unknown })
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Copy the given lines of `source` into a new file, each ending in a newline. Lines are sorted;
 * neighbours in the source are merged into one range. The source is read sequentially in large
 * chunks and the output is written in large chunks: a few dozen I/O calls for a 50 MB session.
 */
async function copyLines(source: string, lines: Line[], destination: string): Promise<void> {
  const ranges: Line[] = [];
  for (const line of lines) {
    const last = ranges.at(-1);
    // `end` excludes the newline, so a following line starts at end + 1.
    if (last !== undefined && line.start === last.end + 1) last.end = line.end;
    else ranges.push({ ...line });
  }
  const input = await open(source, "r");
  const output = await open(destination, "wx");
  try {
    const inBuffer = Buffer.allocUnsafe(CHUNK_BYTES);
    const outBuffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let pending = 0;
    const emit = async (bytes: Buffer): Promise<void> => {
      for (let offset = 0; offset < bytes.length; ) {
        const length = Math.min(bytes.length - offset, outBuffer.length - pending);
        bytes.copy(outBuffer, pending, offset, offset + length);
        pending += length;
        offset += length;
        if (pending === outBuffer.length) {
          await output.write(outBuffer, 0, pending);
          pending = 0;
        }
      }
    };
    const newline = Buffer.from([NEWLINE]);
    let rangeIndex = 0;
    for (let position = 0; rangeIndex < ranges.length; ) {
      const { bytesRead } = await input.read(inBuffer, 0, inBuffer.length, position);
      if (bytesRead === 0) throw new Error(`${source} changed while it was being copied.`);
      const chunkEnd = position + bytesRead;
      while (rangeIndex < ranges.length) {
        const range = ranges[rangeIndex] as Line;
        if (range.start >= chunkEnd) break;
        const from = Math.max(range.start, position);
        const to = Math.min(range.end, chunkEnd);
        if (to > from) await emit(inBuffer.subarray(from - position, to - position));
        if (range.end > chunkEnd) break; // continues in the next chunk
        await emit(newline);
        rangeIndex++;
      }
      position = chunkEnd;
    }
    if (pending > 0) await output.write(outBuffer, 0, pending);
    // No fsync: the copy is private and thrown away after the fork.
  } finally {
    await input.close();
    await output.close();
  }
}

export interface ActivePathCopy {
  /** Entries on the root-to-leaf path (labels not counted). */
  pathEntries: number;
  /** Entries in the source (header not counted). */
  sourceEntries: number;
}

/**
 * Write `destination` = the header line, every entry on the path from the root to `leafId`, and
 * every label entry, in file order. Returns undefined when `leafId` is not in the file.
 */
export async function copyActivePath(
  source: string,
  leafId: string,
  destination: string,
): Promise<ActivePathCopy | undefined> {
  const index = new Map<string, IndexedEntry>();
  const kept: Line[] = [];
  let header: Line | undefined;
  await scanLines(source, (bytes, line) => {
    const entry = parseEntryHead(bytes);
    if (entry === undefined) return;
    if (entry.type === "session") {
      header ??= line;
      return;
    }
    if (typeof entry.id !== "string") return;
    index.set(entry.id, { ...line, parentId: typeof entry.parentId === "string" ? entry.parentId : null });
    if (entry.type === "label") kept.push(line);
  });
  if (!index.has(leafId)) return undefined;

  if (header !== undefined) kept.push(header);
  let pathEntries = 0;
  const seen = new Set<string>();
  for (let id: string | null = leafId; id !== null && !seen.has(id); ) {
    seen.add(id);
    const entry = index.get(id);
    if (entry === undefined) break;
    kept.push(entry);
    pathEntries++;
    id = entry.parentId;
  }
  kept.sort((a, b) => a.start - b.start);
  await copyLines(source, kept, destination);
  return { pathEntries, sourceEntries: index.size };
}
