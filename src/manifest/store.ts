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
 * - Locks are directories (`proper-lockfile`) that go stale after `staleMs` and are waited for at most
 *   `lockWaitMs`, so a process killed while holding one never blocks anyone for good.
 * - One actor per handoff: `withActionLock` holds `.<id>.action` (who: action, pid, start time,
 *   since) for a whole decision-and-action (a handoff, a relaunch, a removal). It is never waited
 *   for: a second actor is answered `busy` at once, naming the holder. It is taken and taken over
 *   only under the manifest's own short lock, so two takers cannot both take over a dead holder's
 *   lock; a holder counts as dead when its pid is gone or carries another start time (owner.ts).
 * - Leftovers (`leftovers`, `sweepLeftovers`): a temp file is deleted only when its writer (the pid
 *   in its name) is gone, or it is older than `TEMP_MAX_AGE_MS` (a pid reused by a live process
 *   must not keep it for ever: a writer holds its temp file for milliseconds); an action lock only
 *   when its holder is dead; a lock directory only once proper-lockfile would take it over (stale).
 */
import { randomBytes } from "node:crypto";
import { lstat, mkdir, readdir, rm, rmdir, unlink } from "node:fs/promises";
import type { Stats } from "node:fs";
import { join, resolve } from "node:path";
import { lock } from "proper-lockfile";
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode, readSmallFile, readTextIfPresent } from "../fs/probe.ts";
import { unlinkIfPresent } from "../fs/unlink.ts";
import { isOwnerAlive, ownerOf } from "./owner.ts";
import {
  type HandoffState,
  type Manifest,
  type ManifestOwner,
  ManifestSchema,
  MANIFEST_VERSION,
  type StepTime,
  canTransition,
} from "./schema.ts";
import { errorMessage } from "../errors.ts";
import { counted, formatWait } from "../text.ts";
import { mapLimit } from "../concurrency.ts";

const MANIFEST_SUFFIX = ".json";
/** How many manifests `list` reads at once (file descriptors stay few). */
const LIST_READ_CONCURRENCY = 16;
const ID_PATTERN = /^[a-z0-9][a-z0-9-]{2,80}$/;
const STORE_LOCK_NAME = ".store.lock";
const MAX_BRANCH_SLUG = 40;

/** proper-lockfile's floor for `stale`. */
const MIN_STALE_MS = 2_000;
const DEFAULT_STALE_MS = 10_000;
/** Longer than the stale window, so a lock left by a killed process is taken over rather than reported. */
const DEFAULT_LOCK_WAIT_MS = 15_000;
const ACTION_LOCK_SUFFIX = ".action";
/** A temp file this old is abandoned whatever its pid says: writers keep theirs for milliseconds. */
export const TEMP_MAX_AGE_MS = 10 * 60_000;
/** `.<name>.<pid>.<8 hex>.tmp`, as `tempPathBeside` names them. */
const TEMP_PATTERN = /^\.(.+)\.(\d+)\.[0-9a-f]{8}\.tmp$/;
/** A handoff's own note written by a shell (`<id>.<what>.<pid>.tmp`, then renamed): the launcher's. */
const HANDOFF_TEMP_PATTERN = /^([^.]+\.[^/]+)\.(\d+)\.tmp$/;

/** What holds a handoff: the actions that decide and act on one handoff. */
export const HANDOFF_ACTIONS = ["handoff", "relaunch", "remove", "prune", "focus", "land", "rebase", "queue"] as const;
export type HandoffAction = (typeof HANDOFF_ACTIONS)[number];

const ACTION_VERBS: Readonly<Record<HandoffAction, string>> = {
  handoff: "setting it up (the handoff itself)",
  relaunch: "relaunching it",
  remove: "removing it",
  prune: "pruning it",
  focus: "switching to it",
  land: "landing it",
  rebase: "rebasing it",
  // The queue's own lock (queue/queue.ts) names a repository, not a handoff.
  queue: "landing the queue of its repository",
};

export const ActionHolderSchema = z.strictObject({
  id: z.string(),
  action: z.enum(HANDOFF_ACTIONS),
  pid: z.number().int().positive(),
  start: z.string().min(1).optional(),
  since: z.string().datetime({ offset: true }),
});
export type ActionHolder = z.infer<typeof ActionHolderSchema>;

/** The answer to a second actor: at once, naming what the first one is doing. */
export interface ActionBusy {
  ok: false;
  code: "busy";
  message: string;
  holder: ActionHolder;
}

export function isActionBusy(value: unknown): value is ActionBusy {
  return isRecord(value) && value.ok === false && value.code === "busy" && isRecord(value.holder);
}

/** An entry of the store directory that is not a manifest (nor a file a handoff owns), and what it is. */
export type StoreLeftover =
  | { kind: "temp"; name: string; path: string; pid: number; abandoned: boolean; reason: string }
  | {
      kind: "action_lock";
      name: string;
      path: string;
      holder: ActionHolder | undefined;
      abandoned: boolean;
      reason: string;
    }
  | { kind: "lock"; name: string; path: string; abandoned: boolean; reason: string }
  | { kind: "unknown"; name: string; path: string; abandoned: false; reason: string };

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
  /** Whether a recorded process still lives (action-lock holders, temp-file writers); defaults to owner.ts. */
  processAlive?: (owner: ManifestOwner) => Promise<boolean>;
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
  private readonly processAlive: (owner: ManifestOwner) => Promise<boolean>;

  constructor(dir: string, options: ManifestStoreOptions = {}) {
    this.dir = resolve(dir);
    this.now = options.now ?? (() => new Date());
    this.staleMs = Math.max(options.staleMs ?? DEFAULT_STALE_MS, MIN_STALE_MS);
    this.lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
    this.processAlive = options.processAlive ?? isOwnerAlive;
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
    const lockPath = this.actionLockPath(id);
    await mkdir(this.dir, { recursive: true });
    const owner = await ownerOf();
    const me: ActionHolder = { id, action, ...owner, since: this.now().toISOString() };
    // Taken under the manifest's short lock: the check of a holder and its takeover are one step.
    const taken = await this.withLock(
      this.pathFor(id),
      `${this.pathFor(id)}.lock`,
      `manifest ${id}`,
      async (assertHeld): Promise<ActionBusy | undefined> => {
        for (let attempt = 0; attempt < 2; attempt += 1) {
          try {
            assertHeld();
            await writeFileAtomic(lockPath, `${JSON.stringify(me)}\n`, { overwrite: false });
            return undefined;
          } catch (error) {
            if (errorCode(error) !== "EEXIST") throw error;
          }
          const holder = await readActionHolder(lockPath);
          if (holder !== undefined && (await this.processAlive(holder))) return this.busy(id, holder);
          // Its holder died (or it is unreadable: the writer died before it was complete).
          await rm(lockPath, { force: true });
        }
        throw new ManifestStoreError("locked", `Could not take the action lock ${lockPath} of handoff ${id}.`);
      },
      { targetMayBeMissing: true },
    );
    if (taken !== undefined) return taken;
    try {
      return await fn();
    } finally {
      // Only our own record: after a takeover (we were judged dead) the file is someone else's.
      const holder = await readActionHolder(lockPath);
      if (holder !== undefined && holder.pid === me.pid && holder.since === me.since && holder.action === me.action) {
        await rm(lockPath, { force: true });
      }
    }
  }

  /** Who holds handoff `id`'s action lock now (a live holder), if anyone. */
  async actionHolder(id: string): Promise<ActionHolder | undefined> {
    const holder = await readActionHolder(this.actionLockPath(id));
    return holder !== undefined && (await this.processAlive(holder)) ? holder : undefined;
  }

  /**
   * Every entry of the store directory that is neither a manifest nor a file of an existing
   * handoff, each with what it is and whether it is abandoned (safe to delete). Read-only.
   */
  async leftovers(): Promise<StoreLeftover[]> {
    const names = await this.entries();
    // Manifests, and the files a handoff keeps beside its manifest (`<id>.<what>`: the launcher and
    // its notes, the postCreate runner and status). Ids hold no dot, so the owner is the first word.
    const ids = new Set(
      names
        .filter((name) => name.endsWith(MANIFEST_SUFFIX) && !name.startsWith("."))
        .map((name) => name.slice(0, -MANIFEST_SUFFIX.length)),
    );
    const ownerOf = (name: string): string | undefined => {
      const id = name.slice(0, name.indexOf("."));
      return ids.has(id) ? id : undefined;
    };
    // File ages are against the real clock (the mtimes are), whatever clock stamps the manifests.
    const now = Date.now();
    const found: StoreLeftover[] = [];
    for (const name of names.sort()) {
      const temp = TEMP_PATTERN.exec(name) ?? HANDOFF_TEMP_PATTERN.exec(name);
      if (temp === null && !name.endsWith(".lock") && ownerOf(name) !== undefined) continue;
      const path = join(this.dir, name);
      let info;
      try {
        info = await lstat(path);
      } catch {
        continue; // Gone since the listing.
      }
      found.push(await this.describeLeftover(name, path, info, temp, now - info.mtimeMs));
    }
    return found;
  }

  /** What one leftover entry is (`temp`: its match of a temp-file pattern), and whether it is abandoned. */
  private async describeLeftover(
    name: string,
    path: string,
    info: Stats,
    temp: RegExpExecArray | null,
    age: number,
  ): Promise<StoreLeftover> {
    if (temp !== null && info.isFile()) {
      const pid = Number(temp[2]);
      const alive = await this.processAlive({ pid });
      const old = age > TEMP_MAX_AGE_MS;
      return {
        kind: "temp",
        name,
        path,
        pid,
        abandoned: !alive || old,
        reason: !alive
          ? `a temp file whose writer (pid ${pid}) is gone`
          : old
            ? `a temp file older than ${Math.round(TEMP_MAX_AGE_MS / 60_000)} minutes (pid ${pid} lives, but a writer keeps its temp file for milliseconds: the pid was reused)`
            : `a temp file being written by pid ${pid}`,
      };
    }
    if (name.startsWith(".") && name.endsWith(ACTION_LOCK_SUFFIX) && info.isFile()) {
      const holder = await readActionHolder(path);
      const alive = holder !== undefined && (await this.processAlive(holder));
      return {
        kind: "action_lock",
        name,
        path,
        holder,
        abandoned: !alive,
        reason:
          holder === undefined
            ? "an unreadable action lock (its writer died while writing it)"
            : `the action lock of handoff ${holder.id}: ${holder.action} by pid ${holder.pid} since ${holder.since}${alive ? "" : ", which is gone"}`,
      };
    }
    if (name.endsWith(".lock") && info.isDirectory()) {
      const stale = age > this.staleMs;
      return {
        kind: "lock",
        name,
        path,
        abandoned: stale,
        reason: stale
          ? "a lock left by a process that died holding it (stale: the next writer takes it over)"
          : "a lock held right now",
      };
    }
    return { kind: "unknown", name, path, abandoned: false, reason: "not a file this store writes; left alone" };
  }

  /**
   * Deletes the abandoned leftovers (judged afresh, action locks again under the manifest's lock)
   * and returns what went; `only` limits it to some (e.g. one handoff's temp files).
   */
  async sweepLeftovers(only: (leftover: StoreLeftover) => boolean = () => true): Promise<StoreLeftover[]> {
    const swept: StoreLeftover[] = [];
    for (const leftover of await this.leftovers()) {
      if (!leftover.abandoned || !only(leftover)) continue;
      try {
        if (leftover.kind === "lock") await rmdir(leftover.path);
        else if (leftover.kind === "action_lock") {
          // Under the manifest's lock, like a takeover: a new holder may have just taken it.
          const id = leftover.holder?.id;
          const removed =
            id !== undefined && ID_PATTERN.test(id)
              ? await this.removeDeadActionLock(id, leftover.path)
              : await unlinkIfPresent(leftover.path);
          if (!removed) continue;
        } else await unlink(leftover.path);
        swept.push(leftover);
      } catch (error) {
        // Gone meanwhile (another sweeper), or a lock someone took again: not ours to report.
        if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTEMPTY") continue;
        throw error;
      }
    }
    return swept;
  }

  private async removeDeadActionLock(id: string, lockPath: string): Promise<boolean> {
    return this.withLock(
      this.pathFor(id),
      `${this.pathFor(id)}.lock`,
      `manifest ${id}`,
      async () => {
        const holder = await readActionHolder(lockPath);
        if (holder !== undefined && (await this.processAlive(holder))) return false;
        return unlinkIfPresent(lockPath);
      },
      { targetMayBeMissing: true },
    );
  }

  /** The store directory's entries; none when it does not exist yet. */
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

  private busy(id: string, holder: ActionHolder): ActionBusy {
    return {
      ok: false,
      code: "busy",
      holder,
      message: `Handoff ${id} is busy: process ${holder.pid} is ${ACTION_VERBS[holder.action]} (since ${holder.since}); nothing was done, try again once it has finished.`,
    };
  }

  /**
   * Runs `body` holding the lock directory `lockPath` for `target` (which must exist).
   * `assertHeld` throws if the lock was lost (e.g. taken over as stale), so nothing is written then.
   */
  private async withLock<T>(
    target: string,
    lockPath: string,
    what: string,
    body: (assertHeld: () => void) => Promise<T>,
    options: { targetMayBeMissing?: boolean } = {},
  ): Promise<T> {
    let compromised: Error | undefined;
    let release: () => Promise<void>;
    try {
      release = await lock(target, {
        lockfilePath: lockPath,
        // The action lock is taken before a new handoff's manifest exists.
        ...(options.targetMayBeMissing === true ? { realpath: false } : {}),
        stale: this.staleMs,
        retries: {
          retries: Math.ceil(this.lockWaitMs / 10) + 1,
          factor: 1.3,
          minTimeout: 10,
          maxTimeout: 200,
          randomize: true,
          maxRetryTime: this.lockWaitMs,
        },
        // The default throws from a timer, which would crash the process; record it and refuse to write.
        onCompromised: (error) => {
          compromised = error;
        },
      });
    } catch (error) {
      const code = errorCode(error);
      if (code === "ENOENT") {
        throw new ManifestStoreError("not_found", `No handoff manifest at ${target}.`, { cause: error });
      }
      if (code === "ELOCKED") {
        throw new ManifestStoreError(
          "locked",
          `Gave up after ${formatWait(this.lockWaitMs)} waiting for the lock on ${what} (${lockPath}); another process holds it.`,
          { cause: error },
        );
      }
      throw error;
    }
    const assertHeld = (): void => {
      if (compromised) {
        throw new ManifestStoreError(
          "lock_compromised",
          `Lost the lock on ${what} (${lockPath}): ${compromised.message}`,
          {
            cause: compromised,
          },
        );
      }
    };
    try {
      return await body(assertHeld);
    } finally {
      try {
        await release();
      } catch (error) {
        // A compromised lock is already released; anything else is worth surfacing.
        if (!compromised) throw error;
      }
    }
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

async function readActionHolder(path: string): Promise<ActionHolder | undefined> {
  const text = await readTextIfPresent(path);
  if (text === undefined) return undefined;
  try {
    const parsed = ActionHolderSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
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
