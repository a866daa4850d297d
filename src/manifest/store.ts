/**
 * The manifest store: one JSON file per handoff in `<agentDir>/handoff-worktree/manifests/<id>.json`.
 *
 * Invariants:
 * - A file on disk is always complete: every write goes to a temp file that is fsynced and then
 *   renamed (or hard-linked, for a new file) into place, so readers never take a lock.
 * - Every file written has passed `ManifestSchema`; a file that does not is reported, never repaired.
 * - `create` never overwrites a file, and checks for conflicting handoffs under one store-wide lock,
 *   so two processes cannot both claim the same branch; what a new handoff reserves from what the
 *   others hold (its ports) is decided under that same lock, right before it is written.
 * - `update` is read-modify-write under a per-file lock; `id`, `version`, `createdAt` and the existing
 *   `history` entries never change (history is append-only).
 * - The state changes only through `transition` (and its guarded forms), which checks the state
 *   machine and appends the history entry: `update` cannot change the state (its draft's `state` is
 *   readonly) nor append to the history, and throws, writing nothing, if a mutation tries.
 * - Locks are directories (locks/file-lock.ts) that go stale after `staleMs` and are waited for at
 *   most `lockWaitMs`, so a process killed while holding one never blocks anyone for good.
 * - One actor per handoff: `withActionLock` holds `.<id>.action` (action-holder.ts: who, which
 *   action, since when) for a whole decision-and-action (a handoff, a relaunch, a removal). It is
 *   never waited for: a second actor is answered `busy` at once, naming the holder. It is taken and
 *   taken over only under the manifest's own short lock, so two takers cannot both take over a dead
 *   holder's lock; whether a holder is dead is the liveness rule of locks/liveness.ts (gone, or its
 *   pid reused; a holder on another machine, or whose start cannot be compared, still holds it).
 * - Leftovers (temp files, dead action locks, stale lock directories): leftovers.ts.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode, readSmallFile } from "../fs/probe.ts";
import {
  liveActionHolder,
  releaseActionLock,
  removeDeadActionLock,
  takeActionLock,
  type ActionLockFile,
} from "../locks/action-lock.ts";
import {
  DEFAULT_LOCK_WAIT_MS,
  DEFAULT_STALE_MS,
  MIN_STALE_MS,
  withFileLock,
  type FileLockFailure,
} from "../locks/file-lock.ts";
import { holderLiveness, stillHeld } from "../locks/liveness.ts";
import { holderOf, thisHost } from "../locks/holder.ts";
import { processFacts, type ProcessFacts } from "../process/facts.ts";
import {
  actionBusy,
  ActionHolderSchema,
  type ActionBusy,
  type ActionHolder,
  type HandoffAction,
} from "./action-holder.ts";
import {
  ACTION_LOCK_SUFFIX,
  listLeftovers,
  sweepLeftovers,
  type LeftoverStore,
  type StoreLeftover,
} from "./leftovers.ts";
import {
  type HandoffState,
  type Manifest,
  ManifestSchema,
  MANIFEST_VERSION,
  type StepTime,
  canTransition,
} from "./schema.ts";
import { errorMessage } from "../errors.ts";
import { counted } from "../text.ts";
import { mapLimit } from "../concurrency.ts";

const MANIFEST_SUFFIX = ".json";
/** How many manifests `list` reads at once (file descriptors stay few). */
const LIST_READ_CONCURRENCY = 16;
const ID_PATTERN = /^[a-z0-9][a-z0-9-]{2,80}$/;
const STORE_LOCK_NAME = ".store.lock";
const MAX_BRANCH_SLUG = 40;

export {
  ActionHolderSchema,
  HANDOFF_ACTIONS,
  isActionBusy,
  type ActionBusy,
  type ActionHolder,
  type HandoffAction,
} from "./action-holder.ts";
export { TEMP_MAX_AGE_MS, type StoreLeftover } from "./leftovers.ts";

export type ReadResult =
  | { ok: true; manifest: Manifest }
  | { ok: false; code: "not_found" | "invalid"; message: string };

export type ListEntry =
  | { ok: true; id: string; path: string; manifest: Manifest }
  | { ok: false; id: string; path: string; error: string };

export type CreateResult =
  | { ok: true; manifest: Manifest; path: string }
  | { ok: false; code: "conflict"; conflicting: Manifest; message: string }
  | { ok: false; code: "unavailable"; message: string };

export type Reservation = { ok: true; manifest: Manifest } | { ok: false; message: string };

export interface CreateOptions {
  /** True when `existing` is a handoff the new one must not coexist with (e.g. same repo and branch). */
  conflictsWith?: (existing: Manifest) => boolean;
  /**
   * Completes the new manifest from the valid others (e.g. ports none of them holds), under the
   * store-wide lock, after the conflict check and right before the write; its id may not change.
   * A refusal is returned as `unavailable`, and nothing is written.
   */
  reserve?: (others: readonly Manifest[]) => Promise<Reservation>;
}

/** What `update` edits: the manifest with a state it cannot change (a state change is a `transition`). */
export type ManifestDraft = Omit<Manifest, "state"> & { readonly state: HandoffState };
export type ManifestMutation = (manifest: ManifestDraft) => ManifestDraft | void;

export interface ManifestStoreOptions {
  now?: () => Date;
  /** A lock whose directory has not been touched for this long is considered abandoned. */
  staleMs?: number;
  /** Longest time to wait for a lock before giving up with a `locked` error. */
  lockWaitMs?: number;
  /** Where the holders of action locks and the writers of temp files are looked up (locks/liveness.ts). */
  facts?: ProcessFacts;
  /** This machine's name, as holders record it. */
  host?: string;
}

export type ManifestStoreErrorCode = "not_found" | "invalid" | "exists" | "locked" | "lock_compromised";

/** An expected failure of a store operation (as opposed to a programming error, which is a plain Error). */
export class ManifestStoreError extends Error {
  readonly code: ManifestStoreErrorCode;

  constructor(code: ManifestStoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ManifestStoreError";
    this.code = code;
  }
}

export class ManifestStore {
  readonly dir: string;
  private readonly now: () => Date;
  private readonly staleMs: number;
  private readonly lockWaitMs: number;
  private readonly facts: ProcessFacts;
  private readonly host: string;

  constructor(dir: string, options: ManifestStoreOptions = {}) {
    this.dir = resolve(dir);
    this.now = options.now ?? (() => new Date());
    this.staleMs = Math.max(options.staleMs ?? DEFAULT_STALE_MS, MIN_STALE_MS);
    this.lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
    this.facts = options.facts ?? processFacts();
    this.host = options.host ?? thisHost();
  }

  static forAgentDir(agentDir: string, options?: ManifestStoreOptions): ManifestStore {
    return new ManifestStore(join(agentDir, "handoff-worktree", "manifests"), options);
  }

  /** Throws for a malformed id: ids become file names, so one must never contain a path. */
  pathFor(id: string): string {
    if (!ID_PATTERN.test(id)) throw new Error(`Invalid handoff id ${JSON.stringify(id)}.`);
    return join(this.dir, id + MANIFEST_SUFFIX);
  }

  /** `<yyyymmdd-hhmmss>-<branch slug>-<4 hex>`: sorts by creation time (UTC), safe as a file name. */
  newId(branch: string): string {
    const stamp = this.now()
      .toISOString()
      .replace(/\.\d+Z$/, "")
      .replace(/[-:]/g, "")
      .replace("T", "-");
    const slug =
      branch
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-+/, "")
        .slice(0, MAX_BRANCH_SLUG)
        .replace(/-+$/, "") || "handoff";
    return `${stamp}-${slug}-${randomBytes(2).toString("hex")}`;
  }

  async read(id: string): Promise<ReadResult> {
    if (!ID_PATTERN.test(id)) {
      return { ok: false, code: "not_found", message: `${JSON.stringify(id)} is not a valid handoff id.` };
    }
    return readManifestFile(this.pathFor(id), id);
  }

  /**
   * Every manifest file, sorted by id (creation time); broken files are reported, not hidden.
   * Files whose id `options.skip` names are not read (a caller that knows them already).
   */
  async list(options: { skip?: (id: string) => boolean } = {}): Promise<ListEntry[]> {
    const names = await this.entries();
    // Temp files and lock dirs start with "." or do not end in ".json".
    const manifestNames = names.filter((name) => name.endsWith(MANIFEST_SUFFIX) && !name.startsWith(".")).sort();
    const wanted = manifestNames
      .map((name) => ({ id: name.slice(0, -MANIFEST_SUFFIX.length), path: join(this.dir, name) }))
      .filter(({ id }) => options.skip?.(id) !== true);
    // Read a few at once (the order of the entries stays the names' order).
    const read = await mapLimit(wanted, LIST_READ_CONCURRENCY, async ({ id, path }) => ({
      id,
      path,
      result: await readManifestFile(path, id),
    }));
    const entries: ListEntry[] = [];
    for (const { id, path, result } of read) {
      if (result.ok) entries.push({ ok: true, id, path, manifest: result.manifest });
      // A file removed between readdir and read is simply gone.
      else if (result.code === "invalid") entries.push({ ok: false, id, path, error: result.message });
    }
    return entries;
  }

  /**
   * Writes a new manifest unless its id exists or `conflictsWith` matches an existing valid manifest.
   * The check and the write happen under one store-wide lock so two creators cannot both pass the check.
   * Throws if `manifest` is invalid, or `ManifestStoreError("exists")` if its id is taken: ids carry a
   * random suffix, so either is a programming error rather than an outcome to handle.
   */
  async create(manifest: Manifest, options: CreateOptions = {}): Promise<CreateResult> {
    const validated = parseOrThrow(manifest, `New manifest ${manifest.id}`);
    const path = this.pathFor(validated.id);
    await mkdir(this.dir, { recursive: true });
    return this.withLock(this.dir, join(this.dir, STORE_LOCK_NAME), "the manifest store", async (assertHeld) => {
      const existing = await this.list();
      if (existing.some((entry) => entry.id === validated.id)) {
        throw alreadyExists(validated.id, path);
      }
      const conflictsWith = options.conflictsWith;
      if (conflictsWith) {
        for (const entry of existing) {
          if (entry.ok && conflictsWith(entry.manifest)) {
            return {
              ok: false,
              code: "conflict",
              conflicting: entry.manifest,
              message: `Handoff ${entry.id} (${entry.manifest.state}) already claims branch ${entry.manifest.branch} in ${entry.manifest.repo.root}.`,
            };
          }
        }
      }
      let written = validated;
      if (options.reserve !== undefined) {
        const reserved = await options.reserve(existing.flatMap((entry) => (entry.ok ? [entry.manifest] : [])));
        if (!reserved.ok) return { ok: false, code: "unavailable", message: reserved.message };
        written = parseOrThrow(reserved.manifest, `Reserved manifest ${validated.id}`);
        if (written.id !== validated.id) throw new Error(`Manifest ${validated.id}: id cannot change.`);
      }
      assertHeld();
      try {
        await writeFileAtomic(path, serializeManifest(written), { overwrite: false });
      } catch (error) {
        if (errorCode(error) === "EEXIST") {
          throw alreadyExists(validated.id, path, error);
        }
        throw error;
      }
      return { ok: true, manifest: written, path };
    });
  }

  /**
   * Read-modify-write under the file's lock. `mutate` gets a private copy; it may edit it in place or
   * return a replacement. The result is validated before anything is written; `updatedAt` is set here,
   * and a change that changes nothing is not written at all (`updatedAt` keeps the last real change).
   * Throws `ManifestStoreError` (not_found, invalid, locked) or an Error if the result is invalid or
   * changes the state or appends to the history (that is what `transition` is for).
   */
  async update(id: string, mutate: ManifestMutation): Promise<Manifest> {
    return this.modify(id, (manifest) => {
      const { state } = manifest;
      const entries = manifest.history.length;
      const mutated: Manifest = mutate(manifest) ?? manifest;
      if (mutated.state !== state || mutated.history.length !== entries)
        throw new Error(`Update of handoff ${id} changes its state or history; a state change is a transition.`);
      return mutated;
    });
  }

  /** Moves to state `to`, appending a history entry. An illegal transition throws and writes nothing. */
  async transition(
    id: string,
    to: HandoffState,
    patch?: (manifest: Manifest, at: string) => void,
    note?: string,
    steps?: () => StepTime[],
  ): Promise<Manifest> {
    return this.modify(id, (manifest, at) => moveTo(manifest, to, at, patch, note, steps?.()));
  }

  /**
   * `transition`, but only while the handoff is still `from` (checked under the lock): a handoff
   * that someone else moved on meanwhile (acknowledged, removed, failed) is returned as it is,
   * and not written.
   */
  async transitionIfStill(
    id: string,
    from: HandoffState,
    to: HandoffState,
    patch?: (manifest: Manifest, at: string) => void,
    note?: string,
  ): Promise<Manifest> {
    return this.transitionIf(id, (manifest) => manifest.state === from, to, patch, note);
  }

  /**
   * `transition`, but only when `when` holds for the manifest as it is under the lock; otherwise it
   * is returned as it is, and not written.
   */
  async transitionIf(
    id: string,
    when: (manifest: Manifest) => boolean,
    to: HandoffState,
    patch?: (manifest: Manifest, at: string) => void,
    note?: string,
  ): Promise<Manifest> {
    return this.modify(id, (manifest, at) => {
      if (when(manifest)) moveTo(manifest, to, at, patch, note);
    });
  }

  private async modify(id: string, mutate: (manifest: Manifest, at: string) => Manifest | void): Promise<Manifest> {
    const path = this.pathFor(id);
    return this.withLock(path, `${path}.lock`, `manifest ${id}`, async (assertHeld) => {
      const current = await readManifestFile(path, id);
      if (!current.ok) throw new ManifestStoreError(current.code, current.message);
      const at = this.now().toISOString();
      const draft = structuredClone(current.manifest);
      const mutated = mutate(draft, at) ?? draft;
      // A change that changes nothing is not written: `updatedAt` dates the last real change
      // (the "being set up" grace and the removed handoff's time on show read it).
      if (
        serializeManifest({ ...mutated, updatedAt: current.manifest.updatedAt }) === serializeManifest(current.manifest)
      )
        return current.manifest;
      const next = parseOrThrow({ ...mutated, updatedAt: at }, `Update of handoff ${id}`);
      assertUnchangedIdentity(current.manifest, next);
      assertHeld();
      await writeFileAtomic(path, serializeManifest(next));
      return next;
    });
  }

  /**
   * Runs `fn` as the one actor on handoff `id` (which need not have a manifest yet: the handoff
   * takes it before creating one). Another process holding it is answered at once with
   * `{ ok: false, code: "busy" }`, naming its action, pid and since when; a dead holder's lock is
   * taken over. The lock is released when `fn` settles (a killed process leaves it for takeover).
   */
  async withActionLock<T>(id: string, action: HandoffAction, fn: () => Promise<T>): Promise<T | ActionBusy> {
    const lock = this.actionLock(this.actionLockPath(id));
    await mkdir(this.dir, { recursive: true });
    const me: ActionHolder = {
      id,
      action,
      ...(await holderOf(process.pid, this.facts, this.host)),
      since: this.now().toISOString(),
    };
    // Taken under the manifest's short lock: the check of a holder and its takeover are one step.
    const taken = await this.withManifestLock(id, async (assertHeld) =>
      takeActionLock(
        lock,
        me,
        assertHeld,
        () => new ManifestStoreError("locked", `Could not take the action lock ${lock.path} of handoff ${id}.`),
      ),
    );
    if (!taken.ok) return actionBusy(id, taken.holder, taken.liveness, this.actionLockPath(id));
    try {
      return await fn();
    } finally {
      // Only our own record: after a takeover (we were judged dead) the file is someone else's.
      await releaseActionLock(
        lock,
        (holder) => holder.pid === me.pid && holder.since === me.since && holder.action === me.action,
      );
    }
  }

  /** Who holds handoff `id`'s action lock now (a holder that still holds it by the liveness rule), if anyone. */
  async actionHolder(id: string): Promise<ActionHolder | undefined> {
    return (await liveActionHolder(this.actionLock(this.actionLockPath(id))))?.holder;
  }

  /**
   * Every entry of the store directory that is neither a manifest nor a file of an existing
   * handoff, each with what it is and whether it is abandoned (safe to delete). Read-only.
   */
  async leftovers(): Promise<StoreLeftover[]> {
    return listLeftovers(this.leftoverStore());
  }

  /**
   * Deletes the abandoned leftovers (judged afresh, action locks again under the manifest's lock)
   * and returns what went; `only` limits it to some (e.g. one handoff's temp files).
   */
  async sweepLeftovers(only: (leftover: StoreLeftover) => boolean = () => true): Promise<StoreLeftover[]> {
    return sweepLeftovers(this.leftoverStore(), only);
  }

  private leftoverStore(): LeftoverStore {
    return {
      dir: this.dir,
      staleMs: this.staleMs,
      entries: () => this.entries(),
      writerAlive: async (pid) =>
        stillHeld(await holderLiveness({ pid }, this.facts, new Date(), undefined, this.host)),
      actionLock: (path) => this.actionLock(path),
      removeDeadActionLock: (id, path) => this.withManifestLock(id, () => removeDeadActionLock(this.actionLock(path))),
      isId: (id) => ID_PATTERN.test(id),
    };
  }

  private actionLock(path: string): ActionLockFile<ActionHolder> {
    return { path, schema: ActionHolderSchema, facts: this.facts, host: this.host };
  }

  /** The store's entries; none when the directory does not exist yet. */
  private async entries(): Promise<string[]> {
    try {
      return await readdir(this.dir);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return [];
      throw error;
    }
  }

  private actionLockPath(id: string): string {
    this.pathFor(id); // Validates the id.
    return join(this.dir, `.${id}${ACTION_LOCK_SUFFIX}`);
  }

  /** The manifest's short lock, which the action lock is taken under (its manifest may not exist yet). */
  private withManifestLock<T>(id: string, body: (assertHeld: () => void) => Promise<T>): Promise<T> {
    const path = this.pathFor(id);
    return this.withLock(path, `${path}.lock`, `manifest ${id}`, body, { targetMayBeMissing: true });
  }

  /**
   * Runs `body` holding the lock directory `lockPath` for `target` (which must exist).
   * `assertHeld` throws if the lock was lost (e.g. taken over as stale), so nothing is written then.
   */
  private withLock<T>(
    target: string,
    lockPath: string,
    what: string,
    body: (assertHeld: () => void) => Promise<T>,
    options: { targetMayBeMissing?: boolean } = {},
  ): Promise<T> {
    return withFileLock(target, lockPath, what, body, {
      staleMs: this.staleMs,
      waitMs: this.lockWaitMs,
      ...options,
      fail: (code: FileLockFailure, message, cause) => new ManifestStoreError(code, message, { cause }),
    });
  }
}

/** The on-disk form: 2-space JSON plus a trailing newline. */
export function serializeManifest(manifest: Manifest): string {
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

async function readManifestFile(path: string, id: string): Promise<ReadResult> {
  const read = readSmallFile(path);
  if (read.code === "missing")
    return { ok: false, code: "not_found", message: `No handoff manifest with id ${id} (looked for ${path}).` };
  if (read.code === "error") throw read.error;
  const text = read.text;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const reason = errorMessage(error);
    return { ok: false, code: "invalid", message: `Manifest file ${path} is not valid JSON (${reason}).` };
  }
  const version = isRecord(json) ? json.version : undefined;
  if (typeof version === "number" && version !== MANIFEST_VERSION) {
    return {
      ok: false,
      code: "invalid",
      message: `Manifest file ${path} has format version ${version}, but this version of pi-handoff-worktree reads only version ${MANIFEST_VERSION}.`,
    };
  }
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      code: "invalid",
      message: `Manifest file ${path} does not match the manifest schema (${describeIssues(parsed.error)}).`,
    };
  }
  if (parsed.data.id !== id) {
    return {
      ok: false,
      code: "invalid",
      message: `Manifest file ${path} contains id ${parsed.data.id}, which does not match its file name.`,
    };
  }
  return { ok: true, manifest: parsed.data };
}

/** One state change, as every transition makes it: allowed by the state machine, then recorded in the history. */
function moveTo(
  manifest: Manifest,
  to: HandoffState,
  at: string,
  patch: ((manifest: Manifest, at: string) => void) | undefined,
  note: string | undefined,
  steps?: StepTime[],
): void {
  if (!canTransition(manifest.state, to))
    throw new Error(`Illegal handoff state transition ${manifest.state} -> ${to} for ${manifest.id}.`);
  patch?.(manifest, at);
  manifest.state = to;
  manifest.history.push({
    state: to,
    at,
    ...(note === undefined ? {} : { note }),
    ...(steps === undefined || steps.length === 0 ? {} : { steps }),
  });
}

function alreadyExists(id: string, path: string, cause?: unknown): ManifestStoreError {
  return new ManifestStoreError("exists", `A handoff manifest with id ${id} already exists at ${path}.`, { cause });
}

function parseOrThrow(value: unknown, what: string): Manifest {
  const parsed = ManifestSchema.safeParse(value);
  if (!parsed.success) throw new Error(`${what} is not a valid manifest (${describeIssues(parsed.error)}).`);
  return parsed.data;
}

function assertUnchangedIdentity(before: Manifest, after: Manifest): void {
  for (const key of ["id", "version", "createdAt"] as const) {
    if (before[key] !== after[key]) throw new Error(`Manifest ${before.id}: ${key} cannot change.`);
  }
  const prefixIntact =
    after.history.length >= before.history.length &&
    before.history.every((entry, index) => JSON.stringify(entry) === JSON.stringify(after.history[index]));
  if (!prefixIntact) throw new Error(`Manifest ${before.id}: history is append-only.`);
}

function describeIssues(error: z.ZodError): string {
  const [first] = error.issues;
  if (!first) return "unknown problem";
  const where = first.path.length > 0 ? first.path.map(String).join(".") : "(root)";
  const more = error.issues.length > 1 ? ` and ${counted(error.issues.length - 1, "more problem")}` : "";
  return `${where}: ${first.message}${more}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
