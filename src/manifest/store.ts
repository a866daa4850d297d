/**
 * The manifest store: one JSON file per handoff in `<agentDir>/handoff-worktree/manifests/<id>.json`.
 *
 * Invariants:
 * - A file on disk is always complete: every write goes to a temp file that is fsynced and then
 *   renamed (or hard-linked, for a new file) into place, so readers never take a lock.
 * - Every file written has passed `ManifestSchema`; a file that does not is reported, never repaired.
 * - `create` never overwrites a file, and checks for conflicting handoffs under one store-wide lock,
 *   so two processes cannot both claim the same branch.
 * - `update` is read-modify-write under a per-file lock; `id`, `version`, `createdAt` and the existing
 *   `history` entries never change (history is append-only).
 * - Locks are directories (`proper-lockfile`) that go stale after `staleMs` and are waited for at most
 *   `lockWaitMs`, so a process killed while holding one never blocks anyone for good.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { lock } from "proper-lockfile";
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode } from "../fs/probe.ts";
import { type HandoffState, type Manifest, ManifestSchema, MANIFEST_VERSION, canTransition } from "./schema.ts";
import { errorMessage } from "../errors.ts";

const MANIFEST_SUFFIX = ".json";
const ID_PATTERN = /^[a-z0-9][a-z0-9-]{2,80}$/;
const STORE_LOCK_NAME = ".store.lock";
const MAX_BRANCH_SLUG = 40;

/** proper-lockfile's floor for `stale`. */
const MIN_STALE_MS = 2_000;
const DEFAULT_STALE_MS = 10_000;
/** Longer than the stale window, so a lock left by a killed process is taken over rather than reported. */
const DEFAULT_LOCK_WAIT_MS = 15_000;

export type ReadResult =
  | { ok: true; manifest: Manifest }
  | { ok: false; code: "not_found" | "invalid"; message: string };

export type ListEntry =
  | { ok: true; id: string; path: string; manifest: Manifest }
  | { ok: false; id: string; path: string; error: string };

export type CreateResult =
  | { ok: true; manifest: Manifest; path: string }
  | { ok: false; code: "conflict"; conflicting: Manifest; message: string };

export interface CreateOptions {
  /** True when `existing` is a handoff the new one must not coexist with (e.g. same repo and branch). */
  conflictsWith?: (existing: Manifest) => boolean;
}

export type ManifestMutation = (manifest: Manifest) => Manifest | void;

export interface ManifestStoreOptions {
  now?: () => Date;
  /** A lock whose directory has not been touched for this long is considered abandoned. */
  staleMs?: number;
  /** Longest time to wait for a lock before giving up with a `locked` error. */
  lockWaitMs?: number;
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

  constructor(dir: string, options: ManifestStoreOptions = {}) {
    this.dir = resolve(dir);
    this.now = options.now ?? (() => new Date());
    this.staleMs = Math.max(options.staleMs ?? DEFAULT_STALE_MS, MIN_STALE_MS);
    this.lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
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
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return [];
      throw error;
    }
    // Temp files and lock dirs start with "." or do not end in ".json".
    const manifestNames = names.filter((name) => name.endsWith(MANIFEST_SUFFIX) && !name.startsWith(".")).sort();
    const entries: ListEntry[] = [];
    for (const name of manifestNames) {
      const id = name.slice(0, -MANIFEST_SUFFIX.length);
      if (options.skip?.(id) === true) continue;
      const path = join(this.dir, name);
      const result = await readManifestFile(path, id);
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
      assertHeld();
      try {
        await writeFileAtomic(path, serializeManifest(validated), { overwrite: false });
      } catch (error) {
        if (errorCode(error) === "EEXIST") {
          throw alreadyExists(validated.id, path, error);
        }
        throw error;
      }
      return { ok: true, manifest: validated, path };
    });
  }

  /**
   * Read-modify-write under the file's lock. `mutate` gets a private copy; it may edit it in place or
   * return a replacement. The result is validated before anything is written; `updatedAt` is set here.
   * Throws `ManifestStoreError` (not_found, invalid, locked) or an Error if the result is invalid.
   */
  async update(id: string, mutate: ManifestMutation): Promise<Manifest> {
    return this.modify(id, (manifest) => mutate(manifest));
  }

  /** Moves to state `to`, appending a history entry. An illegal transition throws and writes nothing. */
  async transition(id: string, to: HandoffState, patch?: (manifest: Manifest) => void, note?: string): Promise<Manifest> {
    return this.modify(id, (manifest, at) => {
      const from = manifest.state;
      if (!canTransition(from, to)) {
        throw new Error(`Illegal handoff state transition ${from} -> ${to} for ${id}.`);
      }
      patch?.(manifest);
      manifest.state = to;
      manifest.history.push(note === undefined ? { state: to, at } : { state: to, at, note });
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
      const next = parseOrThrow({ ...mutated, updatedAt: at }, `Update of handoff ${id}`);
      assertUnchangedIdentity(current.manifest, next);
      assertHeld();
      await writeFileAtomic(path, serializeManifest(next));
      return next;
    });
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
  ): Promise<T> {
    let compromised: Error | undefined;
    let release: () => Promise<void>;
    try {
      release = await lock(target, {
        lockfilePath: lockPath,
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
          `Gave up after ${this.lockWaitMs} ms waiting for the lock on ${what} (${lockPath}); another process holds it.`,
          { cause: error },
        );
      }
      throw error;
    }
    const assertHeld = (): void => {
      if (compromised) {
        throw new ManifestStoreError("lock_compromised", `Lost the lock on ${what} (${lockPath}): ${compromised.message}`, {
          cause: compromised,
        });
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
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") {
      return { ok: false, code: "not_found", message: `No handoff manifest with id ${id} (looked for ${path}).` };
    }
    throw error;
  }
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
    return { ok: false, code: "invalid", message: `Manifest file ${path} does not match the manifest schema (${describeIssues(parsed.error)}).` };
  }
  if (parsed.data.id !== id) {
    return { ok: false, code: "invalid", message: `Manifest file ${path} contains id ${parsed.data.id}, which does not match its file name.` };
  }
  return { ok: true, manifest: parsed.data };
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
  const more = error.issues.length > 1 ? ` and ${error.issues.length - 1} more problem(s)` : "";
  return `${where}: ${first.message}${more}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
