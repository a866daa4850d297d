/**
 * Gathers the facts about a handoff that classify.ts judges: the worktree on disk and in git, the
 * branch and its commits, uncommitted work, the window/workspace, live Pi processes, the end of the
 * child's session (a fixed window, session/tail.ts) and where an interrupted landing's target is.
 *
 * Invariants:
 * - Read-only: only queries (git through `RecoveryGitPort`, the multiplexer's `exists`, process facts, the session lease).
 * - Bounded: every git and multiplexer call carries its own timeout (in the ports); the process
 *   table, each repository's worktree list and what a backend asks through `askOnce` (a tmux
 *   server's panes) are read once per gatherer, not once per handoff, and an inventory's
 *   uncommitted changes in one batch (`prepare`), whose misses are asked alone.
 * - Unpushed commits are counted only in a repository that has a remote (asked once per
 *   repository): with none there is nowhere to push, so nothing is unpushed.
 * - A fact that cannot be read becomes a sentence in `problems` and a cautious value (`unknown`),
 *   never an exception, so one broken repository does not hide the other handoffs.
 * - The child session's lease is read first-hand for every handoff with a child session (never
 *   cached: it is the writer rule's first evidence).
 * - Backend-specific questions go through `muxFor` (see mux/registry.ts), so a new backend
 *   needs no change here.
 * - A handoff's reserved ports are tested (a bind test, and who listens on one in use) only when
 *   asked (`checkPorts`: inspect), never by `list`; testing binds nothing for longer than the test.
 * - What a handoff killed inside a step left unrecorded is looked for through its intent (the
 *   window's name, the session directory, recorded before creating them) and reported as
 *   `unrecorded`, so every window and session it made is named (see classify.ts).
 */
import type { CommitSummary, RecoveryGitPort, WorktreeEntry } from "../git/types.ts";
import { readSessionLease, type SessionLease } from "../child/lease.ts";
import { readChildState, type ChildStateFile } from "../child/child-state.ts";
import { isOwnerAlive } from "../manifest/owner.ts";
import type { Manifest, ManifestOwner, MuxLocation } from "../manifest/schema.ts";
import { hasWindow, type MuxForLocation } from "../mux/registry.ts";
import type { AskOnce } from "../mux/terminal.ts";
import type { HandoffFacts, PortFact, Unrecorded, WorktreeRegistration } from "./classify.ts";
import type { DescribedProcess } from "../process/facts.ts";
import type { BranchFact, Changes, CommitList, WorkspaceFact } from "./report-schema.ts";
import { mergedOf } from "./merged.ts";
import { describeProcess, portListeners, scanPiProcesses, type ProcessScan } from "./processes.ts";
import { loopbackProbe, type PortProbe } from "../ports/probe.ts";
import { isDirectory, isEmptyDirectory, isFile } from "../fs/probe.ts";
import { findForkedSession } from "../session/find-fork.ts";
import { asError, errorSentence } from "../errors.ts";
import { readSessionTail, type SessionTail } from "../session/tail.ts";

/** How many commits of each kind a report lists (the total is always exact). */
const LISTED_COMMITS = 50;

export interface GatherDeps {
  git: RecoveryGitPort;
  /** The agent dir holding the manifests and the session leases. */
  agentDir: string;
  /** The lease on a session; defaults to `readSessionLease` in `agentDir`. */
  readLease?: (sessionFile: string) => Promise<SessionLease>;
  /** The backend of a location; `context.askOnce` shares one inventory's listings (mux/terminal.ts). */
  muxFor(location: MuxLocation, context?: { askOnce?: AskOnce }): MuxForLocation;
  now(): Date;
  /** Defaults to the process-table scan (src/process/). */
  scanProcesses?: () => Promise<ProcessScan>;
  /** Defaults to the process facts (src/process/). */
  describeProcess?: (pid: number) => Promise<DescribedProcess | undefined>;
  /** Whether a manifest's owner process still lives; defaults to the process facts (manifest/owner.ts). */
  ownerAlive?: (owner: ManifestOwner) => Promise<boolean>;
  /** The bind test of a reserved port; defaults to the real one (ports/probe.ts). */
  portProbe?: PortProbe;
  /** Who listens on a port; defaults to the process facts (processes.ts). */
  portListeners?: (port: number) => Promise<ProcessScan>;
}

export interface GatherOptions {
  /** Test the handoff's reserved ports (inspect). */
  checkPorts?: boolean;
}

export class FactGatherer {
  private readonly deps: GatherDeps;
  private readonly worktreeLists = new Map<string, Promise<WorktreeEntry[] | Error>>();
  /** One resolution per repository and base ref: handoffs of one repository mostly share a base. */
  private readonly baseCommits = new Map<string, Promise<string | undefined>>();
  /** One listing of branch tips per repository, instead of one git call per handoff. */
  private readonly branchTips = new Map<string, Promise<Map<string, string>>>();
  private readonly remotes = new Map<string, Promise<boolean>>();
  private processScan: Promise<ProcessScan> | undefined;
  /** What the backends asked once for all handoffs (a tmux server's panes), by question. */
  private readonly asked = new Map<string, Promise<unknown>>();
  private readonly askOnce: AskOnce = <T>(key: string, ask: () => Promise<T>): Promise<T> => {
    let answer = this.asked.get(key) as Promise<T> | undefined;
    if (answer === undefined) {
      answer = ask();
      this.asked.set(key, answer);
    }
    return answer;
  };
  /** The uncommitted changes of many worktrees, read in one batch (`prepare`), by worktree path. */
  private batchedChanges: Promise<Map<string, Changes>> | undefined;

  private readonly options: GatherOptions;

  constructor(deps: GatherDeps, options: GatherOptions = {}) {
    this.deps = deps;
    this.options = options;
  }

  /**
   * Starts reading, in one batch, what `gather` would otherwise ask git one handoff at a time: the
   * uncommitted changes of every worktree of `manifests` (git's port
   * `worktreeStatuses`). A worktree the batch could not answer is asked again alone when its
   * handoff is completed (`begin`, then `complete`), so its problem reads as before.
   */
  prepare(manifests: readonly Manifest[]): void {
    const batch = this.deps.git.worktreeStatuses;
    const paths = [
      ...new Set(manifests.filter((manifest) => manifest.state !== "removed").map((m) => m.worktree.path)),
    ];
    // The per-repository questions first: each is one git process, and Node starts a child on
    // its main thread, slower once the batch below keeps the cores busy.
    for (const manifest of manifests) {
      if (manifest.state === "removed") continue;
      this.worktreeList(manifest.repo.root);
      this.baseCommit(manifest.repo.root, manifest.base.ref);
      this.tipsOf(manifest.repo.root);
    }
    if (batch === undefined || paths.length < 2) return;
    // Every path at once, without looking first: the batch's shell tests each directory itself (a
    // worktree that is gone costs no process), and a handoff's completion asks only about those
    // that are directories.
    this.batchedChanges = (async () => {
      const statuses = await batch.call(this.deps.git, paths);
      const found = new Map<string, Changes>();
      paths.forEach((path, index) => {
        const status = statuses[index];
        if (status !== undefined)
          found.set(path, { dirtyFiles: status.dirtyFiles, untrackedFiles: status.untrackedFiles });
      });
      return found;
    })().catch(() => new Map<string, Changes>());
  }

  async gather(manifest: Manifest): Promise<HandoffFacts> {
    return (await this.begin(manifest)).complete();
  }

  /**
   * Every fact of `manifest` but its uncommitted changes and its ports, read now; `complete` then
   * waits for those. An inventory begins every handoff before completing any, so each one's
   * readings overlap the batch of `prepare` instead of waiting behind it.
   */
  async begin(manifest: Manifest): Promise<PendingFacts> {
    const now = this.deps.now();
    const childSessionExists = manifest.child.sessionFile !== undefined && (await isFile(manifest.child.sessionFile));
    if (manifest.state === "removed") {
      const facts = removedFacts(manifest, now, childSessionExists, await isDirectory(manifest.worktree.path));
      return { complete: () => Promise.resolve(facts) };
    }
    // The order below is the order of `problems` in the report.
    const problems: string[] = [];
    const read = await this.readings(manifest, childSessionExists);
    if (read.registration.code === "unknown") problems.push(read.registration.message);
    const unrecorded = await this.unrecorded(manifest, problems);
    const workspace = unrecorded.location !== undefined ? ({ code: "open" } as const) : read.recordedWorkspace;
    if (workspace.code === "unknown") problems.push(workspace.message);
    if (read.processes.problem !== undefined) problems.push(read.processes.problem);
    if (read.lease?.state === "unreadable") problems.push(read.lease.message);
    if (read.branch.code === "unknown") problems.push(read.branch.message);
    const landingTarget = await this.landingTarget(manifest, problems);
    // A dead owner ends the in-progress grace of an unfinished handoff (classify.ts).
    const ownerAlive =
      manifest.owner === undefined ? undefined : await (this.deps.ownerAlive ?? isOwnerAlive)(manifest.owner);
    // Only a directory git does not list can be a bare claim (classify.ts `claimed`): one readdir.
    const worktreeDirectoryEmpty =
      read.worktreeDirectoryExists && read.registration.code === "not_listed"
        ? await isEmptyDirectory(manifest.worktree.path)
        : undefined;
    const finish = async (): Promise<HandoffFacts> => {
      const changes = read.worktreeDirectoryExists ? await this.changes(manifest, problems) : undefined;
      const ports = this.options.checkPorts === true ? await this.ports(manifest) : undefined;
      return {
        manifest,
        now,
        worktreeDirectoryExists: read.worktreeDirectoryExists,
        ...(worktreeDirectoryEmpty === undefined ? {} : { worktreeDirectoryEmpty }),
        registration: read.registration,
        workspace,
        recordedProcess: read.recordedProcess,
        piProcesses: read.processes.piProcesses,
        branch: read.branch,
        changes,
        childSessionExists: childSessionExists || unrecorded.session !== undefined,
        problems,
        ...(ownerAlive === undefined ? {} : { ownerAlive }),
        ...(read.lease === undefined ? {} : { lease: read.lease }),
        ...(read.processes.problem === undefined ? {} : { processScanProblem: read.processes.problem }),
        ...(read.childTail === undefined ? {} : { childTail: read.childTail }),
        ...(read.childState === undefined ? {} : { childState: read.childState }),
        ...(landingTarget === undefined ? {} : { landingTarget }),
        ...(unrecorded.location !== undefined || unrecorded.session !== undefined ? { unrecorded } : {}),
        ...(ports === undefined ? {} : { ports }),
      };
    };
    // Read once however often it is asked: each read adds to this handoff's `problems`.
    let completed: Promise<HandoffFacts> | undefined;
    return { complete: () => (completed ??= finish()) };
  }

  /** Each reserved port's bind test, one after the other (a port is bound only while it is tested), and its listeners when in use. */
  private async ports(manifest: Manifest): Promise<PortFact[] | undefined> {
    if (manifest.ports === undefined) return undefined;
    const probe = this.deps.portProbe ?? loopbackProbe;
    const listenersOf = this.deps.portListeners ?? ((port: number) => portListeners(port));
    const facts: PortFact[] = [];
    for (const port of manifest.ports) {
      const answer = await probe.check(port);
      if (answer.free || !answer.inUse) {
        facts.push({ port, answer });
        continue;
      }
      const listeners = await listenersOf(port);
      facts.push({
        port,
        answer,
        listeners: listeners.piProcesses,
        ...(listeners.problem === undefined ? {} : { listenersProblem: listeners.problem }),
      });
    }
    return facts;
  }

  /** The facts that do not depend on one another, read at once. */
  private async readings(manifest: Manifest, childSessionExists: boolean): Promise<Readings> {
    const sessionFile = manifest.child.sessionFile;
    const [
      lease,
      worktreeDirectoryExists,
      registration,
      recordedWorkspace,
      processes,
      recordedProcess,
      branch,
      childTail,
      childState,
    ] = await Promise.all([
      sessionFile === undefined
        ? Promise.resolve(undefined)
        : (this.deps.readLease ?? ((file) => readSessionLease(this.deps.agentDir, file)))(sessionFile),
      isDirectory(manifest.worktree.path),
      this.registration(manifest),
      this.workspace(manifest),
      this.processes(),
      manifest.child.pid === undefined
        ? Promise.resolve(undefined)
        : (this.deps.describeProcess ?? describeProcess)(manifest.child.pid),
      this.branch(manifest),
      // The end of the child's session only (a fixed window): what its turn is doing.
      childSessionExists && sessionFile !== undefined ? readSessionTail(sessionFile) : Promise.resolve(undefined),
      // What the child's Pi says it is doing (child/child-state.ts), counted by classify.ts only while it holds the lease.
      sessionFile === undefined
        ? Promise.resolve(undefined)
        : readChildState(this.deps.agentDir, sessionFile).then((read) =>
            read.code === "ok" ? read.record : undefined,
          ),
    ]);
    return {
      lease,
      worktreeDirectoryExists,
      registration,
      recordedWorkspace,
      processes,
      recordedProcess,
      branch,
      childTail,
      childState,
    };
  }

  /** Uncommitted work in the worktree; undefined (and a problem) when git could not say. */
  private async changes(manifest: Manifest, problems: string[]): Promise<Changes | undefined> {
    const batched = (await this.batchedChanges)?.get(manifest.worktree.path);
    if (batched !== undefined) return batched;
    try {
      return await this.deps.git.worktreeStatus(manifest.worktree.path);
    } catch (error) {
      problems.push(`Could not read the uncommitted changes in ${manifest.worktree.path}: ${errorSentence(error)}`);
      return undefined;
    }
  }

  /** Where the target of a landing still marked `intended` is now: the one fact that says whether it happened. */
  private async landingTarget(manifest: Manifest, problems: string[]): Promise<string | undefined> {
    const landing = manifest.landings?.at(-1);
    if (landing?.state !== "intended") return undefined;
    try {
      return await this.deps.git.resolveCommit(manifest.repo.root, `refs/heads/${landing.into}`);
    } catch (error) {
      problems.push(
        `Could not read branch ${landing.into}, the target of an interrupted landing: ${errorSentence(error)}`,
      );
      return undefined;
    }
  }

  /** The window and the child session a killed step made before the manifest named them. */
  private async unrecorded(manifest: Manifest, problems: string[]): Promise<Unrecorded> {
    const found: Unrecorded = {};
    const intent = manifest.intent;
    // Only a handoff stopped in (or failed at) its worktree step can have made a window it did not
    // record: `provisioned` records it. Others are not asked about (a server long gone would only add noise).
    const windowMayBeUnrecorded =
      manifest.state === "provisioning" || (manifest.state === "failed" && manifest.error?.step === "worktree");
    if (intent?.windowLabel !== undefined && windowMayBeUnrecorded && !hasWorkspace(manifest.mux)) {
      const mux = this.deps.muxFor(manifest.mux);
      if (mux.ok && mux.mux.findUnrecordedWindow !== undefined) {
        const window = await mux.mux.findUnrecordedWindow(manifest.mux, {
          label: intent.windowLabel,
          worktreePath: manifest.worktree.path,
        });
        if (window.code === "found") found.location = window.location;
        if (window.code === "unknown")
          problems.push(`Could not look for a window the handoff made but did not record: ${window.message}`);
      }
    }
    const session = await unrecordedChildSession(manifest);
    if (session !== undefined) found.session = session;
    return found;
  }

  private async registration(manifest: Manifest): Promise<WorktreeRegistration> {
    const root = manifest.repo.root;
    const worktrees = await this.worktreeList(root);
    if (worktrees instanceof Error) {
      return { code: "unknown", message: `Could not list the worktrees of ${root}: ${errorSentence(worktrees)}` };
    }
    const entry = worktrees.find((worktree) => worktree.path === manifest.worktree.path);
    if (entry === undefined) return { code: "not_listed" };
    return {
      code: "listed",
      ...(entry.branch === undefined ? {} : { branch: entry.branch }),
      detached: entry.detached,
      prunable: entry.prunable,
    };
  }

  /** The repository's worktrees, asked once per gatherer. */
  private worktreeList(root: string): Promise<WorktreeEntry[] | Error> {
    let listing = this.worktreeLists.get(root);
    if (listing === undefined) {
      listing = this.deps.git.listWorktrees(root).catch(asError);
      this.worktreeLists.set(root, listing);
    }
    return listing;
  }

  /** Where `ref` points now, asked once per repository and ref. */
  private baseCommit(root: string, ref: string): Promise<string | undefined> {
    const key = `${root}\0${ref}`;
    let base = this.baseCommits.get(key);
    if (base === undefined) {
      base = this.deps.git.resolveCommit(root, ref);
      // Awaited (and its failure judged) by `branch`; a warm-up nobody awaits must not go unhandled.
      base.catch(() => undefined);
      this.baseCommits.set(key, base);
    }
    return base;
  }

  /** Whether `root` has any remote, asked once per repository (a port that cannot say: it has). */
  private hasRemote(root: string): Promise<boolean> {
    let has = this.remotes.get(root);
    if (has === undefined) {
      has = this.deps.git.hasRemote?.(root) ?? Promise.resolve(true);
      this.remotes.set(root, has);
    }
    return has;
  }

  /** Every local branch's tip, asked once per repository. */
  private tipsOf(root: string): Promise<Map<string, string>> {
    let tips = this.branchTips.get(root);
    if (tips === undefined) {
      tips = this.deps.git.branchTips(root);
      tips.catch(() => undefined);
      this.branchTips.set(root, tips);
    }
    return tips;
  }

  private async workspace(manifest: Manifest): Promise<WorkspaceFact> {
    const location = manifest.mux;
    if (!hasWorkspace(location)) return { code: "none" };
    const mux = this.deps.muxFor(location, { askOnce: this.askOnce });
    if (!mux.ok) return { code: "unknown", message: mux.message };
    const state = await mux.mux.workspaceState(location, { worktreePath: manifest.worktree.path });
    return state.code === "unknown"
      ? { code: "unknown", message: `Could not see the handoff's window: ${state.message}` }
      : state;
  }

  private processes(): Promise<ProcessScan> {
    this.processScan ??= (this.deps.scanProcesses ?? scanPiProcesses)();
    return this.processScan;
  }

  private async branch(manifest: Manifest): Promise<BranchFact> {
    const { git } = this.deps;
    const root = manifest.repo.root;
    try {
      const [allTips, resolvedBase] = await Promise.all([this.tipsOf(root), this.baseCommit(root, manifest.base.ref)]);
      const tip = allTips.get(manifest.branch);
      if (tip === undefined) return { code: "gone" };
      // With --existing the base ref is the branch itself, so it cannot say what is merged: the
      // commit the handoff started from is the measure instead.
      const targetSha =
        manifest.setup?.existingBranch === true ? manifest.base.sha : (resolvedBase ?? manifest.base.sha);
      const mergeTarget = { ref: manifest.base.ref, sha: targetSha };
      // A branch still at its base has no commits of its own: nothing to count or list.
      if (tip === manifest.base.sha) {
        const none = { total: 0, commits: [] };
        const behind = targetSha === tip ? 0 : (await git.commitsNotIn(root, targetSha, [tip], { limit: 0 })).total;
        return { code: "present", tip, mergeTarget, aheadOfBase: 0, unmerged: none, unpushed: none, behind };
      }
      // Measured against the base itself (the usual case), "ahead" is the unmerged count: one walk.
      // A repository with no remote has nowhere to push: nothing there counts as unpushed.
      const unpushedOf = async (): Promise<{ total: number; commits: CommitSummary[] }> =>
        (await this.hasRemote(root))
          ? git.commitsNotIn(root, tip, [manifest.base.sha], { excludeRemotes: true, limit: LISTED_COMMITS })
          : { total: 0, commits: [] };
      const [ahead, unmerged, unpushed, behind] = await Promise.all([
        targetSha === manifest.base.sha ? undefined : git.commitsNotIn(root, tip, [manifest.base.sha], { limit: 0 }),
        git.commitsNotIn(root, tip, [targetSha], { limit: LISTED_COMMITS }),
        unpushedOf(),
        git.commitsNotIn(root, targetSha, [tip], { limit: 0 }),
      ]);
      const aheadOfBase = (ahead ?? unmerged).total;
      const merged =
        aheadOfBase === 0
          ? undefined
          : await mergedOf(git, manifest, {
              tip,
              target: targetSha,
              unmerged: unmerged.total,
              targetMoved: behind.total > 0,
            });
      return {
        code: "present",
        tip,
        mergeTarget,
        aheadOfBase,
        // Commits whose changes reached the target another way (a rebase, a squash) lose nothing with the branch.
        unmerged: merged === undefined ? commitList(unmerged) : { total: 0, commits: [] },
        unpushed: commitList(unpushed),
        ...(merged === undefined ? {} : { merged }),
        behind: behind.total,
      };
    } catch (error) {
      return {
        code: "unknown",
        message: `Could not read branch ${manifest.branch} in ${root}: ${errorSentence(error)}`,
      };
    }
  }
}

/** A handoff's facts read so far (`FactGatherer.begin`); `complete` reads the rest, once. */
export interface PendingFacts {
  complete(): Promise<HandoffFacts>;
}

interface Readings {
  lease: SessionLease | undefined;
  worktreeDirectoryExists: boolean;
  registration: WorktreeRegistration;
  /** The recorded window's state (an unrecorded window found later overrides it). */
  recordedWorkspace: WorkspaceFact;
  processes: ProcessScan;
  recordedProcess: DescribedProcess | undefined;
  branch: BranchFact;
  childTail: SessionTail | undefined;
  childState: ChildStateFile | undefined;
}

/** A removed handoff is a record; nothing of it is looked at again. */
function removedFacts(
  manifest: Manifest,
  now: Date,
  childSessionExists: boolean,
  worktreeDirectoryExists: boolean,
): HandoffFacts {
  const notChecked = "not checked: the handoff was removed";
  return {
    manifest,
    now,
    worktreeDirectoryExists,
    registration: { code: "unknown", message: notChecked },
    workspace: { code: "unknown", message: notChecked },
    recordedProcess: undefined,
    piProcesses: [],
    branch: { code: "unknown", message: notChecked },
    changes: undefined,
    childSessionExists,
    problems: [],
  };
}

/**
 * The child session a killed fork step wrote but `manifest` does not name, found through its intent
 * (the handoff tree reads it the same way). A removed handoff's is not looked for.
 */
export async function unrecordedChildSession(
  manifest: Manifest,
): Promise<{ sessionFile: string; sessionId: string } | undefined> {
  const dir = manifest.intent?.sessionDir;
  if (manifest.state === "removed" || dir === undefined || manifest.child.sessionFile !== undefined) return undefined;
  return findForkedSession({
    dir,
    worktreePath: manifest.worktree.path,
    parentSessionFile: manifest.parent.sessionFile,
    since: manifest.createdAt,
  });
}

/** Whether the handoff ever got a window/workspace (recorded ids). */
export function hasWorkspace(location: MuxLocation): boolean {
  return hasWindow(location);
}

function commitList(list: { total: number; commits: CommitSummary[] }): CommitList {
  return { total: list.total, commits: list.commits.map((commit) => ({ sha: commit.sha, subject: commit.subject })) };
}
