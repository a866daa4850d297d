/**
 * Focus: bring a handoff's window (tmux) or workspace (Herdr) to the front, through the backend
 * that made it. Shared by `pi-handoff focus` and `/handoffs`.
 *
 * Invariants:
 * - Changes nothing but which window is shown: no manifest write, no process started.
 * - Only a window the inventory sees open is focused; a closed one is refused in one sentence that
 *   names the command that reopens it.
 * - One actor: it holds the handoff's action lock while it looks and switches, so it never
 *   switches to a window a relaunch or a removal is changing at that moment.
 */
import { describeLocation } from "../mux/registry.ts";
import type { GatherDeps } from "../inventory/gather.ts";
import { inspectHandoff } from "../inventory/inventory.ts";
import { isActionBusy, type ManifestStore } from "../manifest/store.ts";
import { failed, type Outcome } from "../outcome.ts";

export type FocusFailure = "not_found" | "invalid" | "not_open" | "failed" | "busy";
export type FocusOutcome = Outcome<{ message: string }, FocusFailure>;

export async function focusHandoff(deps: GatherDeps & { store: ManifestStore }, id: string): Promise<FocusOutcome> {
  const outcome = await deps.store.withActionLock(id, "focus", () => focusLocked(deps, id));
  return isActionBusy(outcome) ? failed("busy", outcome.message) : outcome;
}

async function focusLocked(deps: GatherDeps & { store: ManifestStore }, id: string): Promise<FocusOutcome> {
  const inspected = await inspectHandoff(deps, id);
  if (inspected.code !== "found") return failed(inspected.code, inspected.message);
  const { report, manifest } = inspected;
  if (report.status.code === "removed")
    return failed("not_open", `Handoff ${id} was removed, so it has no window to switch to.`);
  if (report.workspace.code !== "open") {
    const why =
      report.workspace.code === "unknown"
        ? `could not be seen (${report.workspace.message})`
        : report.workspace.code === "none"
          ? "was never opened"
          : "is closed";
    const next = report.actions.includes("relaunch") ? `; pi-handoff relaunch ${id} reopens it and starts its Pi` : "";
    return failed("not_open", `The window of handoff ${id} ${why}, so there is nothing to switch to${next}.`);
  }
  const mux = deps.muxFor(manifest.mux);
  if (!mux.ok) return failed("failed", mux.message);
  const focused = await mux.mux.focus(manifest.mux);
  if (!focused.ok) return failed("failed", focused.message);
  return { ok: true, message: `Switched to handoff ${id}: ${describeLocation(manifest.mux)}.` };
}
