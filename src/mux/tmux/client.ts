/**
 * Talking to tmux, and the words tmux's answers are read with: one `tmux -S <socket> ...` per call,
 * the ids it prints, the locations they make.
 *
 * Invariants:
 * - Every call addresses one server explicitly (`-S <socket>`), uses an argument array (never a
 *   shell string) and carries a timeout.
 * - Failures are values with a stable code (`timeout`, `server_not_running`, `pane_not_found`,
 *   `tmux_failed`) and one sentence, never thrown.
 */
import type { MuxLocation } from "../../manifest/locations.ts";
import { formatWait, oneLine, stripPeriod } from "../../text.ts";
import type { MuxFailure } from "../types.ts";
import { runFailure, runProgram, runSucceeded } from "../../process/run-program.ts";
import type { TmuxLocation } from "../../manifest/locations.ts";

export type TmuxCallResult = { ok: true; stdout: string } | MuxFailure;

export async function runTmux(
  tmuxBin: string,
  socketPath: string,
  args: string[],
  timeoutMs: number,
): Promise<TmuxCallResult> {
  const result = await runProgram(tmuxBin, ["-S", socketPath, ...args], { timeoutMs });
  if (runSucceeded(result)) return { ok: true, stdout: result.stdout };
  const stderr = oneLine(result.stderr);
  if (result.timedOut) {
    return { ok: false, code: "timeout", message: `tmux ${args[0]} did not answer within ${formatWait(timeoutMs)}.` };
  }
  if (result.startError?.code === "ENOENT") {
    return { ok: false, code: "tmux_failed", message: `The tmux executable ${tmuxBin} was not found.` };
  }
  // A server that is shutting down answers "server exited unexpectedly" (or "lost server" mid-call).
  if (/^no server running on |^error connecting to |^server exited unexpectedly|^lost server/.test(stderr)) {
    return serverNotRunning(socketPath);
  }
  if (/^can't find (pane|window|session)/.test(stderr)) {
    return { ok: false, code: "pane_not_found", message: `tmux ${stripPeriod(stderr)}.` };
  }
  const detail = stderr || oneLine(runFailure(result));
  return { ok: false, code: "tmux_failed", message: `tmux ${args[0]} failed: ${stripPeriod(detail)}.` };
}

/** The failure of a call to a server that is not there. */
export function serverNotRunning(socketPath: string): MuxFailure {
  return { ok: false, code: "server_not_running", message: `No tmux server is running on ${socketPath}.` };
}

export function asTmuxLocation(location: MuxLocation): { ok: true; location: TmuxLocation } | MuxFailure {
  if (location.kind !== "tmux") return invalidLocation(`A ${location.kind} location was given to the tmux backend.`);
  return { ok: true, location };
}

/** The pane a location names, on the location's own server (the backend's when it records none). */
export function paneOf(
  location: MuxLocation,
  defaultSocketPath: string,
): { ok: true; socketPath: string; paneId: string; server?: string } | MuxFailure {
  const tmuxLocation = asTmuxLocation(location);
  if (!tmuxLocation.ok) return tmuxLocation;
  const { socketPath = defaultSocketPath, paneId, server } = tmuxLocation.location;
  if (paneId === undefined) return invalidLocation("The tmux location has no pane id.");
  return { ok: true, socketPath, paneId, ...(server === undefined ? {} : { server }) };
}

/** Which tmux server answers: its pid and start time (a new server on the same socket differs). */
export const SERVER_FORMAT = "#{pid}:#{start_time}";
export const SERVER_PATTERN = /^\d+:\d+$/;

export function invalidLocation(message: string): MuxFailure {
  return { ok: false, code: "invalid_location", message };
}

export function paneNotFound(paneId: string): MuxFailure {
  return { ok: false, code: "pane_not_found", message: `tmux pane ${paneId} no longer exists.` };
}

export function isId(value: string | undefined, sigil: "$" | "@" | "%"): value is string {
  return value !== undefined && value.startsWith(sigil) && /^\d+$/.test(value.slice(1));
}

export { paneCwdInside as isInside } from "../location.ts";
