/**
 * Starting a handoff's child Pi in its pane, confirming that it started, then focusing it: steps
 * 4-6 of the handoff, shared by the transaction and by recovery's relaunch so both follow one path.
 *
 * Invariants:
 * - Nothing is typed before the pane's shell owns the terminal, and the manifest says `launching`
 *   (with the exact command) before anything is typed.
 * - A launch is confirmed only by the child's acknowledgement in the manifest or, failing that, by a
 *   process in the pane named `pi` whose cwd is the worktree and whose environment carries this
 *   handoff's marker. No evidence before the deadline: `launch_unconfirmed`, with the reason.
 * - Focus happens only after confirmation; a focus failure is recorded, never a launch failure.
 * - Only a confirmed child's session is reported to the multiplexer (`reportChildSession`, for
 *   Herdr's own restore); its outcome changes nothing.
 * - With postCreate commands on the line, their recorded exit status decides first: a failure is
 *   returned (Pi was not started, `&&`), success starts the confirm deadline; a status file that
 *   never comes ends as `launch_unconfirmed`, like a child that never acknowledges.
 * - Expected failures are values; only the caller's own hooks (`beforeType`) throw through here.
 */
import type { HandoffStep, Manifest } from "../manifest/schema.ts";
import type { ManifestStore } from "../manifest/store.ts";
import type { Multiplexer, MuxResult, PaneProcess } from "../mux/types.ts";
import { readPostCreateStatus } from "./post-create.ts";
import type { LaunchTimeouts } from "./timeouts.ts";

export type { LaunchTimeouts } from "./timeouts.ts";

export interface ChildLauncherDeps {
  store: ManifestStore;
  now(): Date;
  sleep(ms: number): Promise<void>;
  progress(step: HandoffStep, text: string): void;
  timeouts: LaunchTimeouts;
}

export interface LaunchRequest {
  mux: Multiplexer;
  /** The manifest as it is now; its `mux` location is the pane the command goes to. */
  manifest: Manifest;
  /** The command line that starts the child (see `buildLaunchCommand`); recorded as `child.command`. */
  command: string;
  /** Bring the child's window to the front once it is confirmed. */
  focus: boolean;
  /** A readiness wait the caller started earlier (so it overlaps other work); else one starts now. */
  shellReady?: Promise<MuxResult<object>>;
  /** More changes recorded with the `launching` state (launch settings, clearing an old child's pid). */
  patch?: (manifest: Manifest) => void;
  /** A note for the `launching` history entry. */
  note?: string;
  /** Runs once `launching` is recorded, before anything is typed (the transaction's fault hook). */
  beforeType?: () => void;
  /** What to type instead of `command` (the transaction's confirm fault: a line that starts nothing). */
  typedLine?: string;
  /** Runs once each step is done and recorded (the transaction's crash points, see fault.ts). */
  afterStep?: (step: "launch" | "confirm" | "focus") => void;
  /**
   * The typed line runs postCreate commands before Pi (post-create.ts): wait for their status file
   * first, then confirm as usual (the confirm deadline starts once they succeeded).
   */
  postCreate?: { statusFile: string; commands: readonly string[]; timeoutMs: number };
}

export type LaunchOutcome =
  /** Confirmed (and focused, or the focus failure recorded in `manifest.focus`). */
  | { code: "running"; manifest: Manifest }
  /** Typed, but no evidence of a child before the deadline; the manifest says `launch_unconfirmed`. */
  | { code: "launch_unconfirmed"; manifest: Manifest; message: string }
  /** The shell never got ready: nothing was typed and the manifest was not changed. */
  | { code: "shell_not_ready"; message: string }
  /** The manifest says `launching` but the command could not be typed; the caller records the failure. */
  | { code: "type_failed"; manifest: Manifest; message: string }
  /** A postCreate command failed, so Pi was not started; the caller records the failure. */
  | { code: "post_create_failed"; manifest: Manifest; message: string; exitStatus: number; command: number };

export class ChildLauncher {
  private readonly deps: ChildLauncherDeps;

  constructor(deps: ChildLauncherDeps) {
    this.deps = deps;
  }

  /** Steps 4 to 6: start, confirm, focus. */
  async launch(request: LaunchRequest): Promise<LaunchOutcome> {
    const { mux, manifest } = request;
    this.deps.progress("launch", "Waiting for the new pane's shell");
    const ready = await (request.shellReady ?? mux.waitForShell(manifest.mux, { timeoutMs: this.deps.timeouts.shellMs }));
    if (!ready.ok) return { code: "shell_not_ready", message: ready.message };

    const launching = await this.deps.store.transition(
      manifest.id,
      "launching",
      (m) => {
        request.patch?.(m);
        m.child = { ...m.child, command: request.command };
      },
      request.note,
    );
    this.deps.progress("launch", "Starting Pi in the new pane");
    request.beforeType?.();
    const typed = await mux.run(launching.mux, request.typedLine ?? request.command);
    if (!typed.ok) return { code: "type_failed", manifest: launching, message: typed.message };
    request.afterStep?.("launch");

    if (request.postCreate !== undefined) {
      this.deps.progress("launch", `Running ${request.postCreate.commands.length} postCreate command(s) in the new pane`);
      const hooks = await this.waitForPostCreate(request.postCreate, launching);
      if (hooks.code === "failed") return { ...hooks, code: "post_create_failed", manifest: launching };
      if (hooks.code === "timeout") {
        const unconfirmed = await this.deps.store.transition(
          launching.id,
          "launch_unconfirmed",
          (m) => {
            m.error = { step: "confirm", message: hooks.message, at: this.isoNow() };
          },
          hooks.message,
        );
        return { code: "launch_unconfirmed", manifest: unconfirmed, message: hooks.message };
      }
    }

    this.deps.progress("confirm", "Waiting for the new Pi to start");
    const confirmed = await this.confirm(mux, launching);
    if (!confirmed.ok) {
      // Changed by someone else meanwhile (removed, failed): reported, not overwritten.
      if (confirmed.manifest !== undefined) return { code: "launch_unconfirmed", manifest: confirmed.manifest, message: confirmed.message };
      const unconfirmed = await this.deps.store.transition(
        launching.id,
        "launch_unconfirmed",
        (m) => {
          m.error = { step: "confirm", message: confirmed.message, at: this.isoNow() };
        },
        confirmed.message,
      );
      return { code: "launch_unconfirmed", manifest: unconfirmed, message: confirmed.message };
    }
    request.afterStep?.("confirm");
    // Only a confirmed child is reported, so the multiplexer's own restore (Herdr resumes the
    // reported session after a restart) never resumes a session nobody runs. Best effort: the
    // handoff does not depend on it, and it runs beside the focus so the user waits no longer.
    const sessionFile = confirmed.manifest.child.sessionFile;
    const reported = mux.reportChildSession !== undefined && sessionFile !== undefined ? mux.reportChildSession(confirmed.manifest.mux, sessionFile) : undefined;
    if (!request.focus) {
      await reported;
      return { code: "running", manifest: confirmed.manifest };
    }
    this.deps.progress("focus", "Switching to the new window");
    const focused = await this.focus(mux, confirmed.manifest);
    await reported;
    request.afterStep?.("focus");
    return { code: "running", manifest: focused };
  }

  /**
   * The postCreate commands' outcome from their status file. An acknowledgement also ends the wait
   * (the child can only start after the commands succeeded, so a lost status file does not matter).
   */
  private async waitForPostCreate(
    hooks: NonNullable<LaunchRequest["postCreate"]>,
    manifest: Manifest,
  ): Promise<{ code: "passed" } | { code: "failed"; message: string; exitStatus: number; command: number } | { code: "timeout"; message: string }> {
    const deadline = this.deps.now().getTime() + hooks.timeoutMs;
    for (;;) {
      const status = await readPostCreateStatus(hooks.statusFile);
      if (status !== undefined) {
        if (status.exitStatus === 0) return { code: "passed" };
        const total = hooks.commands.length;
        const command = hooks.commands[status.command - 1];
        const which = command !== undefined ? `command ${status.command} of ${total} (${JSON.stringify(command)})` : "command";
        return {
          code: "failed",
          exitStatus: status.exitStatus,
          command: status.command,
          message: `The postCreate ${which} failed with exit status ${status.exitStatus} in the new pane, so Pi was not started.`,
        };
      }
      const current = await this.deps.store.read(manifest.id);
      if (current.ok && current.manifest.state === "running" && current.manifest.child.ackAt !== undefined) return { code: "passed" };
      if (this.deps.now().getTime() >= deadline) break;
      await this.deps.sleep(this.deps.timeouts.pollMs);
    }
    return {
      code: "timeout",
      message: `The postCreate commands had not finished after ${Math.round(hooks.timeoutMs / 1000)} s; they may still be running in the new pane, and Pi starts there when they succeed.`,
    };
  }

  /** Step 5: the child's acknowledgement, or failing that a process probe. */
  private async confirm(
    mux: Multiplexer,
    manifest: Manifest,
  ): Promise<{ ok: true; manifest: Manifest } | { ok: false; message: string; manifest?: Manifest }> {
    const deadline = this.deps.now().getTime() + this.deps.timeouts.confirmMs;
    for (;;) {
      const current = await this.deps.store.read(manifest.id);
      if (current.ok && current.manifest.state === "running" && current.manifest.child.ackAt !== undefined) {
        return { ok: true, manifest: current.manifest };
      }
      if (this.deps.now().getTime() >= deadline) break;
      await this.deps.sleep(this.deps.timeouts.pollMs);
    }
    const probed = await mux.probe(manifest.mux);
    const child = probed.ok ? findChildProcess(probed.processes, manifest) : undefined;
    if (child === undefined) {
      return {
        ok: false,
        message: `The new Pi did not confirm its start within ${Math.round(this.deps.timeouts.confirmMs / 1000)} s and no Pi process was found in the new pane.`,
      };
    }
    const running = await this.deps.store.update(manifest.id, (m) => {
      // The acknowledgement may have landed between the last poll and the probe; it wins. Only a
      // launch still in progress is confirmed: a handoff removed or failed meanwhile stays so.
      if (m.state !== "launching") return;
      m.state = "running";
      m.history.push({ state: "running", at: this.isoNow(), note: "confirmed by process probe" });
      m.child = { ...m.child, pid: child.pid, confirmedBy: "probe" };
    });
    if (running.state !== "running") {
      return { ok: false, message: `A Pi was found in the new pane, but handoff ${running.id} is ${running.state} now, so it was left as it is.`, manifest: running };
    }
    return { ok: true, manifest: running };
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
export function findChildProcess(processes: readonly PaneProcess[], manifest: Manifest): PaneProcess | undefined {
  return processes.find(
    (process) => process.name === "pi" && process.handoffId === manifest.id && process.cwd === manifest.worktree.path,
  );
}
