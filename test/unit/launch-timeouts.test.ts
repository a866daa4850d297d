/**
 * The launch waits from the environment (defaults, bounds, one sentence for a bad value, through
 * config/env.ts) and the polling back-off every outside wait uses.
 */
import { describe, expect, it, vi } from "vitest";
import { backoff, whileWaiting } from "../../src/mux/backoff.ts";
import { gitCallMs, readWaits, WAIT_SETTINGS } from "../../src/config/waits.ts";
import { formatWait } from "../../src/text.ts";
import { envDefault, HANDOFF_ENV_NAMES, NUMERIC_BOUNDS, type NumericEnvName } from "../../src/config/env.ts";
import { readHandoffEnv } from "../../src/config/env.ts";
import { DEFAULT_LAUNCH_TIMEOUTS, LAUNCH_SETTINGS, launchTimeoutsFromEnv } from "../../src/child/timeouts.ts";

/** The refusal an entry point gives (config/env.ts), or undefined when the value is usable. */
function problem(env: Record<string, string>): string | undefined {
  const read = readHandoffEnv(env);
  return read.ok ? undefined : read.message;
}

describe("formatWait", () => {
  it("says every wait one way: milliseconds below a tenth of a second, else seconds to a tenth, whole from 10 s", () => {
    const said = [0, 23, 99, 100, 300, 999, 1_000, 1_200, 4_500, 9_960, 15_000, 45_000, 600_000].map(formatWait);
    expect(said).toEqual([
      "0 s",
      "23 ms",
      "99 ms",
      "0.1 s",
      "0.3 s",
      "1 s",
      "1 s",
      "1.2 s",
      "4.5 s",
      "10 s",
      "15 s",
      "45 s",
      "600 s",
    ]);
  });
});

describe("launch waits from the environment", () => {
  it("uses the defaults when nothing is set, and each variable when it holds a valid value", () => {
    expect(launchTimeoutsFromEnv({})).toEqual(DEFAULT_LAUNCH_TIMEOUTS);
    expect(DEFAULT_LAUNCH_TIMEOUTS).toMatchObject({ startMs: 3_000, attempts: 3, confirmMs: 45_000, shellMs: 15_000 });
    expect(
      launchTimeoutsFromEnv({
        PI_HANDOFF_LAUNCH_START_TIMEOUT_MS: "1500",
        PI_HANDOFF_LAUNCH_ATTEMPTS: " 5 ",
        PI_HANDOFF_LAUNCHER_WAIT_MS: "",
        PI_HANDOFF_CONFIRM_TIMEOUT_MS: "2000",
      }),
    ).toEqual({ ...DEFAULT_LAUNCH_TIMEOUTS, startMs: 1_500, attempts: 5, confirmMs: 2_000 });
    expect(problem({ PI_HANDOFF_LAUNCH_ATTEMPTS: "10" })).toBeUndefined();
  });

  it.each([
    [
      "PI_HANDOFF_LAUNCH_ATTEMPTS",
      "0",
      'PI_HANDOFF_LAUNCH_ATTEMPTS is "0", but it must be a whole number from 1 to 10 (such as 3); set it so, or unset it.',
    ],
    [
      "PI_HANDOFF_LAUNCH_START_TIMEOUT_MS",
      "3s",
      'PI_HANDOFF_LAUNCH_START_TIMEOUT_MS is "3s", but it must be a whole number of milliseconds from 100 to 120000 (such as 3000); set it so, or unset it.',
    ],
    [
      "PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS",
      "99",
      'PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS is "99", but it must be a whole number of milliseconds from 1000 to 3600000 (such as 120000); set it so, or unset it.',
    ],
  ])("names %s=%j in one sentence and never uses it", (name, value, sentence) => {
    expect(problem({ [name]: value })).toBe(sentence);
    expect(launchTimeoutsFromEnv({ [name]: value })).toEqual(DEFAULT_LAUNCH_TIMEOUTS);
  });

  it("documents every variable in the README", async () => {
    const { readFileSync } = await import("node:fs");
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    for (const setting of WAIT_SETTINGS)
      expect(readme).toContain(`| \`${setting.variable}\` | \`${setting.fallback}\` |`);
    // Every default env.ts holds is the README's, the polls' included; the git bound has none.
    for (const name of HANDOFF_ENV_NAMES) {
      const fallback =
        name in NUMERIC_BOUNDS && name !== "PI_HANDOFF_GIT_TIMEOUT_MS" ? envDefault(name as NumericEnvName) : undefined;
      if (fallback !== undefined) expect(readme, name).toContain(`| \`${name}\` | \`${fallback}\` |`);
    }
    expect(readme).toContain("| `PI_HANDOFF_GIT_TIMEOUT_MS` | (per call) |");
    // Every variable has a row, and a number's row states the bounds the schema enforces.
    for (const name of HANDOFF_ENV_NAMES) {
      const row = readme.split("\n").find((line) => line.startsWith(`| \`${name}\` |`));
      expect(row, name).toBeDefined();
      const bounds = NUMERIC_BOUNDS[name];
      if (bounds !== undefined)
        expect(row, name).toContain(
          bounds.maximum === undefined ? `(at least ${bounds.minimum})` : `${bounds.minimum} to ${bounds.maximum})`,
        );
    }
  });

  it("holds the launch's defaults equal to the table's, and reads the multiplexer's waits from it too", () => {
    expect(DEFAULT_LAUNCH_TIMEOUTS).toEqual({
      shellMs: 15_000,
      confirmMs: 45_000,
      pollMs: 50,
      postCreateMs: 600_000,
      startMs: 3_000,
      attempts: 3,
      paramsWaitMs: 300_000,
    });
    expect(LAUNCH_SETTINGS.map((setting) => setting.key)).toEqual([
      "shellMs",
      "startMs",
      "attempts",
      "confirmMs",
      "postCreateMs",
      "paramsWaitMs",
    ]);
    expect(readWaits({}, ["muxCallMs", "herdrWorktreeMs"])).toEqual({ muxCallMs: 5_000, herdrWorktreeMs: 120_000 });
    expect(readWaits({ PI_HANDOFF_HERDR_WORKTREE_TIMEOUT_MS: "30000" }, ["herdrWorktreeMs"])).toEqual({
      herdrWorktreeMs: 30_000,
    });
    // One variable raises every git call's own bound; unset (or unusable) leaves each caller's.
    expect([
      gitCallMs({}, 15_000),
      gitCallMs({ PI_HANDOFF_GIT_TIMEOUT_MS: "90000" }, 15_000),
      gitCallMs({ PI_HANDOFF_GIT_TIMEOUT_MS: "x" }, 15_000),
    ]).toEqual([15_000, 90_000, 15_000]);
    expect(readWaits({ PI_HANDOFF_GIT_FETCH_TIMEOUT_MS: "5000" }, ["gitFetchMs", "gitWorktreeMs"])).toEqual({
      gitFetchMs: 5_000,
      gitWorktreeMs: 600_000,
    });
    expect(problem({ PI_HANDOFF_MUX_TIMEOUT_MS: "-1" })).toBe(
      'PI_HANDOFF_MUX_TIMEOUT_MS is "-1", but it must be a whole number of milliseconds from 100 to 120000 (such as 5000); set it so, or unset it.',
    );
  });
});

describe("polling back-off", () => {
  it("starts at 50 ms, doubles to 500 ms, and never sleeps past the deadline", () => {
    const delays = backoff(2_000);
    const seen: number[] = [];
    let now = 0;
    for (let delay = delays.next(now); delay !== undefined; delay = delays.next(now)) {
      seen.push(delay);
      now += delay;
    }
    expect(seen).toEqual([50, 100, 200, 400, 500, 500, 250]);
    expect(now).toBe(2_000);
  });

  it("polls closely again after a reset", () => {
    const delays = backoff(10_000);
    expect([delays.next(0), delays.next(0), delays.next(0)]).toEqual([50, 100, 200]);
    delays.reset();
    expect(delays.next(0)).toBe(50);
  });
});

describe("a wait shown as it runs", () => {
  it("ticks once a second with the time spent, stops with the wait, and returns or throws what it waited for", async () => {
    vi.useFakeTimers();
    try {
      const ticks: number[] = [];
      let finish: (value: string) => void = () => {};
      const waited = whileWaiting(
        new Promise<string>((resolve) => (finish = resolve)),
        () => Date.now(),
        (elapsed) => ticks.push(elapsed),
      );
      await vi.advanceTimersByTimeAsync(2_500);
      finish("done");
      expect(await waited).toBe("done");
      await vi.advanceTimersByTimeAsync(5_000);
      expect(ticks).toEqual([1_000, 2_000]);
      await expect(
        whileWaiting(
          Promise.reject(new Error("boom")),
          () => Date.now(),
          () => {},
        ),
      ).rejects.toThrow("boom");
    } finally {
      vi.useRealTimers();
    }
  });
});
