/**
 * The parent's widget chooses its few rows so that what needs the person and what changed last
 * stay visible (issue 41, point 4): a child killed among older, quit ones shows `exited` instead
 * of dropping behind "N more".
 */
import { describe, expect, it } from "vitest";
import { formatChildrenWidget } from "../../src/inventory/format.ts";
import type { ChildState } from "../../src/inventory/status.ts";
import { chooseWidgetRows, JUST_EXITED_MS } from "../../src/inventory/widget-rows.ts";

const NOW = Date.parse("2026-05-01T12:00:00.000Z");
const ago = (ms: number): string => new Date(NOW - ms).toISOString();
const HOUR = 3_600_000;

function row(name: string, state: ChildState, sinceMsAgo: number, exitCode?: number) {
  return {
    id: name,
    branch: `feat/${name}`,
    status: { state, since: ago(sinceMsAgo), ...(exitCode === undefined ? {} : { exitCode }) },
  };
}

/** Four older handoffs whose children quit, in the store's order, then the live one (made last). */
const QUIT = [
  row("one", "exited", 5 * HOUR, 0),
  row("two", "exited", 4 * HOUR, 0),
  row("three", "exited", 3 * HOUR, 0),
  row("four", "exited", 2 * HOUR, 0),
];

describe("the widget's rows", () => {
  it("shows the child killed just now, not behind '1 more' (the issue's case, before and after the kill)", () => {
    expect(formatChildrenWidget([...QUIT, row("live", "idle", 60_000)], NOW)).toEqual([
      "handoff feat/live   idle 1m",
      "handoff feat/four   exited 2h (code 0)",
      "handoff feat/three  exited 3h (code 0)",
      "handoff feat/two    exited 4h (code 0)",
      "handoffs: 1 more (/handoffs lists them)",
    ]);
    // Killed: no exit code of its own, dated from its last sign of life a moment ago.
    expect(formatChildrenWidget([...QUIT, row("live", "exited", 1_000)], NOW)).toEqual([
      "handoff feat/live   exited 1s",
      "handoff feat/four   exited 2h (code 0)",
      "handoff feat/three  exited 3h (code 0)",
      "handoff feat/two    exited 4h (code 0)",
      "handoffs: 1 more (/handoffs lists them)",
    ]);
  });

  it("puts what needs the person first: waiting for input, failed, gone just now without a word; then the freshest change", () => {
    const rows = [
      row("busy", "working", 10_000),
      row("asking", "waiting_input", 3 * HOUR),
      row("failed", "exited", 5 * HOUR, 1),
      row("killed", "exited", JUST_EXITED_MS - 1_000),
      row("killed-long-ago", "exited", JUST_EXITED_MS + 1_000),
      row("quit", "exited", 5_000, 0),
      row("idle", "idle", 20_000),
    ];
    expect(chooseWidgetRows(rows, NOW)).toEqual({
      shown: [rows[3], rows[1], rows[2], rows[5]],
      // busy, idle and killed-long-ago: by their time, after the clean quit 5 s ago.
      more: 3,
    });
  });

  it("shows a child that never started (its postCreate failed; the state has no time) among what needs the person", () => {
    const rows = [
      ...QUIT.slice(0, 3),
      { id: "setup", branch: "feat/setup", status: { state: "not_started" as ChildState } },
      row("live", "idle", 60_000),
      row("newer", "working", 30_000),
    ];
    expect(chooseWidgetRows(rows, NOW).shown.map((shown) => shown.id)).toEqual(["setup", "newer", "live", "three"]);
  });

  it("keeps live before exited, landed and removed at equal times, and does not count removed ones as more", () => {
    const rows = [
      row("gone", "removed", 0),
      row("done", "landed", 0),
      row("old", "exited", JUST_EXITED_MS * 2, 0),
      row("a", "idle", 0),
      row("b", "working", 0),
      row("c", "starting", 0),
      row("d", "compacting", 0),
    ];
    expect(chooseWidgetRows(rows, NOW)).toEqual({
      shown: [rows[3], rows[4], rows[5], rows[6]],
      more: 2,
    });
    // A state of unknown age sorts last.
    const unknown = { id: "x", branch: "feat/x", status: { state: "idle" as const } };
    expect(chooseWidgetRows([unknown, row("y", "idle", HOUR)], NOW).shown.map((shown) => shown.id)).toEqual(["y", "x"]);
  });
});
