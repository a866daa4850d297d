/**
 * A handoff child's own word on what it is doing, published beside its session lease (lease.ts)
 * for the parent that watches it: starting, working (with the tool running), waiting for the user (a
 * dialog, or a question a tool asked), compacting, idle, moved to another session, or exited (with
 * its exit code), each with the time it began.
 *
 * Layout: `<agentDir>/handoff-worktree/states/<the session's key, as its lease's>.json`, one small
 * JSON file (`ChildStateFileSchema`, the format's one definition).
 *
 * Invariants:
 * - Only a handoff's child publishes: a Pi started for a handoff (its launcher gives it the marker
 *   `PI_HANDOFF_ID`), or one whose session names its handoff (a Pi that resumed it), in every
 *   session it goes on with (a moved child is followed there). Any other Pi keeps its state in
 *   memory only (for its terminal) and leaves no file behind. The marker counts for the process
 *   it was given to only (`takeStartedMarker`): a Pi that process starts does not inherit it.
 * - Only the Pi that holds the session's lease writes its state file (`setHolding`), so a second Pi
 *   on a session never speaks for it; the last word at exit is written before the lease is released.
 * - One small atomic write per change (temp file and rename, no fsync: a status, not a record);
 *   writes never overlap and never reorder (one in flight, only the latest one waiting); `seq`
 *   counts a writer's writes.
 * - The state is derived from Pi's events by a pure reducer (`ChildActivity`): exited, then moved,
 *   then a prompt open (waiting_input), compacting, a run (working), start-up (starting), idle.
 *   `since` changes only when the state does (a new tool is a detail of working).
 * - A record counts only while its writer lives (the reader checks it against the live lease);
 *   a record whose writer is gone tells at most how it ended. A file that does not parse is no
 *   word at all (the reader falls back to the session tail), never "idle".
 * - Nothing here throws into Pi: a failed write is reported once through `onError`.
 */
import { mkdir, stat, unlink } from "node:fs/promises";
import { mkdirSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import { z } from "zod";
import { errorClause } from "../errors.ts";
import { writeFileAtomic, writeFileAtomicSync } from "../fs/atomic-write.ts";
import { readSmallFile, unlessMissing } from "../fs/probe.ts";
import { canonicalSessionPath, sessionKey } from "./lease.ts";
import { HANDOFF_ID_ENV } from "../process/facts.ts";

export { PUBLISHED_STATES, type PublishedState } from "../manifest/published-states.ts";
import { PUBLISHED_STATES, type PublishedState } from "../manifest/published-states.ts";

/** Pi's kinds of blocking prompt (`UIPromptKind`), as published. */
export const PROMPT_KINDS = ["select", "confirm", "input", "editor", "custom"] as const;
export type PromptKind = (typeof PROMPT_KINDS)[number];

const isoTime = z.string().datetime({ offset: true });

export const ChildStateFileSchema = z.strictObject({
  version: z.literal(1),
  /** The canonical session path (the file name is its key). */
  sessionFile: z.string().min(1),
  pid: z.number().int().positive(),
  host: z.string(),
  /** The handoff whose child session this is, when the writer is a handoff child. */
  handoffId: z.string().optional(),
  state: z.enum(PUBLISHED_STATES),
  /** When the writer entered `state`. */
  since: isoTime,
  /** This writer's count of its writes on this session, from 1. */
  seq: z.number().int().positive(),
  writtenAt: isoTime,
  /** `working`: the tool running now, if one is. */
  tool: z.string().min(1).optional(),
  /** `waiting_input`: the kind of prompt open, and whether a tool asked it in a turn (a question). */
  prompt: z.enum(PROMPT_KINDS).optional(),
  question: z.boolean().optional(),
  /** `exited`: the process's exit code. */
  exitCode: z.number().int().optional(),
  /** `moved`: the session this Pi went on with (/new, /resume, /fork); its state is published there. */
  movedTo: z.string().min(1).optional(),
});
export type ChildStateFile = z.infer<typeof ChildStateFileSchema>;

export function childStateDir(agentDir: string): string {
  return join(agentDir, "handoff-worktree", "states");
}

export function childStatePath(agentDir: string, sessionFile: string): string {
  return join(childStateDir(agentDir), sessionKey(sessionFile));
}

export type ChildStateRead =
  | { code: "none" }
  | { code: "unreadable"; message: string }
  | { code: "ok"; record: ChildStateFile };

/** The state file of `sessionFile`, as its writer last left it. */
export async function readChildState(agentDir: string, sessionFile: string): Promise<ChildStateRead> {
  const path = childStatePath(agentDir, sessionFile);
  const read = readSmallFile(path);
  if (read.code === "missing") return { code: "none" };
  if (read.code === "error")
    return { code: "unreadable", message: `The child state ${path} could not be read: ${errorClause(read.error)}.` };
  return parseChildState(path, read.text);
}

/**
 * Deletes the state file a removed handoff's child left (its writer is gone: removal refuses while
 * it runs). Only a record that names this handoff, or names none, is deleted: a Pi that resumed the
 * session for something else speaks for itself. Whether it went; throws what is not "missing".
 */
export async function deleteChildState(agentDir: string, sessionFile: string, handoffId: string): Promise<boolean> {
  const read = await readChildState(agentDir, sessionFile);
  if (read.code === "none") return false;
  if (read.code === "ok" && read.record.handoffId !== undefined && read.record.handoffId !== handoffId) return false;
  return unlessMissing(() => unlink(childStatePath(agentDir, sessionFile)));
}

export function parseChildState(path: string, text: string): ChildStateRead {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { code: "unreadable", message: `The child state ${path} is not valid JSON.` };
  }
  const parsed = ChildStateFileSchema.safeParse(json);
  return parsed.success
    ? { code: "ok", record: parsed.data }
    : { code: "unreadable", message: `The child state ${path} does not have the expected fields.` };
}

/**
 * The state files read before, kept by a watch across its refreshes: a file is read again only once
 * it changed (every write replaces it, so its inode changes), else it costs one stat.
 */
export class ChildStates {
  readonly #agentDir: string;
  readonly #last = new Map<string, { key: string; read: ChildStateRead }>();

  constructor(agentDir: string) {
    this.#agentDir = agentDir;
  }

  async read(sessionFile: string): Promise<ChildStateRead> {
    const path = childStatePath(this.#agentDir, sessionFile);
    let key: string;
    try {
      const stats = await stat(path, { bigint: true });
      key = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
    } catch (error) {
      this.#last.delete(path);
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { code: "none" };
      return { code: "unreadable", message: `The child state ${path} could not be read: ${errorClause(error)}.` };
    }
    const last = this.#last.get(path);
    if (last?.key === key) return last.read;
    const read = await readChildState(this.#agentDir, sessionFile);
    if (read.code === "ok") this.#last.set(path, { key, read });
    else this.#last.delete(path);
    return read;
  }

  /** Forgets every state file but those of the state files' names `keys` (the ones still watched). */
  keepOnly(keys: ReadonlySet<string>): void {
    for (const path of this.#last.keys()) if (!keys.has(basename(path))) this.#last.delete(path);
  }
}

/** What Pi tells the extension, reduced to what the state is made of. */
export type ActivityEvent =
  | { type: "session_start" }
  /** Start-up is over (the lease taken, the handoff acknowledged, its kickoff sent). */
  | { type: "ready" }
  | { type: "agent_start" }
  | { type: "agent_settled" }
  | { type: "tool_start"; id: string; name: string }
  | { type: "tool_end"; id: string }
  | { type: "prompt_start"; kind: PromptKind }
  | { type: "prompt_end" }
  | { type: "compact_start" }
  | { type: "compact_end" }
  | { type: "moved"; to: string }
  | { type: "exit"; code: number };

/** The state and its details, as published. */
export interface ActivitySnapshot {
  state: PublishedState;
  tool?: string;
  prompt?: PromptKind;
  question?: boolean;
  exitCode?: number;
  movedTo?: string;
}

/** The pure reducer: Pi's events in, the state out (see the header for the order). */
export class ChildActivity {
  #ready = false;
  #running = false;
  /** Running tools by call id, in start order. */
  readonly #tools = new Map<string, string>();
  #prompts: { kind: PromptKind; question: boolean }[] = [];
  #compacting = false;
  #movedTo: string | undefined;
  #exitCode: number | undefined;

  apply(event: ActivityEvent): void {
    switch (event.type) {
      case "session_start":
        this.#ready = false;
        return;
      case "ready":
        this.#ready = true;
        return;
      case "agent_start":
        this.#running = true;
        return;
      case "agent_settled":
        this.#running = false;
        this.#tools.clear();
        return;
      case "tool_start":
        this.#tools.set(event.id, event.name);
        return;
      case "tool_end":
        this.#tools.delete(event.id);
        return;
      case "prompt_start":
        // Asked while a tool runs: the model's question to the user, not a dialog the user opened.
        this.#prompts.push({ kind: event.kind, question: this.#running && this.#tools.size > 0 });
        return;
      case "prompt_end":
        this.#prompts.pop();
        return;
      case "compact_start":
        this.#compacting = true;
        return;
      case "compact_end":
        this.#compacting = false;
        return;
      case "moved":
        this.#movedTo = event.to;
        return;
      case "exit":
        this.#exitCode = event.code;
        return;
    }
  }

  snapshot(): ActivitySnapshot {
    if (this.#exitCode !== undefined) return { state: "exited", exitCode: this.#exitCode };
    if (this.#movedTo !== undefined) return { state: "moved", movedTo: this.#movedTo };
    const prompt = this.#prompts.at(-1);
    if (prompt !== undefined)
      return { state: "waiting_input", prompt: prompt.kind, ...(prompt.question ? { question: true } : {}) };
    if (this.#compacting) return { state: "compacting" };
    if (this.#running) {
      const tool = [...this.#tools.values()].at(-1);
      return { state: "working", ...(tool === undefined ? {} : { tool }) };
    }
    return { state: this.#ready ? "idle" : "starting" };
  }
}

function sameSnapshot(a: ActivitySnapshot, b: ActivitySnapshot): boolean {
  return (
    a.state === b.state &&
    a.tool === b.tool &&
    a.prompt === b.prompt &&
    a.question === b.question &&
    a.exitCode === b.exitCode &&
    a.movedTo === b.movedTo
  );
}

export interface PublisherOptions {
  agentDir: string;
  now?: () => Date;
  pid?: number;
  host?: string;
  /** Told once, the first time a write fails. */
  onError?: (message: string) => void;
  /** Told after each write (or failure), with the record (tests, the Herdr sidebar). */
  onPublished?: (record: ChildStateFile) => void;
}

interface Session {
  sessionFile: string;
  path: string;
  handoffId?: string;
  activity: ChildActivity;
  snapshot: ActivitySnapshot;
  since: string;
  seq: number;
}

/** Where a process keeps the marker it was started with, across Pi's reloads of this module. */
const STARTED_MARKER = Symbol.for("pi-handoff-worktree.started-marker");

/**
 * The handoff marker this process was started with (its launcher's `PI_HANDOFF_ID`), or undefined:
 * read once per process and taken out of its environment, so nothing it starts (the bash tool,
 * `!pi`, a subagent's Pi) inherits it and passes for the handoff's child. Kept on `holder` for the
 * rest of the process: the extension loaded again (/new, /resume) gets the same answer. The marker
 * stays in the exec-time environment the process scan reads (src/process/ reads it from the process table).
 */
export function takeStartedMarker(
  env: NodeJS.ProcessEnv = process.env,
  holder: object = globalThis,
): string | undefined {
  const kept = holder as { [STARTED_MARKER]?: { marker: string | undefined } };
  if (kept[STARTED_MARKER] === undefined) {
    const marker = env[HANDOFF_ID_ENV];
    kept[STARTED_MARKER] = { marker: marker === "" ? undefined : marker };
    delete env[HANDOFF_ID_ENV];
  }
  return kept[STARTED_MARKER].marker;
}

/** Publishes the current session's state (see the header); one per Pi process. */
export class ChildStatePublisher {
  readonly #options: PublisherOptions;
  #session: Session | undefined;
  #holding = false;
  /** Whether this Pi is a handoff's child (a session it began was one): only then is anything written. */
  #child = false;
  /** The record to write next, when one waits behind the write in flight. */
  #queued: { path: string; record: ChildStateFile } | undefined;
  #writing: Promise<void> | undefined;
  #reportedError = false;
  /** The directory made once (the first write), not at every write. */
  #madeDir = false;

  constructor(options: PublisherOptions) {
    this.#options = options;
  }

  /** The current state (undefined before a session began). */
  get current(): ActivitySnapshot | undefined {
    return this.#session?.snapshot;
  }

  /**
   * A new session for this Pi: starting, from now. Nothing is written until the lease is held, and
   * nothing at all unless this Pi is a handoff's child: started as one (`takeStartedMarker`), or
   * having begun a handoff's session (`handoffId`, the handoff its session names).
   */
  begin(sessionFile: string | undefined, handoffId?: string, startedForHandoff = false): void {
    if (handoffId !== undefined || startedForHandoff) this.#child = true;
    if (sessionFile === undefined) {
      this.#session = undefined;
      return;
    }
    const activity = new ChildActivity();
    activity.apply({ type: "session_start" });
    const canonical = canonicalSessionPath(sessionFile);
    this.#session = {
      sessionFile: canonical,
      path: childStatePath(this.#options.agentDir, canonical),
      ...(handoffId === undefined ? {} : { handoffId }),
      activity,
      snapshot: activity.snapshot(),
      since: this.#now().toISOString(),
      seq: 0,
    };
    if (this.#holding) this.#publish();
  }

  /** Whether this Pi holds the session's lease now: only then is anything written (taking it writes the current state). */
  setHolding(holding: boolean): void {
    const was = this.#holding;
    this.#holding = holding;
    if (holding && !was) this.#publish();
  }

  apply(event: ActivityEvent): void {
    const session = this.#session;
    if (session === undefined) return;
    session.activity.apply(event);
    const next = session.activity.snapshot();
    if (sameSnapshot(next, session.snapshot)) return;
    if (next.state !== session.snapshot.state) session.since = this.#now().toISOString();
    session.snapshot = next;
    this.#publish();
  }

  /** The last word at process exit, written synchronously (the process ends right after). */
  exitSync(code: number): void {
    const session = this.#session;
    if (session === undefined || !this.#holding || !this.#child) return;
    session.activity.apply({ type: "exit", code });
    session.snapshot = session.activity.snapshot();
    session.since = this.#now().toISOString();
    try {
      if (!this.#madeDir) mkdirSync(dirname(session.path), { recursive: true });
      writeFileAtomicSync(session.path, serialize(this.#record(session)), { durable: false });
    } catch {
      // The process is ending: the reader sees its pid gone and says exited, without the code.
    }
  }

  /** Resolves once everything asked so far is written (tests). */
  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }

  #publish(): void {
    const session = this.#session;
    if (session === undefined || !this.#holding || !this.#child) return;
    this.#queued = { path: session.path, record: this.#record(session) };
    this.#writing ??= this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      for (let next = this.#queued; next !== undefined; next = this.#queued) {
        this.#queued = undefined;
        try {
          if (!this.#madeDir) await mkdir(dirname(next.path), { recursive: true });
          this.#madeDir = true;
          await writeFileAtomic(next.path, serialize(next.record), { durable: false });
        } catch (error) {
          if (!this.#reportedError) {
            this.#reportedError = true;
            this.#options.onError?.(
              `The state of this Pi could not be published to ${next.path}: ${errorClause(error)}; its parent falls back to reading the session.`,
            );
          }
        }
        this.#options.onPublished?.(next.record);
      }
    } finally {
      this.#writing = undefined;
    }
  }

  #record(session: Session): ChildStateFile {
    session.seq += 1;
    const { snapshot } = session;
    return {
      version: 1,
      sessionFile: session.sessionFile,
      pid: this.#options.pid ?? process.pid,
      host: this.#options.host ?? hostname(),
      ...(session.handoffId === undefined ? {} : { handoffId: session.handoffId }),
      state: snapshot.state,
      since: session.since,
      seq: session.seq,
      writtenAt: this.#now().toISOString(),
      ...(snapshot.tool === undefined ? {} : { tool: snapshot.tool }),
      ...(snapshot.prompt === undefined ? {} : { prompt: snapshot.prompt }),
      ...(snapshot.question === undefined ? {} : { question: snapshot.question }),
      ...(snapshot.exitCode === undefined ? {} : { exitCode: snapshot.exitCode }),
      ...(snapshot.movedTo === undefined ? {} : { movedTo: canonicalSessionPath(snapshot.movedTo) }),
    };
  }

  #now(): Date {
    return (this.#options.now ?? (() => new Date()))();
  }
}

function serialize(record: ChildStateFile): string {
  return `${JSON.stringify(record)}\n`;
}

/** The state file as it is on disk now, synchronously (for a reader that cannot await, such as a test sampling it). */
export function readChildStateSync(agentDir: string, sessionFile: string): ChildStateRead {
  const path = childStatePath(agentDir, sessionFile);
  try {
    return parseChildState(path, readFileSync(path, "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { code: "none" };
    return { code: "unreadable", message: `The child state ${path} could not be read: ${errorClause(error)}.` };
  }
}
