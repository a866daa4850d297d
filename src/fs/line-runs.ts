/**
 * Reading a large line-oriented file (a Pi session) a chunk at a time: the one chunk-and-carry
 * reader of the fork writer (session/active-path.ts) and the usage counter (session/usage.ts).
 *
 * Invariants:
 * - Memory is bounded by one chunk plus the line a chunk ends inside, never the whole file.
 * - Each call of `onLines` gets a run of complete lines, ending with its newline, and the file
 *   offset of its first byte; runs follow each other without gap or overlap. What follows the last
 *   newline read (a line still being written, or a file's last line without one) is returned, not
 *   handed to `onLines`. The run's bytes may be the reused read buffer: valid during the call only.
 * - Reads from `start` and never at or past `end` when one is given: bytes appended after a caller
 *   took the file's size wait for its next read.
 */
import type { FileHandle } from "node:fs/promises";

const NEWLINE = 0x0a;

export interface LineRange {
  /** The offset of the first byte to read (the start of a line). */
  start: number;
  /** Exclusive; the end of the file when absent. */
  end?: number;
}

/** Reads `range` of `handle`, `chunkBytes` at a time; returns the bytes after the last newline and their offset. */
export async function readLineRuns(
  handle: FileHandle,
  range: LineRange,
  chunkBytes: number,
  onLines: (bytes: Buffer, offset: number) => void,
): Promise<{ rest: Buffer; restStart: number }> {
  const buffer = Buffer.allocUnsafe(chunkBytes);
  let carry: Buffer = Buffer.alloc(0);
  // Where `carry` starts: the offset of the next run's first byte.
  let carryStart = range.start;
  let position = range.start;
  while (range.end === undefined || position < range.end) {
    const length = range.end === undefined ? buffer.length : Math.min(buffer.length, range.end - position);
    const { bytesRead } = await handle.read(buffer, 0, length, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    const chunk =
      carry.length > 0 ? Buffer.concat([carry, buffer.subarray(0, bytesRead)]) : buffer.subarray(0, bytesRead);
    const lastNewline = chunk.lastIndexOf(NEWLINE);
    if (lastNewline !== -1) onLines(chunk.subarray(0, lastNewline + 1), carryStart);
    // The unfinished line is copied out: `buffer` is reused by the next read.
    carry = Buffer.from(chunk.subarray(lastNewline + 1));
    carryStart += lastNewline + 1;
  }
  return { rest: carry, restStart: carryStart };
}
