/**
 * The end of a session file, read cheaply: what the last entries say about the session's turn.
 *
 * Invariants:
 * - Reads at most `maxBytes` (a fixed window at the end of the file), never the whole session, so
 *   the cost does not grow with the session's length; one open, one stat, one read (`readFileEnd`),
 *   and through `SessionTails` one stat alone for a file that has not changed.
 * - Only complete lines count: the first line of the window (cut at its start) and a last line
 *   without its newline (a write in progress) are dropped; lines that are not JSON are skipped.
 * - Keeps only what the turn decision needs (type, time, role, stop reason, tool names), never
 *   message text, so nothing of the conversation leaves this module.
 * - A missing or unreadable file is `undefined`, not an error: a session is written lazily.
 * - A tail's entries are parsed on first use, once: until then it holds the window's bytes only.
 * - `SessionTails` reads a file again only when it changed (device, inode, size, modification and
 *   change times): a watch that asks every 2 s about idle children parses nothing new.
 */
import { stat } from "node:fs/promises";
import { readFileEnd, type FileEnd } from "../fs/probe.ts";
import { z } from "zod";

export const DEFAULT_TAIL_BYTES = 64 * 1024;

/** One session entry, reduced to what tells a turn's progress. */
export interface TailEntry {
  type: string;
  /** The entry's ISO time, when it has one. */
  timestamp?: string;
  /** `message` entries: the message's role (user, assistant, toolResult, custom, ...). */
  role?: string;
  /** Assistant messages: why the model stopped (stop, toolUse, length, error, aborted). */
  stopReason?: string;
  /** Assistant messages: the names of the tools it called. */
  toolCalls?: string[];
  /** `custom` / `custom_message` entries. */
  customType?: string;
}

export interface SessionTail {
  entries: TailEntry[];
  /** Size and modification time of the file when it was read. */
  size: number;
  mtime: string;
}

const EntrySchema = z.looseObject({
  type: z.string(),
  timestamp: z.string().optional(),
  customType: z.string().optional(),
  message: z
    .looseObject({
      role: z.string().optional(),
      stopReason: z.string().optional(),
      content: z.unknown().optional(),
    })
    .optional(),
});

/** One block of an assistant message's content that calls a tool (built once: a zod schema is costly to build). */
const ToolCallBlockSchema = z.looseObject({ type: z.literal("toolCall"), name: z.string() });

/**
 * The last complete entries of `file` within its final `maxBytes`, or undefined when it cannot be
 * read. The entries are parsed when first asked for: an inventory reads every child's tail, but only
 * a live child's turn is judged from it (an exited one needs only `mtime`).
 */
export async function readSessionTail(file: string, maxBytes = DEFAULT_TAIL_BYTES): Promise<SessionTail | undefined> {
  const end = await readFileEnd(file, maxBytes);
  if (end === undefined) return undefined;
  // The window's bytes until its entries are parsed, then the entries alone.
  let window: FileEnd | undefined = end;
  let entries: TailEntry[] = [];
  return {
    get entries(): TailEntry[] {
      if (window !== undefined) {
        entries = parseTail(window.bytes.toString("utf8"), window.cut);
        window = undefined;
      }
      return entries;
    },
    size: end.size,
    mtime: end.mtime.toISOString(),
  };
}

/** The tails of several files, each read again only once the file changed since its last read. */
export class SessionTails {
  readonly #last = new Map<string, { key: string; tail: SessionTail }>();

  async read(file: string, maxBytes = DEFAULT_TAIL_BYTES): Promise<SessionTail | undefined> {
    let key: string;
    try {
      const stats = await stat(file, { bigint: true });
      key = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}:${maxBytes}`;
    } catch {
      this.#last.delete(file);
      return undefined;
    }
    const last = this.#last.get(file);
    if (last?.key === key) return last.tail;
    const tail = await readSessionTail(file, maxBytes);
    if (tail === undefined) this.#last.delete(file);
    else this.#last.set(file, { key, tail });
    return tail;
  }

  /** Forgets every file but `files` (the ones still watched). */
  keepOnly(files: ReadonlySet<string>): void {
    for (const file of this.#last.keys()) if (!files.has(file)) this.#last.delete(file);
  }
}

/** Entries of a window of JSONL text; `cut` says its first line may be a fragment. */
export function parseTail(text: string, cut: boolean): TailEntry[] {
  const lines = text.split("\n");
  // The last element is "" after a final newline, or a line still being written: drop it either way.
  lines.pop();
  if (cut) lines.shift();
  const entries: TailEntry[] = [];
  for (const line of lines) {
    if (line.trim().length === 0) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    const parsed = EntrySchema.safeParse(value);
    if (!parsed.success) continue;
    entries.push(reduce(parsed.data));
  }
  return entries;
}

function reduce(entry: z.infer<typeof EntrySchema>): TailEntry {
  const reduced: TailEntry = { type: entry.type };
  if (entry.timestamp !== undefined) reduced.timestamp = entry.timestamp;
  if (entry.customType !== undefined) reduced.customType = entry.customType;
  const message = entry.message;
  if (entry.type === "message" && message !== undefined) {
    if (message.role !== undefined) reduced.role = message.role;
    if (message.stopReason !== undefined) reduced.stopReason = message.stopReason;
    if (message.role === "assistant" && Array.isArray(message.content)) {
      const names = message.content.flatMap((block: unknown) => {
        const call = ToolCallBlockSchema.safeParse(block);
        return call.success ? [call.data.name] : [];
      });
      if (names.length > 0) reduced.toolCalls = names;
    }
  }
  return reduced;
}
