/** Where a handoff spent its time, as `pi-handoff inspect` shows it, from the step times in its history. */
import { describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { formatStepTimes, stepTimesOf } from "../../src/inventory/step-times.ts";

function withHistory(history: Manifest["history"]): Manifest {
  return { history } as Manifest;
}

describe("stepTimesOf", () => {
  it("sums each step over the entries, in the order the steps first ran, and times the launch until the acknowledgement", () => {
    const times = stepTimesOf(
      withHistory([
        { state: "provisioning", at: "2026-12-02T07:00:00.000Z", steps: [{ step: "preconditions", ms: 120 }] },
        {
          state: "provisioned",
          at: "2026-12-02T07:00:00.300Z",
          steps: [
            { step: "manifest", ms: 15 },
            { step: "worktree", ms: 200 },
          ],
        },
        {
          state: "forked",
          at: "2026-12-02T07:00:00.400Z",
          steps: [
            { step: "worktree", ms: 10 },
            { step: "fork", ms: 40 },
          ],
        },
        { state: "launching", at: "2026-12-02T07:00:00.500Z" },
        { state: "running", at: "2026-12-02T07:00:01.500Z", note: "acknowledged by pid 7" },
      ]),
    );
    expect(times).toEqual({
      steps: [
        { step: "preconditions", ms: 120 },
        { step: "manifest", ms: 15 },
        { step: "worktree", ms: 210 },
        { step: "fork", ms: 40 },
      ],
      launchToAckMs: 1100,
    });
    expect(times === undefined ? "" : formatStepTimes(times)).toBe(
      "preconditions 120 ms, manifest 15 ms, worktree 210 ms, fork 40 ms, launch→ack 1.1 s",
    );
  });

  it("has no launch time without an acknowledgement, and nothing at all for a manifest older than step times", () => {
    expect(
      stepTimesOf(
        withHistory([
          { state: "provisioning", at: "2026-12-02T07:00:00.000Z", steps: [{ step: "preconditions", ms: 5 }] },
          {
            state: "failed",
            at: "2026-12-02T07:00:01.000Z",
            note: "failed at worktree",
            steps: [{ step: "worktree", ms: 990 }],
          },
        ]),
      ),
    ).toEqual({
      steps: [
        { step: "preconditions", ms: 5 },
        { step: "worktree", ms: 990 },
      ],
    });
    expect(
      stepTimesOf(
        withHistory([
          { state: "provisioning", at: "2026-12-02T07:00:00.000Z" },
          { state: "running", at: "2026-12-02T07:00:01.000Z" },
        ]),
      ),
    ).toBeUndefined();
  });
});
