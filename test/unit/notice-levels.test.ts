/**
 * How loudly each outcome is told (the TUI's level; in print mode anything but info fails the
 * run): decided in src/, once, for the adapter and the CLI alike.
 */
import { expect, it } from "vitest";
import { launchNoticeLevel } from "../../src/child/launcher.ts";
import { leaseEventLevel, type LeaseEvent } from "../../src/child/session-writer.ts";
import { removalFailedAfterLanding, type LandOutcome } from "../../src/land/land.ts";

it("a launch that runs is news, an unconfirmed one a warning, anything else an error", () => {
  const codes = ["running", "launch_unconfirmed", "failed", "refused"] as const;
  expect(codes.map((code) => launchNoticeLevel(code))).toEqual(["info", "warning", "error", "error"]);
});

it("a lease held again is news; a lost or unrefreshed one a warning", () => {
  const events: LeaseEvent[] = ["taken_over", "leased", "lost", "error"].map(
    (code) => ({ code, message: code }) as LeaseEvent,
  );
  expect(events.map((event) => leaseEventLevel(event))).toEqual(["info", "info", "warning", "warning"]);
});

it("a landing whose asked-for removal did not go through is told as such", () => {
  const landed = { ok: true, code: "landed", message: "m" } as LandOutcome;
  const withRemoval = (code: string) => ({ ...landed, removal: { code } }) as LandOutcome;
  expect(removalFailedAfterLanding(landed)).toBe(false);
  expect(removalFailedAfterLanding(withRemoval("removed"))).toBe(false);
  expect(removalFailedAfterLanding(withRemoval("refused"))).toBe(true);
  expect(removalFailedAfterLanding({ ok: false, code: "failed", message: "m" })).toBe(false);
});
