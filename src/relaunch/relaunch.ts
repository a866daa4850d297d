/**
 * Relaunch: start a handoff's child Pi again on its session, in its worktree, after it stopped.
 *
 * Invariants:
 * - Never starts a second Pi on a session that has a live writer: the session's lease is consulted
 *   first, then the process probes as a second opinion; any live holder or `pi` on the session or
 *   in the worktree refuses the relaunch by pid, and a writer that could not be checked (lease or
 *   process table unreadable) refuses it with the reason.
 * - The command is rebuilt for the current environment from the manifest's recorded launch
 *   settings and the Pi found here (`piCommand`), never replayed from `child.command`, which may
 *   name a Pi or a Node that no longer exists. Without recorded settings it refuses, not guesses.
 * - A closed window/workspace is reopened first (`reopenWorkspace`); then the handoff's own launch
 *   path (`ChildLauncher`: wait for the shell, record `launching`, type, confirm, focus) runs, so
 *   the manifest goes `launching` -> `running` or `launch_unconfirmed` exactly as in a handoff.
 * - Every refusal changes nothing and is one sentence, worded in words.ts from its code.
 * - One actor: the whole relaunch (its checks and its launch) runs under the handoff's action lock
 *   (`ManifestStore.withActionLock`); a second relaunch, a removal or the handoff itself is
 *   refused at once (`busy`), naming what holds it, so no second line is ever typed.
 */
import { stripPeriod } from "../text.ts";
import { readHandoffEnv } from "../config/env.ts";
import {
  ChildLauncher,
  prepareWindowLauncher,
  type LaunchOutcome,
  type LaunchTimeouts,
  type WindowLauncher,
} from "../child/launcher.ts";
import { launchCommandFor, type LaunchCommand, type LaunchEnvironment } from "../child/launch-command.ts";
import { recoveryCommand } from "../child/pi-command.ts";
import { LAUNCH_TIMEOUT_ENV } from "../child/timeouts.ts";
import { describeLocation } from "../mux/registry.ts";
import type { RecoverableMultiplexer } from "../mux/types.ts";
import type { HandoffStep, Manifest } from "../manifest/schema.ts";
import { isActionBusy, type ManifestStore } from "../manifest/store.ts";
import { readSessionLease } from "../child/lease.ts";
import { ownerOf } from "../manifest/owner.ts";
import { isInProgress } from "../inventory/classify.ts";
import type { GatherDeps } from "../inventory/gather.ts";
import { inspectHandoff } from "../inventory/inventory.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";
import { errorMessage } from "../errors.ts";
import { relaunchedSentence, relaunchRefusalSentence, type RelaunchRefusalFacts } from "./words.ts";

export interface RelaunchDeps extends GatherDeps {
  store: ManifestStore;
  /** The agent dir the child uses (the one holding the manifests). */
  agentDir: string;
  /** This process's environment: Pi's forwarded settings come from here. */
  env: NodeJS.ProcessEnv;
  /** How to start Pi here; undefined when no Pi was found. */
  piCommand: readonly string[] | undefined;
  sleep(ms: number): Promise<void>;
  progress(step: HandoffStep, text: string): void;
  /** A wait as it runs, for a status line (`/handoffs`); the CLI prints stages only. */
  tick?(step: HandoffStep, text: string): void;
  timeouts: LaunchTimeouts;
}

export type RelaunchRefusal =
  | "not_found"
  | "invalid"
  | "removed"
  | "child_running"
  | "writer_unknown"
  | "in_progress"
  | "worktree_not_present"
  | "no_child_session"
  | "no_launch_settings"
  | "no_pi"
  | "no_multiplexer"
  | "workspace_unknown"
  | "bad_command"
  | "environment"
  /** Another command acts on the handoff right now (the action lock). */
  | "busy";

export type RelaunchOutcome =
  | { code: "refused"; reason: RelaunchRefusal; message: string }
  | { code: "running"; manifest: Manifest; message: string }
  | { code: "launch_unconfirmed"; manifest: Manifest; message: string }
  | {
      code: "failed";
      reason: "reopen_failed" | "launcher_not_written" | "shell_not_ready" | "type_failed";
      manifest: Manifest;
      message: string;
    };

export async function relaunchHandoff(
  deps: RelaunchDeps,
  id: string,
  options: { focus: boolean },
): Promise<RelaunchOutcome> {
  // The launch waits come from PI_HANDOFF_*_TIMEOUT_MS: an unusable one is named, not ignored.
  const environment = readHandoffEnv(deps.env, Object.values(LAUNCH_TIMEOUT_ENV));
  if (!environment.ok) return { code: "refused", reason: "environment", message: environment.message };
  const read = await deps.store.read(id);
  // An unknown or unreadable id is reported as such, not as a lock problem.
  if (!read.ok)
    return {
      code: "refused",
      reason: read.code,
      message: read.code === "not_found" ? `There is no handoff with id ${id} in ${deps.store.dir}.` : read.message,
    };
  const outcome = await deps.store.withActionLock(id, "relaunch", () => relaunchLocked(deps, id, options));
  return isActionBusy(outcome) ? { code: "refused", reason: "busy", message: outcome.message } : outcome;
}

/** Why the handoff as the inventory sees it may not be relaunched now; undefined: it may. */
function relaunchRefusal(report: HandoffReport, manifest: Manifest, id: string): RelaunchOutcome | undefined {
  if (report.status.code === "removed") return refusedFor({ code: "removed", id });
  if (report.status.code === "child_running")
    return refusedFor({ code: "child_running", id, pids: report.status.writers.map((writer) => writer.pid) });
  if (report.writerUnknown !== undefined) return refusedFor({ code: "writer_unknown", id, why: report.writerUnknown });
  if (isInProgress(report))
    return refusedFor({ code: "in_progress", id, state: report.state, updatedAt: report.updatedAt });
  const childSessionFile = manifest.child.sessionFile;
  if (childSessionFile === undefined || !report.childSessionExists)
    return refusedFor({ code: "no_child_session", id, state: report.state, sessionFile: childSessionFile });
  if (report.worktree.code !== "present")
    return refusedFor({
      code: "worktree_not_present",
      id,
      path: manifest.worktree.path,
      worktree: report.worktree,
    });
  return undefined;
}

async function relaunchLocked(deps: RelaunchDeps, id: string, options: { focus: boolean }): Promise<RelaunchOutcome> {
  const inspected = await inspectHandoff(deps, id);
  if (inspected.code !== "found") return refused(inspected.code, inspected.message);
  const { report, manifest } = inspected;
  const refusal = relaunchRefusal(report, manifest, id);
  if (refusal !== undefined) return refusal;
  const childSessionFile = manifest.child.sessionFile ?? "";
  const environment: LaunchEnvironment = { piCommand: deps.piCommand ?? [], agentDir: deps.agentDir, env: deps.env };
  const derived = launchCommandFor(manifest, environment);
  if (!derived.ok) return refused(derived.code, derived.message);
  const muxFound = deps.muxFor(manifest.mux);
  if (!muxFound.ok) return refused("no_multiplexer", muxFound.message);
  // A window that cannot be seen may still be there: opening another would start a second Pi
  // beside a live one, so nothing is started until the backend answers.
  if (report.workspace.code === "unknown") {
    return refusedFor({
      code: "workspace_unknown",
      id,
      why: report.workspace.message,
      muxKind: manifest.mux.kind,
    });
  }
  const window = await windowFor(deps, id, report, manifest, muxFound.mux, environment);
  if (window.code === "failed") return window;
  const raced = await writerSinceInventory(deps, id, childSessionFile, window);
  if (raced !== undefined) return raced;
  const launched = await launchIn(deps, muxFound.mux, window, derived.command, options.focus);
  return relaunchOutcome(deps, id, childSessionFile, window.manifest, launched);
}

function refused(reason: RelaunchRefusal, message: string): RelaunchOutcome {
  return { code: "refused", reason, message };
}

/** A refusal worded in words.ts (`raced` is a live writer or an unreadable lease, by `reason`). */
function refusedFor(facts: RelaunchRefusalFacts, reason?: RelaunchRefusal): RelaunchOutcome {
  const code = facts.code === "raced" ? (reason ?? "writer_unknown") : facts.code;
  return refused(code, relaunchRefusalSentence(facts));
}

/** The window the child is launched in, recorded in the manifest (`manifest` is then the current one). */
type RelaunchWindow = { code: "ready"; manifest: Manifest; reopened: boolean; windowCommand: boolean };

/** Records a window a killed step left unrecorded, or reopens a closed one; an open one is used as it is. */
async function windowFor(
  deps: RelaunchDeps,
  id: string,
  report: HandoffReport,
  manifest: Manifest,
  mux: RecoverableMultiplexer,
  environment: LaunchEnvironment,
): Promise<RelaunchWindow | Extract<RelaunchOutcome, { code: "failed" }>> {
  let current = manifest;
  if (report.unrecorded?.includes("window") === true) {
    // A window a killed step made but never recorded: record it, then launch in it.
    current = await deps.store.update(id, (m) => {
      m.mux = report.mux;
    });
  }
  if (report.workspace.code === "open")
    return { code: "ready", manifest: current, reopened: false, windowCommand: false };
  deps.progress("worktree", "Opening a new window for the worktree");
  // Where the backend can, the new window runs the launcher itself: nothing is typed there.
  let window: WindowLauncher;
  try {
    window = await prepareWindowLauncher(deps.store, manifest, deps.timeouts, environment, recoveryCommand(deps.env));
  } catch (error) {
    return {
      code: "failed",
      reason: "launcher_not_written",
      manifest,
      message: `Could not write the launcher for handoff ${id}: ${errorMessage(error)}.`,
    };
  }
  const opened = await mux.reopenWorkspace({
    mainCheckout: manifest.repo.root,
    worktreePath: manifest.worktree.path,
    branch: manifest.branch,
    label: manifest.branch,
    previous: manifest.mux,
    command: window.command,
  });
  if (!opened.ok) {
    return {
      code: "failed",
      reason: "reopen_failed",
      manifest,
      message: `Could not reopen a window for handoff ${id}: ${opened.message}`,
    };
  }
  current = await deps.store.update(id, (m) => {
    m.mux = opened.location;
  });
  return { code: "ready", manifest: current, reopened: true, windowCommand: opened.commandStarted === true };
}

/**
 * Re-checked right before typing: a Pi started on the session since the inventory (by hand, or by
 * Herdr's restore while a window was reopened) holds its lease by now. Undefined: none did.
 */
async function writerSinceInventory(
  deps: RelaunchDeps,
  id: string,
  childSessionFile: string,
  window: RelaunchWindow,
): Promise<RelaunchOutcome | undefined> {
  const leaseNow = await (deps.readLease ?? ((file: string) => readSessionLease(deps.agentDir, file)))(
    childSessionFile,
  );
  if (leaseNow.state !== "live" && leaseNow.state !== "unreadable") return undefined;
  const why =
    leaseNow.state === "live"
      ? `a Pi (pid ${leaseNow.pid}) started on its session meanwhile`
      : stripPeriod(leaseNow.message);
  return refusedFor(
    { code: "raced", id, why, reopenedIn: window.reopened ? window.manifest.mux : undefined },
    leaseNow.state === "live" ? "child_running" : "writer_unknown",
  );
}

/** Runs the handoff's own launch path in the window, as this process (the new owner). */
async function launchIn(
  deps: RelaunchDeps,
  mux: RecoverableMultiplexer,
  window: RelaunchWindow,
  command: LaunchCommand,
  focus: boolean,
): Promise<LaunchOutcome> {
  // This process now runs the handoff's launch: recovery elsewhere waits for it while it lives.
  const owner = await ownerOf();
  const launcher = new ChildLauncher({
    store: deps.store,
    now: () => deps.now(),
    sleep: (ms) => deps.sleep(ms),
    progress: (step, text) => deps.progress(step, text),
    ...(deps.tick !== undefined ? { tick: deps.tick } : {}),
    timeouts: deps.timeouts,
  });
  return launcher.launch({
    mux,
    manifest: window.manifest,
    command,
    windowCommand: window.windowCommand,
    focus,
    recoveryCommand: recoveryCommand(deps.env),
    note: window.reopened ? `relaunched in a reopened window (${describeLocation(window.manifest.mux)})` : "relaunched",
    patch: (m) => {
      m.owner = owner;
      // The previous child's evidence and outcome describe a launch that is over.
      delete m.child.pid;
      delete m.child.ackAt;
      delete m.child.confirmedBy;
      delete m.error;
      delete m.focus;
    },
  });
}

/** What the user is told once the launch ran; a launch that could not type is recorded as failed. */
async function relaunchOutcome(
  deps: RelaunchDeps,
  id: string,
  childSessionFile: string,
  current: Manifest,
  launched: LaunchOutcome,
): Promise<RelaunchOutcome> {
  switch (launched.code) {
    case "running":
      return {
        code: "running",
        manifest: launched.manifest,
        message: relaunchedSentence(id, launched.manifest, childSessionFile),
      };
    case "launch_unconfirmed":
      return {
        code: "launch_unconfirmed",
        manifest: launched.manifest,
        message: `${launched.message} Look at ${describeLocation(launched.manifest.mux)}; to start it by hand, run there: ${launched.manifest.child.command ?? "?"}`,
      };
    case "shell_not_ready":
    case "launcher_not_written":
      return {
        code: "failed",
        reason: launched.code,
        manifest: current,
        message: `${launched.message} Nothing was typed; handoff ${id} is unchanged.`,
      };
    case "type_failed": {
      const failed = await deps.store.transition(
        id,
        "failed",
        (m) => {
          m.error = { step: "launch", message: launched.message, at: deps.now().toISOString() };
        },
        "relaunch failed at launch",
      );
      return {
        code: "failed",
        reason: "type_failed",
        manifest: failed,
        message: `Could not type the command into ${describeLocation(current.mux)}: ${launched.message}`,
      };
    }
    case "post_create_failed":
      // A relaunch starts Pi alone: postCreate commands run once, after the worktree was created.
      throw new Error("A relaunch runs no postCreate commands, so none can have failed.");
  }
}
