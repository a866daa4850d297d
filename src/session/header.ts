/**
 * Reading a session file's header line without loading the rest of the file.
 *
 * Invariants: read-only; reads at most `MAX_HEADER_BYTES`; never throws for a missing or
 * malformed file (the result says which).
 */
import { closeSync, openSync, readSync } from "node:fs";
import { z } from "zod";
import type { Outcome } from "../outcome.ts";

const MAX_HEADER_BYTES = 1024 * 1024;

export const SessionHeaderSchema = z.looseObject({
  type: z.literal("session"),
  version: z.number().int().optional(),
  id: z.string(),
  timestamp: z.string().optional(),
  cwd: z.string(),
  parentSession: z.string().optional(),
});
export type SessionHeaderLine = z.infer<typeof SessionHeaderSchema>;

export type HeaderReadFailure = "missing" | "invalid";
export type HeaderRead = Outcome<{ header: SessionHeaderLine & { version: number } }, HeaderReadFailure>;

export function readSessionHeader(sessionFile: string): HeaderRead {
  let fd: number;
  try {
    fd = openSync(sessionFile, "r");
  } catch {
    return { ok: false, code: "missing", message: `The session file ${sessionFile} cannot be read.` };
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    const buffer = Buffer.alloc(64 * 1024);
    while (total < MAX_HEADER_BYTES) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      const chunk = Buffer.from(buffer.subarray(0, read));
      const newline = chunk.indexOf(0x0a);
      if (newline !== -1) {
        chunks.push(chunk.subarray(0, newline));
        break;
      }
      chunks.push(chunk);
      total += read;
    }
    const line = Buffer.concat(chunks).toString("utf8").trim();
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return {
        ok: false,
        code: "invalid",
        message: `The session file ${sessionFile} does not start with a JSON header.`,
      };
    }
    const header = SessionHeaderSchema.safeParse(parsed);
    if (!header.success) {
      return { ok: false, code: "invalid", message: `The session file ${sessionFile} has no valid session header.` };
    }
    // Version 1 files have no version field.
    return { ok: true, header: { ...header.data, version: header.data.version ?? 1 } };
  } finally {
    closeSync(fd);
  }
}
