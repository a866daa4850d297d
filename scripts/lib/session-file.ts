/**
 * Reading a Pi session file (JSONL: a `session` header line, then one entry per line) just far
 * enough for the demo's report, without loading Pi itself.
 */
import { readFileSync } from "node:fs";

export type JsonObject = Record<string, unknown>;

export interface SessionFile {
  header: JsonObject;
  /** Every line after the header. */
  entries: JsonObject[];
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function readSessionFile(path: string): SessionFile {
  const objects = readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line): unknown => JSON.parse(line))
    .filter(isJsonObject);
  const [header, ...entries] = objects;
  if (header === undefined || header.type !== "session")
    throw new Error(`${path} does not start with a session header.`);
  return { header, entries };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => (isJsonObject(part) && typeof part.text === "string" ? part.text : ""))
    .join("");
}

/** The texts of assistant messages written after `sinceMs`, in file order. */
export function assistantAnswersSince(session: SessionFile, sinceMs: number): string[] {
  const answers: string[] = [];
  for (const entry of session.entries) {
    const message = entry.message;
    if (entry.type !== "message" || !isJsonObject(message) || message.role !== "assistant") continue;
    const at = typeof entry.timestamp === "string" ? Date.parse(entry.timestamp) : Number.NaN;
    if (at > sinceMs) answers.push(textOf(message.content));
  }
  return answers;
}
