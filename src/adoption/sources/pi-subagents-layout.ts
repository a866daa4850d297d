/**
 * Where pi-subagents (npm `pi-subagents`, checked against 0.67.0) keeps its background runs, and
 * the shape of the files, as zod schemas. Pure layout knowledge: no I/O except `os` lookups.
 *
 * Invariants:
 * - `indexSegment` is the package's `encodeIndexSegment` exactly (a unit test compares the two
 *   on arbitrary strings), so index directories are found by name, never by listing everything.
 * - Every schema is loose (extra fields pass) and tolerant of absent optional fields; a file whose
 *   core fields have the wrong type does not decode and is skipped by the caller.
 */
import { createHash } from "node:crypto";
import os from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";

export const MAX_INDEX_SEGMENT_BYTES = 255;
/** Result-index file names keep room for `.json` inside one 255-byte path component. */
export const MAX_JSON_STEM_BYTES = MAX_INDEX_SEGMENT_BYTES - ".json".length;
const HASHED_PREFIX = "~sha256-";
const WINDOWS_RESERVED_NAME = /^(?:con|prn|aux|nul|com[1-9]|lpt[1-9])(?:\.|$)/i;

function hashedSegment(value: string): string {
  return `${HASHED_PREFIX}${createHash("sha256").update(value).digest("hex")}`;
}

function isPortableSegment(encoded: string): boolean {
  return (
    encoded.length > 0 &&
    encoded !== "." &&
    encoded !== ".." &&
    !encoded.endsWith(".") &&
    !WINDOWS_RESERVED_NAME.test(encoded) &&
    !/%5C/i.test(encoded) &&
    // A trailing file extension (a `.jsonl` session path) is not portable: such keys always hash.
    !/\.[A-Za-z][A-Za-z0-9]{0,7}$/.test(encoded)
  );
}

/** `seg(v)`: `encodeURIComponent(v)` when portable and short enough, else `~sha256-<hex>`. */
export function indexSegment(value: string, maxBytes = MAX_INDEX_SEGMENT_BYTES): string {
  let encoded: string;
  try {
    encoded = encodeURIComponent(value);
  } catch {
    // A lone surrogate cannot be URI-encoded.
    return hashedSegment(value);
  }
  if (Buffer.byteLength(encoded, "utf8") <= maxBytes && isPortableSegment(encoded)) return encoded;
  return hashedSegment(value);
}

/**
 * The names a reader tries for one key: the current one, then the plain `encodeURIComponent`
 * form that older releases wrote (when it is a usable path component and differs).
 */
export function indexSegmentAliases(value: string, maxBytes = MAX_INDEX_SEGMENT_BYTES): string[] {
  const current = indexSegment(value, maxBytes);
  let plain: string | undefined;
  try {
    plain = encodeURIComponent(value);
  } catch {
    plain = undefined;
  }
  const usable =
    plain !== undefined &&
    plain.length > 0 &&
    plain !== "." &&
    plain !== ".." &&
    !plain.endsWith(".") &&
    !WINDOWS_RESERVED_NAME.test(plain) &&
    Buffer.byteLength(plain, "utf8") <= maxBytes;
  return usable && plain !== current ? [current, plain as string] : [current];
}

function sanitizeScopeSegment(value: string): string {
  return (
    value
      .trim()
      .replace(/[^A-Za-z0-9._-]+/g, "-")
      .replace(/^-+|-+$/g, "") || "unknown"
  );
}

/**
 * The temp roots pi-subagents may use, most likely first: `$PI_SUBAGENTS_TEMP_ROOT` alone when set;
 * otherwise `<tmpdir>/pi-subagents-uid-<uid>`, then the fallback scopes pi-subagents uses where
 * there is no uid (`user-<name>`, `home-<dir>`, `shared`).
 */
export function candidateTempRoots(env: NodeJS.ProcessEnv = process.env, tmpdir: string = os.tmpdir()): string[] {
  const configured = env.PI_SUBAGENTS_TEMP_ROOT?.trim();
  if (configured) return [resolve(configured)];
  const scopes: string[] = [];
  if (typeof process.getuid === "function") scopes.push(`uid-${process.getuid()}`);
  for (const key of ["USERNAME", "USER", "LOGNAME"] as const) {
    const value = env[key];
    if (value) scopes.push(`user-${sanitizeScopeSegment(value)}`);
  }
  try {
    const name = os.userInfo().username;
    if (name) scopes.push(`user-${sanitizeScopeSegment(name)}`);
  } catch {
    // No passwd entry: the home scope below still applies.
  }
  const home = env.USERPROFILE ?? env.HOME;
  if (home) scopes.push(`home-${sanitizeScopeSegment(home)}`);
  scopes.push("shared");
  return [...new Set(scopes)].map((scope) => join(tmpdir, `pi-subagents-${scope}`));
}

export interface PiSubagentsDirs {
  root: string;
  /** `async-subagent-runs`: one directory per run, plus `.active-runs/` and `.terminal-runs/`. */
  runs: string;
  /** `async-subagent-results`: `<runId>.json`, `result-index/`, `result-pending/`. */
  results: string;
}

export function layoutFor(root: string): PiSubagentsDirs {
  return { root, runs: join(root, "async-subagent-runs"), results: join(root, "async-subagent-results") };
}

/** A run id usable as one path component (anything else is not a run directory we may open). */
export function isSafeRunId(runId: string): boolean {
  return (
    runId.length > 0 &&
    runId !== "." &&
    runId !== ".." &&
    !runId.startsWith(".") &&
    !/[/\\\0]/.test(runId) &&
    Buffer.byteLength(runId) <= 255
  );
}

export const activeRunsDir = (dirs: PiSubagentsDirs): string => join(dirs.runs, ".active-runs");
export const terminalRunsDirs = (dirs: PiSubagentsDirs, sessionKey: string): string[] =>
  indexSegmentAliases(sessionKey).map((segment) => join(dirs.runs, ".terminal-runs", segment));
export const resultIndexDirs = (dirs: PiSubagentsDirs, sessionKey: string): string[] =>
  indexSegmentAliases(sessionKey).map((segment) => join(dirs.results, "result-index", "sessions", segment));
export const resultPendingDirs = (dirs: PiSubagentsDirs, sessionKey: string): string[] =>
  indexSegmentAliases(sessionKey).map((segment) => join(dirs.results, "result-pending", segment));
export const runDir = (dirs: PiSubagentsDirs, runId: string): string => join(dirs.runs, runId);
export const statusPath = (dirs: PiSubagentsDirs, runId: string): string => join(dirs.runs, runId, "status.json");
export const publicResultPath = (dirs: PiSubagentsDirs, runId: string): string => join(dirs.results, `${runId}.json`);
/** A workflow child that its workflow awaits writes its result beside its status, not to the results dir. */
export const workflowChildResultPath = (dirs: PiSubagentsDirs, runId: string): string =>
  join(dirs.runs, runId, "workflow-result.json");
export const pendingResultPaths = (dirs: PiSubagentsDirs, sessionKey: string, runId: string): string[] =>
  resultPendingDirs(dirs, sessionKey).flatMap((dir) =>
    indexSegmentAliases(runId, MAX_JSON_STEM_BYTES).map((segment) => join(dir, `${segment}.json`)),
  );
/** Written just before a delivered result is removed: what the owner was told, kept for a while. */
export const completionReplayPath = (dirs: PiSubagentsDirs, runId: string): string =>
  join(dirs.results, "completion-replay", `${encodeURIComponent(runId)}.json`);
export const completionArchivePath = (dirs: PiSubagentsDirs, runId: string): string =>
  join(dirs.results, "output-archives", `${encodeURIComponent(runId)}.json`);

export const ACTIVE_STATES: ReadonlySet<string> = new Set(["queued", "running"]);

const optionalNumber = z.number().finite().optional();
const optionalString = z.string().optional();

export const StatusStepSchema = z.looseObject({
  agent: z.string().nullish(),
  status: optionalString,
  label: optionalString,
  phase: optionalString,
  workflowKey: optionalString,
  runId: optionalString,
  sessionFile: optionalString,
  error: optionalString,
  startedAt: optionalNumber,
  endedAt: optionalNumber,
  async: z.boolean().optional(),
});

export const RunStatusSchema = z.looseObject({
  runId: z.string().min(1),
  sessionId: optionalString,
  completionOwnerId: optionalString,
  mode: z.string(),
  state: z.string(),
  pid: z.number().int().optional(),
  cwd: optionalString,
  startedAt: optionalNumber,
  lastUpdate: optionalNumber,
  endedAt: optionalNumber,
  currentStep: optionalNumber,
  chainStepCount: optionalNumber,
  steps: z.array(StatusStepSchema).optional(),
  workflowKey: optionalString,
  parentWorkflowRunId: optionalString,
  outputFile: optionalString,
  sessionFile: optionalString,
  error: optionalString,
  displayDismissedAt: optionalNumber,
});
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** What a terminal marker and a result-index entry both hold: whose run it is. */
const runOfSession = { version: z.literal(1), runId: z.string().min(1), sessionId: z.string().min(1) };

export const TerminalMarkerSchema = z.looseObject({ ...runOfSession, endedAt: z.number().finite() });

export const ResultIndexEntrySchema = z.looseObject({
  ...runOfSession,
  file: z.string(),
  writtenAt: z.number(),
  asyncDir: optionalString,
});

export const ResultChildSchema = z.looseObject({
  agent: z.string().nullish(),
  output: optionalString,
  success: z.boolean().optional(),
  error: optionalString,
  sessionFile: optionalString,
  savedOutputPath: optionalString,
  artifactPaths: z.looseObject({ outputPath: optionalString }).nullish(),
});

export const ResultPayloadSchema = z.looseObject({
  id: optionalString,
  runId: optionalString,
  agent: z.string().nullish(),
  mode: optionalString,
  success: z.boolean().optional(),
  state: optionalString,
  summary: optionalString,
  error: optionalString,
  results: z.array(ResultChildSchema).optional(),
  timestamp: optionalNumber,
  durationMs: optionalNumber,
  sessionId: optionalString,
  asyncDir: optionalString,
  notificationDeliveredAt: optionalNumber,
});
export type ResultPayload = z.infer<typeof ResultPayloadSchema>;

/** What pi-subagents keeps of a delivered result: saved output paths, or a bounded tail of its text. */
export const CompletionArchiveSchema = z.looseObject({
  version: z.literal(1),
  runId: z.string(),
  entries: z.array(
    z.looseObject({
      agent: z.string().optional(),
      source: z.string(),
      path: optionalString,
      text: optionalString,
    }),
  ),
});
