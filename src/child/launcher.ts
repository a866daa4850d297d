/**
 * Starting a handoff's child Pi in its pane, confirming that it started, then focusing it: steps
 * 4-6 of the handoff, shared by the transaction and by recovery's relaunch so both follow one path.
 * What is started lives in the launcher file (launcher-file.ts); this module gets it going and
 * watches it.
 *
 * Invariants:
 * - The manifest says `launching` (with the line that starts the launcher by hand, `child.command`)
 *   before the launcher is let go or anything is typed; its params exist before that, so the line
 *   works by hand from then on.
 * - A window that runs the launcher as its command gets a go-ahead, nothing typed. Otherwise the
 *   line is typed once the pane's shell looks ready (a hint only: Herdr's `shell_pid` proves
 *   nothing while rc files run), and the launcher must announce its start within `startMs`; the
 *   line is typed again until it does, at most `attempts` times in all. No start: `launch_unconfirmed`
 *   at once, with exactly what was typed and seen, instead of waiting for the confirm timeout.
 * - A launch is confirmed only by the child's acknowledgement in the manifest or, failing that, by a
 *   process in the pane named `pi` whose cwd is the worktree and whose environment carries this
 *   handoff's marker. A launcher whose Pi is already gone ends the wait at once.
 * - An acknowledgement that lands while the launch is being called unconfirmed wins: the outcome
 *   is `running`; a handoff settled by someone else meanwhile is reported as it is.
 * - Focus happens only after confirmation; a focus failure is recorded, never a launch failure.
 * - Only a confirmed child's session is reported to the multiplexer (`reportChildSession`, for
 *   Herdr's own restore); its outcome changes nothing.
 * - With postCreate commands, their recorded exit status decides first: a failure is returned
 *   (Pi was not started), success starts the confirm deadline; a status file that never comes
 *   ends as `launch_unconfirmed`, like a child that never acknowledges.
 * - Every wait polls with back-off (mux/backoff.ts) and shows itself in the status line as it
 *   runs: what it waits for, the time spent and its limit.
 * - Expected failures are values; only an injected test fault (`InjectedFault`, from the deps'
 *   fault plan) throws through here.
 */
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { directoryWakeups } from "../fs/watch.ts";
import type { HandoffStep, Manifest } from "../manifest/schema.ts";
import type { ManifestStore } from "../manifest/store.ts";
import { backoff, whileWaiting } from "../mux/backoff.ts";
import type { Multiplexer, MuxResult } from "../mux/types.ts";
import type { DescribedProcess } from "../process/facts.ts";
import { describePaneProcess } from "../process/pane-process.ts";
import { processFacts } from "../process/facts.ts";
import { stillHeld } from "../locks/liveness.ts";
import { pidFileLiveness } from "../locks/pid-file.ts";
import type { LaunchCommand, LaunchEnvironment } from "./launch-command.ts";
import { warmStartFor } from "./warm-start.ts";
import {
  cancelLauncher,
  dropLauncherLock,
  launcherFiles,
  newLaunchToken,
  readLauncherLock,
  readLauncherNote,
  releaseWindowLauncher,
  typedLauncherLine,
  writeLauncher,
  writeLauncherParams,
  type LauncherFiles,
} from "./launcher-file.ts";
import { readPostCreateStatus } from "./post-create.ts";
import { errorClause } from "../errors.ts";
import { withDefaults, type LaunchTimeouts } from "./timeouts.ts";
import { checkpoint, failsAt, injectFault, NO_FAULTS, type FaultPlan } from "../faults.ts";
import { counted, formatWait, type NoticeLevel } from "../text.ts";

export type { LaunchTimeouts } from "./timeouts.ts";

export interface ChildLauncherDeps {
  store: ManifestStore;
  now(): Date;
  sleep(ms: number): Promise<void>;
  /** Each stage of the launch as it begins. */
  progress(step: HandoffStep, text: string): void;
  /** A wait as it runs (what, the time spent and its limit), for a status line; absent: not shown. */
  tick?(step: HandoffStep, text: string): void;
  timeouts: LaunchTimeouts;
  /** Where tests make the launch fail or the process die (src/faults.ts); none by default. */
  faults?: FaultPlan;
}

export interface LaunchRequest {
  mux: Multiplexer;
  /** The manifest as it is now; its `mux` location is the pane the launcher runs in. */
  manifest: Manifest;
  /** What to start (`launchCommandFor`); rendered into the launcher's params. */
  command: LaunchCommand;
  /** Bring the child's window to the front once it is confirmed. */
  focus: boolean;
  /** How the user runs `pi-handoff` (src/child/pi-command.ts), named in the launcher's messages. */
  recoveryCommand: string;
  /**
   * The pane was created with the launcher as its command (`prepareWindowLauncher`): nothing is
   * typed unless that launcher does not start.
   */
  windowCommand?: boolean;
  /** A readiness wait the caller started earlier (so it overlaps other work); else one starts now. */
  shellReady?: Promise<MuxResult<object>>;
  /** More changes recorded with the `launching` state (launch settings, clearing an old child's pid). */
  patch?: (manifest: Manifest) => void;
  /** A note for the `launching` history entry. */
  note?: string;
  /**
   * postCreate commands run by the launcher before Pi (post-create.ts): wait for their status file
   * (at most the launch's `postCreateMs`) first, then confirm as usual (the confirm deadline starts
   * once they succeeded).
   */
  postCreate?: { prelude: readonly string[]; statusFile: string; commands: readonly string[] };
}

/**
 * How a launch's final outcome (a handoff's or a relaunch's) is told: a child that runs is news,
 * one that did not confirm is a warning (it may still start: the notice says how to check), and
 * anything else an error.
 */
export function launchNoticeLevel(code: "running" | "launch_unconfirmed" | "refused" | "failed"): NoticeLevel {
  if (code === "running") return "info";
  return code === "launch_unconfirmed" ? "warning" : "error";
}

export type LaunchOutcome =
  /** Confirmed (and focused, or the focus failure recorded in `manifest.focus`). */
  | { code: "running"; manifest: Manifest }
  /** No launcher started, or no evidence of a child before the deadline; the manifest says `launch_unconfirmed`. */
  | { code: "launch_unconfirmed"; manifest: Manifest; message: string }
  /** The shell never got ready: nothing was typed and the manifest was not changed. */
  | { code: "shell_not_ready"; message: string }
  /** The launcher or its params could not be written: nothing was typed and the manifest was not changed. */
  | { code: "launcher_not_written"; message: string }
  /** The manifest says `launching` but the line could not be typed (or a window's launcher not signalled); the caller records the failure. */
  | { code: "type_failed"; manifest: Manifest; message: string }
  /** A postCreate command failed, so Pi was not started; the caller records the failure. */
  | { code: "post_create_failed"; manifest: Manifest; message: string; exitStatus: number; command: number };

/** What a window created with the launcher as its command runs (the backend appends the user's shell). */
export interface WindowLauncher {
  files: LauncherFiles;
  command: string[];
}

/**
 * Writes the launcher before its window exists, so the window can run it as its command; it then
 * waits for its params (the launch step) while this process lives, at most `paramsWaitMs`. Given
 * how Pi is started here, it warms the child's Pi up meanwhile where it can (warm-start.ts).
 * `recoveryCommand` is how the user runs `pi-handoff`, named in what the launcher says.
 */
export async function prepareWindowLauncher(
  store: ManifestStore,
  manifest: Manifest,
  timeouts: LaunchTimeouts,
  environment: LaunchEnvironment,
  recoveryCommand: string,
): Promise<WindowLauncher> {
  const files = launcherFiles(store.pathFor(manifest.id));
  const warm = warmStartFor(manifest, environment);
  await writeLauncher({
    handoffId: manifest.id,
    files,
    ownerPid: process.pid,
    paramsWaitMs: withDefaults(timeouts).paramsWaitMs,
    recoveryCommand,
    ...(warm !== undefined ? { warm } : {}),
  });
  // The go-ahead of an earlier launch would start the new window at once, with old settings: the
  // window must wait for this launch's own.
  await Promise.all([files.window, files.warmGo, files.warmed].map((file) => rm(file, { force: true })));
  return { files, command: ["/bin/sh", files.script, "window"] };
}

/**
 * After a failure: a window whose launcher still waits for its launch step is told that none
 * comes (it then leaves the user's shell in the pane). A launch that already went ahead is left
 * alone; a write that fails only leaves the launcher to its own bounded wait.
 */
export async function cancelWindowLauncher(store: ManifestStore, manifest: Manifest, message: string): Promise<void> {
  if (manifest.launch?.windowCommand !== true) return;
  const files = launcherFiles(store.pathFor(manifest.id));
  if (existsSync(files.window)) return;
  await cancelLauncher(files, message).catch(() => undefined);
}

/** What the launcher was seen doing after this launch's params were written. */
type StartSeen = { code: "started"; pid: number } | { code: "refused"; pid: number } | { code: "none" };

export class ChildLauncher {
  private readonly deps: ChildLauncherDeps;
  private readonly timeouts: Required<LaunchTimeouts>;
  private readonly faults: FaultPlan;

  constructor(deps: ChildLauncherDeps) {
    this.deps = deps;
    this.timeouts = withDefaults(deps.timeouts);
    this.faults = deps.faults ?? NO_FAULTS;
  }

  /** Steps 4 to 6: start, confirm, focus. */
  async launch(request: LaunchRequest): Promise<LaunchOutcome> {
    const { mux, manifest } = request;
    const files = launcherFiles(this.deps.store.pathFor(manifest.id));
    const windowCommand = request.windowCommand === true;
    if (!windowCommand) {
      const ready = await this.shellReady(request);
      if (!ready.ok) return { code: "shell_not_ready", message: ready.message };
    }
    const prepared = await this.prepare(request, files, windowCommand);
    if (!prepared.ok) return { code: "launcher_not_written", message: prepared.message };
    const { line, token } = prepared;
    const launching = await this.deps.store.transition(
      manifest.id,
      "launching",
      (m) => {
        request.patch?.(m);
        m.child = { ...m.child, command: line };
        m.launch = { launcherFile: files.script, ...(windowCommand ? { windowCommand: true } : {}), typed: 0 };
      },
      request.note,
    );
    injectFault(this.faults, "launch");
    checkpoint(this.faults, "launching");
    const started = await this.start(mux, launching, files, token, line, windowCommand);
    if (started.code === "type_failed") return started;
    if (started.code === "not_started") return this.unconfirmed(started.manifest, "launch", started.message);
    const current = started.manifest;
    checkpoint(this.faults, "launch");

    if (request.postCreate !== undefined) {
      this.deps.progress(
        "launch",
        `Running ${counted(request.postCreate.commands.length, "postCreate command")} in the new pane`,
      );
      const hooks = await this.waitForPostCreate(request.postCreate, current);
      if (hooks.code === "failed") return { ...hooks, code: "post_create_failed", manifest: current };
      if (hooks.code === "timeout") return this.unconfirmed(current, "confirm", hooks.message);
    }

    const confirmed = await this.confirm(mux, current, files);
    if (!confirmed.ok) {
      // Changed by someone else meanwhile (removed, failed): reported, not overwritten.
      if (confirmed.manifest !== undefined)
        return { code: "launch_unconfirmed", manifest: confirmed.manifest, message: confirmed.message };
      return this.unconfirmed(current, "confirm", confirmed.message);
    }
    checkpoint(this.faults, "confirm");
    return this.settleConfirmed(mux, confirmed.manifest, request.focus);
  }

  /** The new pane's shell, awaited where the caller started the wait (or from now), with progress. */
  private async shellReady(request: LaunchRequest): Promise<MuxResult<object>> {
    this.deps.progress("launch", "Waiting for the new pane's shell");
    return this.waitWithProgress(
      request.shellReady ?? request.mux.waitForShell(request.manifest.mux, { timeoutMs: this.timeouts.shellMs }),
      "Waiting for the new pane's shell",
      this.timeouts.shellMs,
    );
  }

  /** The launcher (unless its window already runs it), the line that starts it, and this launch's params. */
  private async prepare(
    request: LaunchRequest,
    files: LauncherFiles,
    windowCommand: boolean,
  ): Promise<{ ok: true; line: string; token: string } | { ok: false; message: string }> {
    const { manifest } = request;
    let line: string;
    try {
      if (!windowCommand) {
        await writeLauncher({
          handoffId: manifest.id,
          files,
          ownerPid: process.pid,
          paramsWaitMs: this.timeouts.paramsWaitMs,
          recoveryCommand: request.recoveryCommand,
        });
      }
      line = await typedLauncherLine(files, manifest.id);
      await this.dropForeignLock(files, manifest);
    } catch (error) {
      return { ok: false, message: `Could not write the launcher ${files.script}: ${errorClause(error)}.` };
    }
    // The params first: the line recorded as `child.command` must work by hand from now on, even
    // if this launch stops right here (a window's launcher waits for its go-ahead regardless).
    const token = newLaunchToken();
    try {
      await writeLauncherParams(files, {
        token,
        command: request.command,
        ...(request.postCreate !== undefined ? { prelude: request.postCreate.prelude } : {}),
        ...(failsAt(this.faults, "confirm") ? { startNothing: true } : {}),
        ...(windowCommand ? { warm: true } : {}),
      });
    } catch (error) {
      return { ok: false, message: `Could not write the launch parameters ${files.params}: ${errorClause(error)}.` };
    }
    return { ok: true, line, token };
  }

  /** A confirmed child: its session reported to the multiplexer, and its window focused when asked. */
  private async settleConfirmed(mux: Multiplexer, current: Manifest, focus: boolean): Promise<LaunchOutcome> {
    // Only a confirmed child is reported, so the multiplexer's own restore (Herdr resumes the
    // reported session after a restart) never resumes a session nobody runs. Best effort: the
    // handoff does not depend on it, and it runs beside the focus so the user waits no longer.
    const sessionFile = current.child.sessionFile;
    const reported =
      mux.reportChildSession !== undefined && sessionFile !== undefined
        ? mux.reportChildSession(current.mux, sessionFile)
        : undefined;
    if (!focus) {
      await reported;
      return { code: "running", manifest: current };
    }
    this.deps.progress("focus", "Switching to the new window");
    const focused = await this.focus(mux, current);
    await reported;
    checkpoint(this.faults, "focus");
    return { code: "running", manifest: focused };
  }

  /**
   * The launcher must announce its start within `startMs` of each typing (or of the params, for a
   * window that runs it already); a line lost to a shell still starting up is typed again, at most
   * `attempts` times in all. Exactly what was typed and seen is recorded and reported.
   */
  private async start(
    mux: Multiplexer,
    manifest: Manifest,
    files: LauncherFiles,
    token: string,
    line: string,
    windowCommand: boolean,
  ): Promise<
    | { code: "started"; manifest: Manifest }
    | { code: "not_started"; manifest: Manifest; message: string }
    | { code: "type_failed"; manifest: Manifest; message: string }
  > {
    const { attempts, startMs } = this.timeouts;
    let seen: StartSeen = { code: "none" };
    let typed = 0;
    let current = manifest;
    if (windowCommand) {
      this.deps.progress("launch", "Starting Pi in the new window");
      try {
        await releaseWindowLauncher(files, token);
      } catch (error) {
        return {
          code: "type_failed",
          manifest: current,
          message: `Could not signal the window's launcher through ${files.window}: ${errorClause(error)}.`,
        };
      }
      seen = await this.waitForStart(files, token, "Waiting for the window's launcher to start");
    }
    while (seen.code === "none" && typed < attempts) {
      this.deps.progress(
        "launch",
        typed === 0
          ? "Starting Pi in the new pane"
          : `No launcher started; typing the launch line again (${typed + 1} of ${attempts})`,
      );
      const result = await mux.run(current.mux, line);
      if (!result.ok) return { code: "type_failed", manifest: current, message: result.message };
      typed += 1;
      const count = typed;
      current = await this.deps.store.update(current.id, (m) => {
        if (m.launch !== undefined) m.launch.typed = count;
      });
      seen = await this.waitForStart(files, token, `Waiting for the launcher to start (typed ${typed} of ${attempts})`);
    }
    if (seen.code === "none") {
      const where = windowCommand ? "the window's own launcher did not start, and " : "";
      return {
        code: "not_started",
        manifest: current,
        message: `No launcher started in the new pane: ${where}the launch line (${line}) was typed ${typed === 1 ? "once" : `${typed} times`}, ${formatWait(startMs)} apart, and no start was announced in ${files.started}; the shell there may still be starting or may have lost the input.`,
      };
    }
    const at = this.isoNow();
    const pid = seen.pid;
    current = await this.deps.store.update(current.id, (m) => {
      if (m.launch !== undefined) m.launch = { ...m.launch, startedAt: at, startedPid: pid };
    });
    return { code: "started", manifest: current };
  }

  /** Polls (backing off) for this launch's start or refusal note, up to `startMs`. */
  private async waitForStart(files: LauncherFiles, token: string, label: string): Promise<StartSeen> {
    const limit = this.timeouts.startMs;
    const seen = await this.poll(label, limit, async () => {
      const started = await readLauncherNote(files.started, token);
      if (started !== undefined) return { code: "started" as const, pid: started.pid };
      const refused = await readLauncherNote(files.refused, token);
      return refused !== undefined ? { code: "refused" as const, pid: refused.pid } : undefined;
    });
    return seen ?? { code: "none" };
  }

  /**
   * A lock left by a launcher or Pi that is gone, or whose pid now belongs to a process outside the
   * worktree (a reused pid), would make the new launcher refuse: it is dropped. A live holder in the
   * worktree is left alone (the launcher then refuses and says so).
   */
  private async dropForeignLock(files: LauncherFiles, manifest: Manifest): Promise<void> {
    const holder = await readLauncherLock(files);
    if (holder === undefined) return;
    const described = await describePaneProcess(holder);
    if (described !== undefined && described.cwd === manifest.worktree.path) return;
    await dropLauncherLock(files, holder);
  }

  /**
   * The postCreate commands' outcome from their status file. An acknowledgement also ends the wait
   * (the child can only start after the commands succeeded, so a lost status file does not matter).
   */
  private async waitForPostCreate(
    hooks: NonNullable<LaunchRequest["postCreate"]>,
    manifest: Manifest,
  ): Promise<
    | { code: "passed" }
    | { code: "failed"; message: string; exitStatus: number; command: number }
    | { code: "timeout"; message: string }
  > {
    const outcome = await this.poll(
      `Running ${counted(hooks.commands.length, "postCreate command")} in the new pane`,
      this.timeouts.postCreateMs,
      async () => {
        const status = await readPostCreateStatus(hooks.statusFile);
        if (status !== undefined) return status;
        const current = await this.deps.store.read(manifest.id);
        return current.ok && current.manifest.state === "running" && current.manifest.child.ackAt !== undefined
          ? { exitStatus: 0, command: 0 }
          : undefined;
      },
    );
    if (outcome === undefined) {
      return {
        code: "timeout",
        message: `The postCreate commands had not finished after ${formatWait(this.timeouts.postCreateMs)}; they may still be running in the new pane, and Pi starts there when they succeed.`,
      };
    }
    if (outcome.exitStatus === 0) return { code: "passed" };
    const total = hooks.commands.length;
    const command = hooks.commands[outcome.command - 1];
    const which =
      command !== undefined ? `command ${outcome.command} of ${total} (${JSON.stringify(command)})` : "command";
    return {
      code: "failed",
      exitStatus: outcome.exitStatus,
      command: outcome.command,
      message: `The postCreate ${which} failed with exit status ${outcome.exitStatus} in the new pane, so Pi was not started.`,
    };
  }

  /**
   * Step 5: the child's acknowledgement, or failing that a process probe. A launcher whose Pi is
   * already gone (its lock released, or its pid dead) ends the wait at once: nothing will confirm.
   */
  private async confirm(
    mux: Multiplexer,
    manifest: Manifest,
    files: LauncherFiles,
  ): Promise<{ ok: true; manifest: Manifest } | { ok: false; message: string; manifest?: Manifest }> {
    this.deps.progress("confirm", "Waiting for the new Pi to start");
    const limit = this.timeouts.confirmMs;
    const seen = await this.poll("Waiting for the new Pi to confirm", limit, async () => {
      const current = await this.deps.store.read(manifest.id);
      if (current.ok && current.manifest.state === "running" && current.manifest.child.ackAt !== undefined) {
        return { code: "acknowledged" as const, manifest: current.manifest };
      }
      const holder = await readLauncherLock(files);
      return holder === undefined || !stillHeld(await pidFileLiveness(holder, processFacts()))
        ? { code: "exited" as const }
        : undefined;
    });
    if (seen?.code === "acknowledged") return { ok: true, manifest: seen.manifest };
    const probed = await mux.probe(manifest.mux);
    const child = probed.ok ? findChildProcess(probed.processes, manifest) : undefined;
    if (child === undefined) {
      return {
        ok: false,
        message:
          seen?.code === "exited"
            ? "The launcher started, but its Pi exited (or never started) before confirming; the new pane shows why."
            : `The new Pi did not confirm its start within ${formatWait(limit)} and no Pi process was found in the new pane.`,
      };
    }
    // The acknowledgement may have landed between the last poll and the probe; it wins. Only a
    // launch still in progress is confirmed: a handoff removed or failed meanwhile stays so.
    const running = await this.deps.store.transitionIfStill(
      manifest.id,
      "launching",
      "running",
      (m) => {
        m.child = { ...m.child, pid: child.pid, confirmedBy: "probe" };
      },
      "confirmed by process probe",
    );
    if (running.state !== "running") {
      return {
        ok: false,
        message: `A Pi was found in the new pane, but handoff ${running.id} is ${running.state} now, so it was left as it is.`,
        manifest: running,
      };
    }
    return { ok: true, manifest: running };
  }

  /**
   * Polls `probe` until it answers or `limitMs` passed, backing off from `pollMs` to 500 ms, and
   * shows the wait in the status line as it runs (`<label> (<elapsed> s of <limit> s)`).
   */
  private async poll<T>(label: string, limitMs: number, probe: () => Promise<T | undefined>): Promise<T | undefined> {
    const started = this.deps.now().getTime();
    const delays = backoff(started + limitMs, { initialMs: this.timeouts.pollMs });
    // What is waited for lands in the store's directory (the manifest, the launcher's notes): a
    // change there wakes the poll at once, so backing off never delays seeing it.
    const changes = directoryWakeups(this.deps.store.dir);
    try {
      for (;;) {
        const value = await probe();
        if (value !== undefined) return value;
        const now = this.deps.now().getTime();
        const delay = delays.next(now);
        if (delay === undefined) return undefined;
        this.deps.tick?.(this.stepOf(label), `${label} (${formatWait(now - started)} of ${formatWait(limitMs)})`);
        await Promise.race([this.deps.sleep(delay), changes.next()]);
      }
    } finally {
      changes.close();
    }
  }

  /** Awaits `promise`, showing the wait in the status line about once a second. */
  private waitWithProgress<T>(promise: Promise<T>, label: string, limitMs: number): Promise<T> {
    return whileWaiting(
      promise,
      () => this.deps.now().getTime(),
      (elapsed) => this.deps.tick?.("launch", `${label} (${formatWait(elapsed)} of ${formatWait(limitMs)})`),
    );
  }

  private stepOf(label: string): HandoffStep {
    return label.startsWith("Waiting for the new Pi") ? "confirm" : "launch";
  }

  /**
   * Records `launch_unconfirmed`, unless the state moved on meanwhile: an acknowledgement that
   * landed after the last poll wins (the child runs), and a handoff settled by someone else is
   * reported as it is, not overwritten.
   */
  private async unconfirmed(manifest: Manifest, step: "launch" | "confirm", message: string): Promise<LaunchOutcome> {
    const unconfirmed = await this.deps.store.transitionIfStill(
      manifest.id,
      "launching",
      "launch_unconfirmed",
      (m, at) => {
        m.error = { step, message, at };
      },
      message,
    );
    if (unconfirmed.state === "running" && unconfirmed.child.ackAt !== undefined)
      return { code: "running", manifest: unconfirmed };
    return { code: "launch_unconfirmed", manifest: unconfirmed, message };
  }

  /** Step 6: only after confirmation; the outcome is recorded either way. */
  private async focus(mux: Multiplexer, manifest: Manifest): Promise<Manifest> {
    const focused = await mux.focus(manifest.mux);
    return this.deps.store.update(manifest.id, (m) => {
      m.focus = focused.ok ? { at: this.isoNow() } : { error: focused.message, at: this.isoNow() };
    });
  }

  private isoNow(): string {
    return this.deps.now().toISOString();
  }
}

/** The child among a pane's processes: named `pi`, in the worktree, carrying this handoff's marker. */
export function findChildProcess(
  processes: readonly DescribedProcess[],
  manifest: Manifest,
): DescribedProcess | undefined {
  return processes.find(
    (process) => process.name === "pi" && process.handoffId === manifest.id && process.cwd === manifest.worktree.path,
  );
}
