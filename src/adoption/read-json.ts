/**
 * Reading other extensions' JSON files for adoption, defensively.
 *
 * Invariants:
 * - Read-only: files are opened for reading only; nothing is created, locked or touched.
 * - Never throws: a missing file, a file over `MAX_JSON_BYTES`, bad JSON or a schema mismatch is
 *   a result that says which, so one bad file is skipped with a note and never stops a scan.
 * - Schemas are the caller's (zod, tolerant of extra fields), so every file is decoded, not cast.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import type { z } from "zod";
import { errorCode } from "../fs/probe.ts";
import type { Outcome } from "../outcome.ts";

/** Result payloads embed child output; beyond this a file is reported, not parsed. */
export const MAX_JSON_BYTES = 16 * 1024 * 1024;

export type JsonReadFailure = "missing" | "too-large" | "unreadable" | "malformed";
export type JsonRead<T> = Outcome<{ value: T }, JsonReadFailure>;

export async function readJsonFile<S extends z.ZodType>(path: string, schema: S): Promise<JsonRead<z.infer<S>>> {
  let text: string;
  try {
    const info = await stat(path);
    if (!info.isFile()) return { ok: false, code: "unreadable", message: `${path} is not a file.` };
    if (info.size > MAX_JSON_BYTES)
      return { ok: false, code: "too-large", message: `${path} is larger than ${MAX_JSON_BYTES} bytes; skipped.` };
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" || code === "ENOTDIR" || code === "ENAMETOOLONG")
      return { ok: false, code: "missing", message: `${path} does not exist.` };
    return { ok: false, code: "unreadable", message: `${path} cannot be read (${code ?? String(error)}).` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { ok: false, code: "malformed", message: `${path} is not valid JSON; skipped.` };
  }
  const decoded = schema.safeParse(parsed);
  if (!decoded.success) {
    const issue = decoded.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
    return { ok: false, code: "malformed", message: `${path} does not have the expected shape${where}; skipped.` };
  }
  return { ok: true, value: decoded.data };
}

/** Names in a directory, or none when it does not exist (or is not a directory). */
export async function listDir(path: string, kind: "files" | "dirs" | "all" = "all"): Promise<string[]> {
  try {
    const entries = await readdir(path, { withFileTypes: true });
    return entries
      .filter((entry) => (kind === "files" ? entry.isFile() : kind === "dirs" ? entry.isDirectory() : true))
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}
