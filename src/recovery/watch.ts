/**
 * The parent's view of its own handoffs, cheap enough to refresh every few seconds: the manifests
 * whose parent is this session, each child's state (status.ts) from the tail of its session file
 * and whether its Pi still lives (its session lease, launch/lease.ts, or its recorded pid).
 *
 * Invariants:
 * - Read-only, and bounded per handoff: one manifest read (the store's list; other sessions'
 *   manifests only the first time), one stat and one
 *   fixed-size read of the session's end (session/tail.ts), the lease file, and a few process reads
 *   for the recorded pid; at most one multiplexer call per Herdr server per refresh, through the
 *   `agentStatuses` port. No git, no process-table scan: those are the inventory's.
 * - Handoffs are looked at a few at a time with a yield between them, so a refresh of many never
 *   holds the event loop for long (measured by `npm run bench`, section `childStatus`).
 * - A removed handoff is shown only for `REMOVED_SHOWN_MS` after its removal, then dropped.
 */
import type { Manifest } from "../manifest/schema.ts";
import { readSessionLease, type SessionLease } from "../launch/lease.ts";
import type { ManifestStore } from "../manifest/store.ts";
import type { AgentStatusesOf } from "../mux/agent-statuses.ts";
import { readSessionTail, type SessionTails, type TailEntry } from "../session/tail.ts";
import { findWriters, type ProcessInfo } from "./classify.ts";
import { describeProcess } from "./processes.ts";
import { decideChildStatus, type ChildStatus } from "./status.ts";

export const REMOVED_SHOWN_MS = 10 * 60_000;
const BATCH = 8;

export interface ParentIdentity {
  sessionFile?: string;
  sessionId: string;
}

export interface WatchDeps {
  store: ManifestStore;
  now(): Date;
  /** Where the child's session lease lives (launch/lease.ts); without it only the recorded pid counts. */
  agentDir?: string;
  readLease?: (sessionFile: string) => Promise<SessionLease>;
  describeProcess?: (pid: number) => Promise<ProcessInfo | undefined>;
  /** Herdr's `agent_status` of the handoffs' panes, by handoff id, asked once per refresh (optional; mux/agent-statuses.ts). */
  agentStatuses?: AgentStatusesOf;
  tailBytes?: number;
  /** The tails read before, kept by a watch across its refreshes; each file is read again only once it changed. */
  tails?: SessionTails;
}

export interface OwnHandoff {
  id: string;
  branch: string;
  status: ChildStatus;
}

/** Whether the manifest's parent is this session (by file, or by id when the file is not known). */
export function isChildOf(manifest: Manifest, parent: ParentIdentity): boolean {
  if (parent.sessionFile !== undefined && manifest.parent.sessionFile === parent.sessionFile) return true;
  return manifest.parent.sessionId === parent.sessionId;
}

/**
 * The manifests whose parent is this session (removed ones only for a while after removal).
 * `skipped` remembers across refreshes the ids not to read again: other sessions' handoffs (a
 * manifest's parent never changes) and removed ones past their time on show.
 */
export async function ownHandoffs(deps: Pick<WatchDeps, "store" | "now">, parent: ParentIdentity, skipped: Set<string> = new Set()): Promise<Manifest[]> {
  const now = deps.now().getTime();
  const own: Manifest[] = [];
  for (const entry of await deps.store.list({ skip: (id) => skipped.has(id) })) {
    if (!entry.ok) continue;
    if (!isChildOf(entry.manifest, parent)) {
      skipped.add(entry.id);
      continue;
    }
    if (entry.manifest.state === "removed" && now - Date.parse(entry.manifest.updatedAt) > REMOVED_SHOWN_MS) {
      // A record that is no longer shown never will be again: not read again either.
      skipped.add(entry.id);
      continue;
    }
    own.push(entry.manifest);
  }
  return own;
}

/** Each own handoff's child state, in the store's order (`skipped`: see `ownHandoffs`). */
export async function ownHandoffStatuses(deps: WatchDeps, parent: ParentIdentity, skipped?: Set<string>): Promise<OwnHandoff[]> {
  const manifests = await ownHandoffs(deps, parent, skipped);
  deps.tails?.keepOnly(new Set(manifests.flatMap((manifest) => watchedSessionFile(manifest) ?? [])));
  const facts: ChildFacts[] = [];
  for (let start = 0; start < manifests.length; start += BATCH) {
    const batch = manifests.slice(start, start + BATCH);
    facts.push(...(await Promise.all(batch.map((manifest) => factsOf(deps, manifest)))));
    // Let timers, input and rendering run between batches.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  // Herdr is asked about live children only: an exited child's pane has nothing to say.
  const live = facts.filter((child) => child.live).map((child) => child.manifest);
  const agentStatuses = live.length === 0 || deps.agentStatuses === undefined ? new Map<string, string>() : await deps.agentStatuses(live);
  return facts.map((child) => {
    const agentStatus = agentStatuses.get(child.manifest.id);
    const status = decideChildStatus({ ...child, ...(agentStatus === undefined ? {} : { agentStatus }) });
    return { id: child.manifest.id, branch: child.manifest.branch, status };
  });
}

type ChildFacts = { manifest: Manifest; live: boolean; tail?: TailEntry[]; sessionMtime?: string };

/** The child's session file, while there is a child to watch (a removed handoff has none). */
function watchedSessionFile(manifest: Manifest): string | undefined {
  return manifest.state === "removed" ? undefined : manifest.child.sessionFile;
}

/** What the files and the process table say of one child: its session's tail, and whether its Pi lives. */
async function factsOf(deps: WatchDeps, manifest: Manifest): Promise<ChildFacts> {
  const removed = manifest.state === "removed";
  const sessionFile = watchedSessionFile(manifest);
  const { agentDir, tails } = deps;
  const readLease = deps.readLease ?? (agentDir === undefined ? undefined : (file: string) => readSessionLease(agentDir, file));
  const readTail = tails === undefined ? readSessionTail : (file: string, maxBytes?: number) => tails.read(file, maxBytes);
  const [tail, lease] = await Promise.all([
    sessionFile === undefined ? Promise.resolve(undefined) : readTail(sessionFile, deps.tailBytes),
    sessionFile === undefined || readLease === undefined ? Promise.resolve(undefined) : readLease(sessionFile),
  ]);
  // The child's live lease on its session, or else its recorded pid still being its Pi (described
  // only then: on macOS a description is several process starts, every 2 s).
  const recorded =
    lease?.state === "live" || removed || manifest.child.pid === undefined ? undefined : await (deps.describeProcess ?? describeProcess)(manifest.child.pid);
  const live = lease?.state === "live" || findWriters(manifest, recorded, []).length > 0;
  return { manifest, live, ...(tail === undefined ? {} : { tail: tail.entries, sessionMtime: tail.mtime }) };
}
