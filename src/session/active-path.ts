/**
 * Copy just the active path of a session file (header, the root-to-leaf entries, and labels) into
 * a private file, streaming, so the fork never loads abandoned branches and never opens the parent
 * with a SessionManager (which may write to what it opens).
 *
 * Invariants:
 * - Reads the source; writes only the destination.
 * - Memory is bounded by one entry's line plus a small index per entry (id, parent, line number),
 *   never the whole file.
 * - Lines are copied byte for byte; a line that does not parse is dropped (Pi drops it too).
 */
import { createReadStream, createWriteStream } from "node:fs";
import { once } from "node:events";

interface IndexedEntry {
  parentId: string | null;
  line: number;
}

const NEWLINE = 0x0a;

/** Call `onLine(text, lineNumber)` for each line of a file, streaming (lines may be larger than a chunk). */
async function forEachLine(file: string, onLine: (text: string, line: number) => void | Promise<void>): Promise<void> {
  let pending: Buffer[] = [];
  let line = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    let start = 0;
    let newline = chunk.indexOf(NEWLINE, start);
    while (newline !== -1) {
      const piece = chunk.subarray(start, newline);
      const text = pending.length > 0 ? Buffer.concat([...pending, piece]).toString("utf8") : piece.toString("utf8");
      pending = [];
      await onLine(text, line++);
      start = newline + 1;
      newline = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length) pending.push(Buffer.from(chunk.subarray(start)));
  }
  if (pending.length > 0) await onLine(Buffer.concat(pending).toString("utf8"), line);
}

function parseEntryHead(text: string): { type?: unknown; id?: unknown; parentId?: unknown } | undefined {
  if (text.trim().length === 0) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as { type?: unknown; id?: unknown; parentId?: unknown }) : undefined;
  } catch {
    return undefined;
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
export async function copyActivePath(source: string, leafId: string, destination: string): Promise<ActivePathCopy | undefined> {
  const index = new Map<string, IndexedEntry>();
  const labelLines = new Set<number>();
  let headerLine = -1;
  await forEachLine(source, (text, line) => {
    const entry = parseEntryHead(text);
    if (entry === undefined) return;
    if (entry.type === "session") {
      if (headerLine === -1) headerLine = line;
      return;
    }
    if (typeof entry.id !== "string") return;
    index.set(entry.id, { parentId: typeof entry.parentId === "string" ? entry.parentId : null, line });
    if (entry.type === "label") labelLines.add(line);
  });
  if (!index.has(leafId)) return undefined;

  const keep = new Set<number>(labelLines);
  if (headerLine !== -1) keep.add(headerLine);
  let pathEntries = 0;
  const seen = new Set<string>();
  for (let id: string | null = leafId; id !== null && !seen.has(id); ) {
    seen.add(id);
    const entry = index.get(id);
    if (entry === undefined) break;
    keep.add(entry.line);
    pathEntries++;
    id = entry.parentId;
  }

  const out = createWriteStream(destination, { flags: "wx" });
  const closed = once(out, "close");
  await forEachLine(source, async (text, line) => {
    if (!keep.has(line)) return;
    if (!out.write(`${text}\n`)) await once(out, "drain");
  });
  out.end();
  await closed;
  return { pathEntries, sourceEntries: index.size };
}
