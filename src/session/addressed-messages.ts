/**
 * Messages addressed to one session alone: a child's report or a landing's notice delivered into
 * its parent (adoption/reports.ts), a note delivered into a child (adoption/notes.ts). A fork does not
 * hand them on: in the child session each becomes a `custom` entry, which Pi keeps out of the
 * model's context and, with no renderer for it, off the screen; the message is kept whole under
 * `data`, for the record.
 *
 * Invariants:
 * - The entry keeps its id, parent and time: the tree is untouched (nothing is re-chained), so the
 *   child's path is the parent's, entry for entry, with these few lines rewritten.
 * - Recognised by type and custom type only; every other entry is left as it is.
 * - Copying a file streams it line by line (memory bounded by one line), writing a temp file beside
 *   the target, renamed into place.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { once } from "node:events";
import { rename, rm } from "node:fs/promises";
import { createInterface } from "node:readline";
import { tempPathBeside } from "../fs/atomic-write.ts";
import { NOTE_MESSAGE_TYPE, REPORT_MESSAGE_TYPE } from "./message-types.ts";

const ADDRESSED_TYPES: ReadonlySet<string> = new Set([REPORT_MESSAGE_TYPE, NOTE_MESSAGE_TYPE]);

type Entry = Record<string, unknown>;

/** Whether this session entry is a message addressed to its session alone. */
export function isAddressedMessage(entry: Entry): boolean {
  return (
    entry.type === "custom_message" && typeof entry.customType === "string" && ADDRESSED_TYPES.has(entry.customType)
  );
}

/** The entry a fork writes for an addressed message: a custom entry in its place (Pi's key order). */
export function notHandedOn(entry: Entry): Entry {
  const { customType, content, display, details, id, parentId, timestamp } = entry;
  return { type: "custom", customType, data: { content, display, details }, id, parentId, timestamp };
}

/** Copies a session file with every addressed message rewritten (`notHandedOn`), the rest as it is. */
export async function copyWithoutAddressedMessages(from: string, to: string): Promise<void> {
  const temp = tempPathBeside(to);
  try {
    const out = createWriteStream(temp, { flags: "wx" });
    const closed = once(out, "close");
    const lines = createInterface({ input: createReadStream(from), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const line of lines) {
      const text = line.includes('"custom_message"') ? rewritten(line) : line;
      if (!out.write(`${text}\n`)) await once(out, "drain");
    }
    out.end();
    await closed;
    await rename(temp, to);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

function rewritten(line: string): string {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return line;
    return isAddressedMessage(value as Entry) ? JSON.stringify(notHandedOn(value as Entry)) : line;
  } catch {
    // Not an entry Pi would read: left for Pi to skip as it skips it in the parent.
    return line;
  }
}
