/**
 * A Herdr pane's shell: waiting until it owns the terminal (ready to be typed into), typing one
 * line into it, and the processes that run under it.
 *
 * Invariants:
 * - The shell is ready once its own process group holds the terminal's foreground for
 *   SHELL_STABLE_SAMPLES consecutive samples of `pane process-info`; after a restart (the pane
 *   answered `pane_not_found` first) it must also hold it for SHELL_SETTLE_AFTER_RESTART_MS, so a
 *   launch never types beside Herdr's own resume of the agent.
 * - Polls give each call at least MIN_POLL_TIMEOUT_MS, and a failed wait names the last real
 *   failure Herdr answered, not the timeout of its last poll; `pane_not_found` is final only after
 *   the restart grace (client.ts).
 * - Herdr types the text literally: a line with a control character (or none at all) is refused,
 *   never typed.
 * - A probe takes Herdr's own view of the foreground first (its per-process cwd belongs to that
 *   pid), then everything else under the shell from the process facts (`src/process/`).
 */
import type { MuxLocation } from "../../manifest/schema.ts";
import type { DescribedProcess } from "../../process/facts.ts";
import { processFacts } from "../../process/facts.ts";
import { describePaneProcesses } from "../../process/pane-process.ts";
import { formatWait, hasControlCharacter, stripPeriod } from "../../text.ts";
import { waitForForegroundShell, type ShellSample } from "../shell-wait.ts";
import type { MuxResult } from "../types.ts";
import {
  FINAL_POLL_FAILURES,
  PaneNotFoundGrace,
  pollTimeout,
  publicFailure,
  type CallFailure,
  type HerdrClient,
} from "./client.ts";
import { canonicalPath, paneOf } from "./paths.ts";
import { PaneProcessInfoSchema } from "./protocol.ts";

const SHELL_STABLE_SAMPLES = 3;
/**
 * After a restart (the pane answered pane_not_found first) Herdr may type `pi --session <path>` into
 * the shell as soon as its terminal runs again (src/app/agent_resume.rs): the shell must then hold
 * the foreground this long before it counts as ready, so a launch never types beside Herdr's resume.
 */
export const SHELL_SETTLE_AFTER_RESTART_MS = 1_500;

export async function waitForShell(
  client: HerdrClient,
  location: MuxLocation,
  options: { timeoutMs: number },
): Promise<MuxResult<object>> {
  const pane = paneOf(location, client.socketPath);
  if (!pane.ok) return pane;
  const deadline = Date.now() + options.timeoutMs;
  const notFound = new PaneNotFoundGrace();
  let sampled = false;
  let restarted = false;
  // The last thing Herdr really answered that was not a sample: a poll's own timeout never hides
  // it. A poll the deadline cut short that timed out after Herdr had answered does not make the
  // outcome Herdr's timeout (the samples said "not ready"), but the message still says it.
  let lastFailure: CallFailure | undefined;
  let lastTimeout: CallFailure | undefined;
  let cutShortMs: number | undefined;
  // Back off while the shell is not ready (a slow server is not loaded by the wait), and sample
  // closely once it looks ready, so the stable samples come quickly (../shell-wait.ts).
  const waited = await waitForForegroundShell({
    deadline,
    // Several consecutive samples skip the moment a start-up job hands the terminal back and forth.
    stableSamples: SHELL_STABLE_SAMPLES,
    settleMs: () => (restarted ? SHELL_SETTLE_AFTER_RESTART_MS : 0),
    sample: async (): Promise<ShellSample> => {
      const budgetMs = pollTimeout(deadline, client.timeoutMs);
      const info = await client.call(
        ["pane", "process-info", "--pane", pane.paneId],
        PaneProcessInfoSchema,
        "pane process-info",
        {
          timeoutMs: budgetMs,
          socketPath: pane.socketPath,
        },
      );
      if (!info.ok) {
        if (FINAL_POLL_FAILURES.has(info.code)) return { kind: "stop", failure: publicFailure(info) };
        if (notFound.isFinal(info))
          return {
            kind: "stop",
            failure: publicFailure(await client.explainPaneNotFound(pane.paneId, pane.socketPath, info)),
          };
        if (info.code === "pane_not_found") restarted = true;
        if (info.code !== "timeout") lastFailure = info;
        else if (budgetMs >= client.timeoutMs || !sampled) lastTimeout = info;
        else cutShortMs = budgetMs;
        return { kind: "miss" };
      }
      notFound.reset();
      sampled = true;
      lastFailure = undefined;
      lastTimeout = undefined;
      cutShortMs = undefined;
      const { shell_pid: shellPid, foreground_process_group_id: foreground } = info.result.process_info;
      return { kind: "sample", shellPid, foregroundGroup: foreground };
    },
  });
  if (waited.code === "ready") return { ok: true };
  if (waited.code === "stopped") return waited.failure;
  const notReady = `The shell in Herdr pane ${pane.paneId} did not become ready within ${formatWait(options.timeoutMs)}`;
  const cause = lastFailure ?? lastTimeout;
  if (cause !== undefined) {
    const since = sampled ? "; its last poll failed" : "";
    return { ok: false, code: cause.code, message: `${notReady}${since}: ${stripPeriod(cause.message)}.` };
  }
  const lastPoll =
    cutShortMs === undefined ? "" : `; Herdr did not answer its last poll in the ${formatWait(cutShortMs)} left`;
  return { ok: false, code: "shell_not_ready", message: `${notReady}${lastPoll}.` };
}

export async function typeLine(
  client: HerdrClient,
  location: MuxLocation,
  commandLine: string,
): Promise<MuxResult<object>> {
  const pane = paneOf(location, client.socketPath);
  if (!pane.ok) return pane;
  // Herdr types the text literally; a control character would be a keystroke (a newline runs half a line).
  if (hasControlCharacter(commandLine) || commandLine === "") {
    return {
      ok: false,
      code: "invalid_command_line",
      message: "The command line is empty or contains a control character (such as a newline) and was not typed.",
    };
  }
  const typed = await client.send(["pane", "run", pane.paneId, commandLine], "pane run", {
    socketPath: pane.socketPath,
  });
  return typed.ok ? { ok: true } : publicFailure(typed);
}

export async function probePane(
  client: HerdrClient,
  location: MuxLocation,
): Promise<MuxResult<{ processes: DescribedProcess[] }>> {
  const pane = paneOf(location, client.socketPath);
  if (!pane.ok) return pane;
  const info = await client.processInfo(pane.paneId, pane.socketPath);
  if (!info.ok) return publicFailure(info);
  const facts = info.result.process_info;
  const processes = new Map<number, DescribedProcess>();
  // Herdr's own view of the foreground first: its per-process cwd belongs to that exact pid.
  const read = new Map(
    (await describePaneProcesses(facts.foreground_processes.map((foreground) => foreground.pid))).map((p) => [
      p.pid,
      p,
    ]),
  );
  for (const foreground of facts.foreground_processes) {
    const handoffId = read.get(foreground.pid)?.handoffId;
    const cwd = foreground.cwd !== undefined ? await canonicalPath(foreground.cwd) : read.get(foreground.pid)?.cwd;
    processes.set(foreground.pid, {
      pid: foreground.pid,
      name: foreground.name,
      ...(cwd !== undefined ? { cwd } : {}),
      ...(handoffId !== undefined ? { handoffId } : {}),
    });
  }
  // Then everything else under the shell (a child that is not in the foreground group).
  if (facts.shell_pid !== undefined) {
    const others = (await processFacts().descendants(facts.shell_pid)).filter((pid) => !processes.has(pid));
    for (const described of await describePaneProcesses(others)) processes.set(described.pid, described);
  }
  return { ok: true, processes: [...processes.values()] };
}
