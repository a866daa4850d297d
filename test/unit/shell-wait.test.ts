/**
 * The one shell wait both backends use (src/mux/shell-wait.ts), on scripted samples: ready after
 * the stable samples in a row, a miss or a foreign foreground starting the count again, the
 * backend's stop and give-up passed through, the settle time held, and the deadline kept.
 */
import { describe, expect, it } from "vitest";
import { waitForForegroundShell, type ShellSample } from "../../src/mux/shell-wait.ts";

const shell = (shellPid: number, foregroundGroup: number | undefined): ShellSample => ({
  kind: "sample",
  shellPid,
  foregroundGroup,
});

/** A pid source that answers `samples` in order, then repeats the last one; counts the calls. */
function scripted(samples: ShellSample[]): { sample: () => Promise<ShellSample>; calls: () => number } {
  let calls = 0;
  return {
    sample: async () => samples[Math.min(calls++, samples.length - 1)] ?? { kind: "miss" },
    calls: () => calls,
  };
}

describe("waitForForegroundShell", () => {
  it("is ready after the stable samples in a row, and a miss or another foreground starts the count again", async () => {
    const source = scripted([
      shell(10, 10),
      shell(10, 10),
      { kind: "miss" },
      shell(10, 10),
      shell(10, 11),
      shell(10, 10),
      shell(10, 10),
      shell(10, 10),
    ]);
    const outcome = await waitForForegroundShell({
      deadline: Date.now() + 10_000,
      stableSamples: 3,
      stableIntervalMs: 1,
      sample: source.sample,
    });
    expect(outcome).toEqual({ code: "ready" });
    expect(source.calls()).toBe(8);
  });

  it("never counts an unknown shell pid as owning the terminal", async () => {
    const source = scripted([{ kind: "sample", shellPid: undefined, foregroundGroup: undefined }]);
    const outcome = await waitForForegroundShell({
      deadline: Date.now() + 300,
      stableSamples: 1,
      sample: source.sample,
    });
    expect(outcome).toEqual({ code: "deadline" });
  });

  it("passes the backend's stop and give-up through at once", async () => {
    const failure = { ok: false as const, code: "pane_not_found", message: "gone." };
    expect(
      await waitForForegroundShell({
        deadline: Date.now() + 10_000,
        stableSamples: 3,
        sample: scripted([{ kind: "stop", failure }]).sample,
      }),
    ).toEqual({ code: "stopped", failure });
    const giveUp = scripted([{ kind: "give_up" }]);
    expect(
      await waitForForegroundShell({ deadline: Date.now() + 10_000, stableSamples: 3, sample: giveUp.sample }),
    ).toEqual({
      code: "deadline",
    });
    expect(giveUp.calls()).toBe(1);
  });

  it("holds the shell for the settle time before it counts as ready", async () => {
    const started = Date.now();
    const outcome = await waitForForegroundShell({
      deadline: started + 10_000,
      stableSamples: 2,
      settleMs: () => 200,
      sample: scripted([shell(5, 5)]).sample,
    });
    expect(outcome).toEqual({ code: "ready" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
  });

  it("ends at its deadline, well before another whole wait", async () => {
    const started = Date.now();
    const outcome = await waitForForegroundShell({
      deadline: started + 400,
      stableSamples: 3,
      sample: scripted([shell(5, 6)]).sample,
    });
    expect(outcome).toEqual({ code: "deadline" });
    expect(Date.now() - started).toBeLessThan(400 + 1_000);
  });
});
