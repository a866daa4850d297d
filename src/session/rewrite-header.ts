/**
 * Replace the first line of a (possibly large) file, streaming the rest, and swap it in atomically.
 *
 * Invariants: the file is never partly rewritten (temp file beside it, fsync, rename); memory is
 * bounded by one chunk plus the first line.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { once } from "node:events";
import { tempPathBeside } from "../fs/atomic-write.ts";

export async function replaceFirstLine(file: string, replace: (line: string) => string): Promise<void> {
  const temp = tempPathBeside(file);
  try {
    const out = createWriteStream(temp, { flags: "wx" });
    const closed = once(out, "close");
    let head: Buffer[] = [];
    let headDone = false;
    for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
      let rest = chunk;
      if (!headDone) {
        const newline = chunk.indexOf(0x0a);
        if (newline === -1) {
          head.push(Buffer.from(chunk));
          continue;
        }
        head.push(chunk.subarray(0, newline));
        out.write(replace(Buffer.concat(head).toString("utf8")));
        head = [];
        headDone = true;
        rest = chunk.subarray(newline);
      }
      if (!out.write(rest)) await once(out, "drain");
    }
    if (!headDone) out.write(`${replace(Buffer.concat(head).toString("utf8"))}\n`);
    out.end();
    await closed;
    const handle = await open(temp, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
