/**
 * Where a handoff spent its time, from the step times its history carries (manifest/schema.ts
 * `HistoryEntry.steps`): each step's total, in the order the steps first ran, and the wait from the
 * end of the fork (the launch) to the child's acknowledgement, for `pi-handoff inspect`.
 *
 * Invariants: pure; a manifest without step times (older, or written by hand) has none, never zeros.
 */
import type { Manifest } from "../manifest/schema.ts";
import type { StepTimes } from "./report-schema.ts";

export function stepTimesOf(manifest: Manifest): StepTimes | undefined {
  const totals = new Map<string, number>();
  const order: StepTimes["steps"] = [];
  for (const entry of manifest.history) {
    for (const { step, ms } of entry.steps ?? []) {
      const known = totals.get(step);
      totals.set(step, (known ?? 0) + ms);
      if (known === undefined) order.push({ step, ms: 0 });
    }
  }
  if (order.length === 0) return undefined;
  const steps = order.map(({ step }) => ({ step, ms: totals.get(step) ?? 0 }));
  // The launch is under way from the fork's entry until the child acknowledges (its `running` entry).
  const forked = manifest.history.findLastIndex((entry) => entry.state === "forked");
  const acknowledged =
    forked < 0 ? undefined : manifest.history.slice(forked + 1).find((entry) => entry.state === "running");
  const forkedAt = forked < 0 ? Number.NaN : Date.parse(manifest.history[forked]?.at ?? "");
  const launchToAckMs = acknowledged === undefined ? Number.NaN : Date.parse(acknowledged.at) - forkedAt;
  return Number.isFinite(launchToAckMs) && launchToAckMs >= 0 ? { steps, launchToAckMs } : { steps };
}

/** "preconditions 120 ms, worktree 210 ms, fork 40 ms, launch→ack 1.1 s". */
export function formatStepTimes(times: StepTimes): string {
  const parts = times.steps.map(({ step, ms }) => `${step} ${formatMs(ms)}`);
  if (times.launchToAckMs !== undefined) parts.push(`launch→ack ${formatMs(times.launchToAckMs)}`);
  return parts.join(", ");
}

function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const tenths = Math.round(ms / 100) / 10;
  return tenths >= 10 ? `${Math.round(tenths)} s` : `${tenths.toFixed(1)} s`;
}
