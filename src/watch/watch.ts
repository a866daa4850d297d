/**
 * The parent's view of its own handoffs: the manifests whose parent is this session, each child's
 * state (status.ts) from what its own Pi publishes (child/child-state.ts) and whether that Pi
 * still lives (its session lease, child/lease.ts, or its recorded pid); the tail of the child's
 * session file only for a live child that publishes nothing (an older version of this package).
 *
 * Invariants:
 * - Read-only, and bounded per handoff and refresh: one manifest read (the store's list; other
 *   sessions' manifests only the first time), the state file (one stat when it did not change,
 *   through `childStates`) and the lease of its session (and of
 *   at most `MAX_MOVES` sessions its Pi went on with), a few process reads for the recorded pid
 *   when no lease answers, and for a live child without a published state one stat and one
 *   fixed-size read of the session's end (session/tail.ts) and a share of one multiplexer call per
 *   Herdr server (`agentStatuses`). No process-table scan: that is the inventory's. git only through
 *   the optional `forecast` port (forecast.ts), on full refreshes: one listing of branch tips per
 *   repository, merges and counts only when a tip moved (its `ForecastCache`).
 * - Handoffs are looked at a few at a time with a yield between them, so a refresh of many never
 *   holds the event loop for long (measured by `npm run bench`, section `childStatus`).
 * - `HandoffWatch` notices a change within a second without a faster poll: it watches the state
 *   files' and the manifests' directories (fs/watch.ts) and re-reads only the child a change names,
 *   and checks the pids of live children with signal 0 alone every `LIVENESS_TICK_MS`; the full
 *   refresh (the caller's poll, `PI_HANDOFF_WATCH_POLL_MS`) stays the fallback for everything a
 *   directory event cannot tell (a platform without events, an older child's session tail).
 * - A child's reads never apply out of order: a read started before another one that finished
 *   first is dropped.
 * - A removed handoff, and a landed one whose Pi does not run, is shown only for
 *   `RETIRED_SHOWN_MS` after it was retired; a removed one is still read (for its reports) until
 *   `REMOVED_READ_MS`, then never again.
 */
import type { Manifest } from "../manifest/schema.ts";
import { readChildState, type ChildStateFile, type ChildStateRead, type ChildStates } from "../child/child-state.ts";
import { childStateDir } from "../child/child-state.ts";
import { readSessionLease, sessionKey, type SessionLease } from "../child/lease.ts";
import { isOwnerAlive } from "../manifest/owner.ts";
import type { ManifestStore } from "../manifest/store.ts";
import type { AgentStatusesOf } from "../mux/registry.ts";
import { pidMayExist } from "../process/facts.ts";
import { watchDirectory, type DirectoryWatch } from "../fs/watch.ts";
import { readSessionTail, type SessionTails, type TailEntry } from "../session/tail.ts";
import { findWriters } from "../inventory/classify.ts";
import type { DescribedProcess } from "../process/facts.ts";
import { describeProcess } from "../inventory/processes.ts";
import {
  decideChildStatus,
  LIVE_CHILD_STATES,
  publishedActivity,
  publishedEnd,
  type ChildStatus,
  type PublishedActivity,
} from "../inventory/status.ts";
import { forecastMark, type Forecast } from "../forecast/forecast.ts";

/** How long a removed handoff (or a landed one whose Pi does not run) stays in the widget. */
export const RETIRED_SHOWN_MS = 30_000;
/** How long a removed handoff is still read (not shown): its last reports, a landing's, are still delivered. */
export const REMOVED_READ_MS = 10 * 60_000;
/** How often the pids of live children are checked with signal 0 (a killed Pi is noticed within this). */
export const LIVENESS_TICK_MS = 250;
/** How many sessions a child's Pi may have gone on with (/new, /resume) that are followed. */
export const MAX_MOVES = 3;
const BATCH = 8;
/** Changes that come together (a rename shows twice) are read once. */
const COALESCE_MS = 15;

export interface ParentIdentity {
  sessionFile?: string;
  sessionId: string;
}

export interface WatchDeps {
  store: ManifestStore;
  now(): Date;
  /** Where the child's session lease and state live (launch/); without it only the recorded pid counts. */
  agentDir?: string;
  readLease?: (sessionFile: string) => Promise<SessionLease>;
  readChildState?: (sessionFile: string) => Promise<ChildStateRead>;
  describeProcess?: (pid: number) => Promise<DescribedProcess | undefined>;
  /** Whether the process running a handoff's set-up or launch still lives (manifest/owner.ts). */
  ownerAlive?: (owner: NonNullable<Manifest["owner"]>) => Promise<boolean>;
  /** Herdr's `agent_status` of the handoffs' panes, by handoff id, asked once per refresh (optional; the registry's agentStatuses, mux/herdr/agent-statuses.ts). */
  agentStatuses?: AgentStatusesOf;
  tailBytes?: number;
  /** The tails read before, kept by a watch across its refreshes; each file is read again only once it changed. */
  tails?: SessionTails;
  /** The same for the children's state files (child/child-state.ts). */
  childStates?: ChildStates;
  /** The conflict forecast of the live handoffs (forecast.ts), for the widget's mark; optional. */
  forecast?: (manifests: readonly Manifest[]) => Promise<Forecast>;
}

export interface OwnHandoff {
  id: string;
  branch: string;
  status: ChildStatus;
  /** The forecast's short mark (`behind 3, conflicts 2`), when there is something to say. */
  forecast?: string;
}

/** Whether the manifest's parent is this session (by file, or by id when the file is not known). */
export function isChildOf(manifest: Manifest, parent: ParentIdentity): boolean {
  if (parent.sessionFile !== undefined && manifest.parent.sessionFile === parent.sessionFile) return true;
  return manifest.parent.sessionId === parent.sessionId;
}

/**
 * The manifests whose parent is this session (removed ones only for `REMOVED_READ_MS` after removal).
 * `skipped` remembers across refreshes the ids not to read again: other sessions' handoffs (a
 * manifest's parent never changes) and removed ones past their time on show.
 */
export async function ownHandoffs(
  deps: Pick<WatchDeps, "store" | "now">,
  parent: ParentIdentity,
  skipped: Set<string> = new Set(),
  /** When given, only these handoffs are read at all. */
  only?: ReadonlySet<string>,
): Promise<Manifest[]> {
  const now = deps.now().getTime();
  const own: Manifest[] = [];
  const skip = (id: string): boolean => skipped.has(id) || (only !== undefined && !only.has(id));
  for (const entry of await deps.store.list({ skip })) {
    if (!entry.ok) continue;
    if (!isChildOf(entry.manifest, parent)) {
      skipped.add(entry.id);
      continue;
    }
    if (entry.manifest.state === "removed" && now - Date.parse(entry.manifest.updatedAt) > REMOVED_READ_MS) {
      // A record that is no longer shown never will be again: not read again either.
      skipped.add(entry.id);
      continue;
    }
    own.push(entry.manifest);
  }
  return own;
}

/** Each own handoff's child state, in the store's order (`skipped`: see `ownHandoffs`). */
export async function ownHandoffStatuses(
  deps: WatchDeps,
  parent: ParentIdentity,
  skipped?: Set<string>,
): Promise<OwnHandoff[]> {
  const manifests = await ownHandoffs(deps, parent, skipped);
  const [facts, marks] = await Promise.all([factsOfAll(deps, manifests), forecastMarks(deps, manifests)]);
  const statuses = await withAgentStatuses(deps, facts);
  return facts.flatMap(
    (child, index) => shownHandoff(child.manifest, statuses[index], deps.now(), marks.get(child.manifest.id)) ?? [],
  );
}

/** What the files and the process table say of one child. */
export interface ChildFacts {
  manifest: Manifest;
  live: boolean;
  activity?: PublishedActivity;
  ended?: { at: string; code?: number };
  lastAliveAt?: string;
  launching?: boolean;
  tail?: TailEntry[];
  sessionMtime?: string;
  /** The pid of its live Pi, when known (for the signal-0 check). */
  pid?: number;
  /** The keys (file names) of the state files this was read from: the session's, and those its Pi went on with. */
  stateKeys: string[];
  /** Its Pi said it went on with another session where nothing was published yet (a change there names a key not known yet). */
  unresolvedMove?: boolean;
}

async function factsOfAll(deps: WatchDeps, manifests: readonly Manifest[]): Promise<ChildFacts[]> {
  deps.tails?.keepOnly(new Set(manifests.flatMap((manifest) => watchedSessionFile(manifest) ?? [])));
  const facts: ChildFacts[] = [];
  for (let start = 0; start < manifests.length; start += BATCH) {
    const batch = manifests.slice(start, start + BATCH);
    facts.push(...(await Promise.all(batch.map((manifest) => factsOf(deps, manifest)))));
    // Let timers, input and rendering run between batches.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return facts;
}

/** Each child's status; Herdr is asked only about live children that publish no state of their own. */
async function withAgentStatuses(deps: WatchDeps, facts: readonly ChildFacts[]): Promise<ChildStatus[]> {
  const unspoken = facts.filter((child) => child.live && child.activity === undefined).map((child) => child.manifest);
  const agentStatuses =
    unspoken.length === 0 || deps.agentStatuses === undefined
      ? new Map<string, string>()
      : await deps.agentStatuses(unspoken);
  return facts.map((child) => statusOf(child, agentStatuses.get(child.manifest.id)));
}

function statusOf(child: ChildFacts, agentStatus: string | undefined): ChildStatus {
  const { stateKeys: _keys, pid: _pid, ...facts } = child;
  return decideChildStatus({ ...facts, ...(agentStatus === undefined ? {} : { agentStatus }) });
}

/** The handoff as the widget lists it, or undefined once it is retired long enough (see the header). */
function shownHandoff(
  manifest: Manifest,
  status: ChildStatus | undefined,
  now: Date,
  forecast: string | undefined,
): OwnHandoff | undefined {
  if (status === undefined) return undefined;
  if (status.state === "removed" || status.state === "landed") {
    const since = status.since === undefined ? Number.NaN : Date.parse(status.since);
    if (Number.isFinite(since) && now.getTime() - since > RETIRED_SHOWN_MS) return undefined;
  }
  return { id: manifest.id, branch: manifest.branch, status, ...(forecast ? { forecast } : {}) };
}

/** The forecast's marks by handoff id; none (and no git) without the port, or when it fails. */
async function forecastMarks(deps: WatchDeps, manifests: readonly Manifest[]): Promise<Map<string, string>> {
  const live = manifests.filter((manifest) => manifest.state !== "removed");
  if (deps.forecast === undefined || live.length === 0) return new Map();
  try {
    const forecast = await deps.forecast(live);
    return new Map(forecast.entries.map((entry) => [entry.id, forecastMark(entry)]));
  } catch {
    return new Map();
  }
}

/** The child's session file, while there is a child to watch (a removed handoff has none). */
function watchedSessionFile(manifest: Manifest): string | undefined {
  return manifest.state === "removed" ? undefined : manifest.child.sessionFile;
}

const IN_PROGRESS = new Set<Manifest["state"]>(["provisioning", "provisioned", "forked", "launching"]);

/** What the files and the process table say of one child (see the header for what is read). */
export async function factsOf(deps: WatchDeps, manifest: Manifest): Promise<ChildFacts> {
  const removed = manifest.state === "removed";
  const sessionFile = watchedSessionFile(manifest);
  const { agentDir, tails } = deps;
  const readLease =
    deps.readLease ?? (agentDir === undefined ? undefined : (file: string) => readSessionLease(agentDir, file));
  const { childStates } = deps;
  const readState =
    deps.readChildState ??
    (childStates !== undefined
      ? (file: string) => childStates.read(file)
      : agentDir === undefined
        ? undefined
        : (file: string) => readChildState(agentDir, file));
  const word =
    sessionFile === undefined
      ? undefined
      : await publishedWord(sessionFile, readLease ?? (async () => ({ state: "none" })), readState);
  const launching =
    IN_PROGRESS.has(manifest.state) &&
    (manifest.owner === undefined || (await (deps.ownerAlive ?? isOwnerAlive)(manifest.owner)));
  const base = {
    manifest,
    stateKeys: word?.keys ?? [],
    ...(word?.unresolvedMove === true ? { unresolvedMove: true } : {}),
    ...(word?.ended === undefined ? {} : { ended: word.ended }),
    ...(word?.lastAliveAt === undefined ? {} : { lastAliveAt: word.lastAliveAt }),
    ...(launching ? { launching } : {}),
  };
  if (word?.live === true && word.activity !== undefined)
    return { ...base, live: true, activity: word.activity, ...(word.pid === undefined ? {} : { pid: word.pid }) };
  const readTail =
    tails === undefined ? readSessionTail : (file: string, maxBytes?: number) => tails.read(file, maxBytes);
  // A live Pi that says nothing (an older version): the tail tells; without a live lease, the
  // recorded pid still being its Pi does (described only then: on macOS that is several process starts).
  const recorded =
    word?.live === true || removed || manifest.child.pid === undefined
      ? undefined
      : await (deps.describeProcess ?? describeProcess)(manifest.child.pid);
  const leaseWriter = word?.live === true ? word.pid : undefined;
  const live = leaseWriter !== undefined || findWriters(manifest, recorded, []).length > 0;
  const pid = leaseWriter ?? (live ? manifest.child.pid : undefined);
  const tail = live && sessionFile !== undefined ? await readTail(sessionFile, deps.tailBytes) : undefined;
  return {
    ...base,
    live,
    ...(pid === undefined ? {} : { pid }),
    ...(tail === undefined ? {} : { tail: tail.entries, sessionMtime: tail.mtime }),
  };
}

interface PublishedWord {
  /** Whether a live Pi holds the lease of the session (or of one its Pi went on with). */
  live: boolean;
  unresolvedMove?: boolean;
  pid?: number;
  activity?: PublishedActivity;
  ended?: { at: string; code?: number };
  lastAliveAt?: string;
  keys: string[];
}

/**
 * What the child's Pi published, counted only while that Pi holds the session's lease; a Pi that
 * went on with another session (/new) is followed there while the same process holds that one.
 */
async function publishedWord(
  sessionFile: string,
  readLease: (file: string) => Promise<SessionLease>,
  readState: ((file: string) => Promise<ChildStateRead>) | undefined,
): Promise<PublishedWord> {
  const keys: string[] = [];
  let file = sessionFile;
  let movedFrom: ChildStateFile | undefined;
  let lastAliveAt: string | undefined;
  for (let hop = 0; hop <= MAX_MOVES; hop++) {
    keys.push(sessionKey(file));
    const [lease, read] = await Promise.all([
      readLease(file),
      readState === undefined ? Promise.resolve<ChildStateRead>({ code: "none" }) : readState(file),
    ]);
    const record = read.code === "ok" ? read.record : undefined;
    const samePi = (pid: number) => movedFrom === undefined || movedFrom.pid === pid;
    if (lease.state === "live") {
      if (!samePi(lease.pid)) break;
      if (record !== undefined && record.pid === lease.pid) {
        const activity = publishedActivity(record, movedFrom === undefined ? undefined : file);
        if (activity !== undefined) return { live: true, pid: lease.pid, activity, keys };
        if (record.state === "exited") return { live: false, ended: publishedEnd(record), keys };
        // It said it went on with another session and is letting this one's lease go: follow it.
        if (record.state === "moved" && record.movedTo !== undefined && hop < MAX_MOVES) {
          movedFrom = record;
          file = record.movedTo;
          continue;
        }
      }
      // A live Pi without a word of its own here (an older version, or one that has not spoken yet).
      return { live: true, pid: lease.pid, keys };
    }
    lastAliveAt = latest(lastAliveAt, record?.writtenAt, lease.state === "stale" ? lease.heartbeatAt : undefined);
    if (record === undefined && movedFrom !== undefined && lease.state === "none")
      return { live: false, unresolvedMove: true, keys, ...(lastAliveAt === undefined ? {} : { lastAliveAt }) };
    if (record === undefined || !samePi(record.pid)) break;
    if (record.state === "exited") return { live: false, ended: publishedEnd(record), keys };
    if (record.state !== "moved" || record.movedTo === undefined) break;
    movedFrom = record;
    file = record.movedTo;
  }
  return { live: false, keys, ...(lastAliveAt === undefined ? {} : { lastAliveAt }) };
}

function latest(...times: (string | undefined)[]): string | undefined {
  let best: string | undefined;
  for (const time of times) {
    if (time === undefined || !Number.isFinite(Date.parse(time))) continue;
    if (best === undefined || Date.parse(time) > Date.parse(best)) best = time;
  }
  return best;
}

export interface HandoffWatchOptions {
  deps: WatchDeps & { agentDir: string };
  parent: ParentIdentity;
  /** Told when a change the watch noticed changed what is shown (not on the caller's own refreshes). */
  onChange(own: OwnHandoff[]): void;
  /** The signal-0 check of live children's pids (ms); 0: none. */
  livenessMs?: number;
  watchDirectory?: typeof watchDirectory;
  pidMayExist?: (pid: number) => boolean;
}

interface WatchedChild {
  manifest: Manifest;
  facts?: ChildFacts;
  status?: ChildStatus;
  /** Herdr's last word on it, from the latest full refresh. */
  agentStatus?: string;
  /** The forecast's mark, from the latest full refresh. */
  forecast?: string;
  /** The number of the latest read started, and of the one applied. */
  started: number;
  applied: number;
  lastAliveAt?: string;
}

/** The parent's watch of its own children (see the header): full refreshes by the caller, changes by itself. */
export class HandoffWatch {
  readonly #options: HandoffWatchOptions;
  readonly #children = new Map<string, WatchedChild>();
  /** Other sessions' handoffs and removed ones no longer shown (see ownHandoffs). */
  readonly #skipped = new Set<string>();
  readonly #dirty = new Set<string>();
  #watches: DirectoryWatch[] = [];
  #tick: NodeJS.Timeout | undefined;
  #coalesce: NodeJS.Timeout | undefined;
  #reading = false;
  #lastShown = "";
  #stopped = false;

  constructor(options: HandoffWatchOptions) {
    this.#options = options;
  }

  /** Whether directory events come (false: only the poll tells, as before). */
  get watching(): boolean {
    return this.#watches.length > 0 && this.#watches.every((watch) => watch.watching);
  }

  /** Everything read again (the caller's poll); the watching starts once this session has handoffs. */
  async refresh(): Promise<OwnHandoff[]> {
    const { deps } = this.#options;
    const manifests = await ownHandoffs(deps, this.#options.parent, this.#skipped);
    const ids = new Set(manifests.map((manifest) => manifest.id));
    for (const id of this.#children.keys()) if (!ids.has(id)) this.#children.delete(id);
    const reads = manifests.map((manifest) => {
      const child = this.#child(manifest);
      child.manifest = manifest;
      return { child, number: ++child.started };
    });
    const [facts, marks] = await Promise.all([factsOfAll(deps, manifests), forecastMarks(deps, manifests)]);
    const unspoken = facts.filter((child) => child.live && child.activity === undefined).map((child) => child.manifest);
    const agentStatuses =
      unspoken.length === 0 || deps.agentStatuses === undefined
        ? new Map<string, string>()
        : await deps.agentStatuses(unspoken);
    facts.forEach((fact, index) => {
      const read = reads[index];
      if (read === undefined) return;
      const agentStatus = agentStatuses.get(fact.manifest.id);
      if (agentStatus === undefined) delete read.child.agentStatus;
      else read.child.agentStatus = agentStatus;
      const mark = marks.get(fact.manifest.id);
      if (mark === undefined) delete read.child.forecast;
      else read.child.forecast = mark;
      this.#apply(read.child, read.number, fact);
    });
    deps.childStates?.keepOnly(new Set([...this.#children.values()].flatMap((child) => child.facts?.stateKeys ?? [])));
    if (!this.#stopped && manifests.length > 0) this.#startWatching();
    const shown = this.shown();
    this.#lastShown = JSON.stringify(shown);
    return shown;
  }

  /** The ids of this session's handoffs still read (shown or not). */
  ownIds(): string[] {
    return [...this.#children.keys()];
  }

  /** What is shown now, from the latest reads. */
  shown(): OwnHandoff[] {
    const now = this.#options.deps.now();
    return [...this.#children.values()].flatMap(
      (child) => shownHandoff(child.manifest, child.status, now, child.forecast) ?? [],
    );
  }

  stop(): void {
    this.#stopped = true;
    for (const watch of this.#watches) watch.close();
    this.#watches = [];
    if (this.#tick !== undefined) clearInterval(this.#tick);
    if (this.#coalesce !== undefined) clearTimeout(this.#coalesce);
    this.#tick = undefined;
  }

  #child(manifest: Manifest): WatchedChild {
    let child = this.#children.get(manifest.id);
    if (child === undefined) {
      child = { manifest, started: 0, applied: 0 };
      this.#children.set(manifest.id, child);
    }
    return child;
  }

  #apply(child: WatchedChild, number: number, facts: ChildFacts): void {
    if (number < child.applied) return;
    child.applied = number;
    const now = this.#options.deps.now().toISOString();
    if (facts.live) child.lastAliveAt = now;
    const lastAliveAt = latest(facts.lastAliveAt, child.lastAliveAt);
    child.facts = { ...facts, ...(lastAliveAt === undefined ? {} : { lastAliveAt }) };
    child.status = statusOf(child.facts, child.agentStatus);
  }

  #startWatching(): void {
    if (this.#watches.length > 0 || this.#tick !== undefined) return;
    const watch = this.#options.watchDirectory ?? watchDirectory;
    const { deps } = this.#options;
    this.#watches = [
      watch(childStateDir(deps.agentDir), (name) => this.#stateChanged(name), { create: true }),
      watch(deps.store.dir, (name) => this.#manifestChanged(name)),
    ];
    const every = this.#options.livenessMs ?? LIVENESS_TICK_MS;
    if (every > 0) {
      this.#tick = setInterval(() => this.#checkPids(), every);
      this.#tick.unref();
    }
  }

  #stateChanged(name: string | undefined): void {
    let known = false;
    for (const [id, child] of this.#children) {
      if (name === undefined || child.facts?.stateKeys.includes(name) === true) {
        known = true;
        this.#mark(id);
      }
    }
    if (known) return;
    // A file no child is known by: the session a child's Pi just went on with (/new), read before
    // its first word there or while a read of it was under way.
    for (const [id, child] of this.#children)
      if (child.started > child.applied || child.facts?.unresolvedMove === true) this.#mark(id);
  }

  #manifestChanged(name: string | undefined): void {
    if (name === undefined) {
      for (const id of this.#children.keys()) this.#mark(id);
      return;
    }
    // `<id>.json` itself; the store's temp files, locks and launch files are not the manifest.
    const id = /^([^.][^/]*)\.json$/.exec(name)?.[1];
    if (id !== undefined && this.#children.has(id)) this.#mark(id);
  }

  #checkPids(): void {
    const mayExist = this.#options.pidMayExist ?? pidMayExist;
    const now = this.#options.deps.now().toISOString();
    for (const [id, child] of this.#children) {
      const pid = child.facts?.pid;
      if (child.status === undefined || !LIVE_CHILD_STATES.has(child.status.state) || pid === undefined) continue;
      // Still there: the latest sign of life (an exit it says nothing about is dated from it).
      if (mayExist(pid)) child.lastAliveAt = now;
      else this.#mark(id);
    }
  }

  #mark(id: string): void {
    if (this.#stopped) return;
    this.#dirty.add(id);
    this.#coalesce ??= setTimeout(() => {
      this.#coalesce = undefined;
      this.#kick();
    }, COALESCE_MS);
  }

  /** Reads what is marked, one pass at a time (the flag is cleared only after the pass settled). */
  #kick(): void {
    if (this.#reading || this.#stopped || this.#dirty.size === 0) return;
    this.#reading = true;
    void this.#readDirty().finally(() => {
      this.#reading = false;
      this.#kick();
    });
  }

  async #readDirty(): Promise<void> {
    while (this.#dirty.size > 0 && !this.#stopped) {
      const ids = [...this.#dirty];
      this.#dirty.clear();
      await Promise.all(ids.map((id) => this.#readOne(id)));
      const shown = this.shown();
      const text = JSON.stringify(shown);
      if (text !== this.#lastShown && !this.#stopped) {
        this.#lastShown = text;
        try {
          this.#options.onChange(shown);
        } catch {
          // The caller's trouble; the watch goes on.
        }
      }
    }
  }

  async #readOne(id: string): Promise<void> {
    const child = this.#children.get(id);
    if (child === undefined) return;
    const number = ++child.started;
    try {
      const read = await this.#options.deps.store.read(id);
      if (!read.ok) return;
      child.manifest = read.manifest;
      this.#apply(child, number, await factsOf(this.#options.deps, read.manifest));
    } catch {
      // A read that failed now is tried again by the next change or the next poll.
    }
  }
}
