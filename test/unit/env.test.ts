/**
 * The PI_HANDOFF_* variables, read like the settings file: one sentence naming the variable for a
 * value that cannot be used, unset (or empty) meaning the default, valid values as numbers/paths;
 * and every PI_HANDOFF_* the code reads as a user setting is one the schema knows.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HANDOFF_ENV_NAMES, readHandoffEnv, validHandoffEnv } from "../../src/config/env.ts";
import { leftBehindNote } from "../../src/handoff/notice.ts";
import { DEFAULT_LAUNCH_TIMEOUTS, launchTimeoutsFromEnv } from "../../src/child/timeouts.ts";
import { PROJECT_ROOT } from "../support/pi.ts";

const MS = "a whole number of milliseconds from 100 to 600000";

describe("readHandoffEnv", () => {
  it.each([
    ["PI_HANDOFF_CONFIRM_TIMEOUT_MS", "abc", `${MS} (such as 45000)`],
    ["PI_HANDOFF_CONFIRM_TIMEOUT_MS", "0", `${MS} (such as 45000)`],
    ["PI_HANDOFF_SHELL_TIMEOUT_MS", "-5", `${MS} (such as 15000)`],
    ["PI_HANDOFF_SHELL_TIMEOUT_MS", "1.5", `${MS} (such as 15000)`],
    ["PI_HANDOFF_SHELL_TIMEOUT_MS", "600001", `${MS} (such as 15000)`],
    [
      "PI_HANDOFF_POST_CREATE_TIMEOUT_MS",
      "10s",
      "a whole number of milliseconds from 1000 to 86400000 (such as 600000)",
    ],
    ["PI_HANDOFF_GIT_TIMEOUT_MS", "999", "a whole number of milliseconds from 1000 to 3600000 (such as 60000)"],
    ["PI_HANDOFF_GIT_FETCH_TIMEOUT_MS", "soon", "a whole number of milliseconds from 1000 to 3600000 (such as 30000)"],
    [
      "PI_HANDOFF_GIT_WORKTREE_TIMEOUT_MS",
      "0",
      "a whole number of milliseconds from 1000 to 86400000 (such as 600000)",
    ],
    ["PI_HANDOFF_LINEAGE_POLL_MS", "50", "a whole number of milliseconds, at least 100 (such as 2000)"],
    [
      "PI_HANDOFF_WORKTREE_ROOT",
      "../trees",
      "an absolute path (such as ~/worktrees or /srv/worktrees): a relative one would put worktrees inside whatever directory Pi runs in",
    ],
  ])("refuses %s=%s in one sentence naming it", (name, value, expected) => {
    expect(readHandoffEnv({ [name]: value })).toEqual({
      ok: false,
      variable: name,
      message: `${name} is ${JSON.stringify(value)}, but it must be ${expected}; set it so, or unset it.`,
    });
  });

  it("reads valid values, trimmed; unset and empty mean the default", () => {
    expect(
      readHandoffEnv({
        PI_HANDOFF_CONFIRM_TIMEOUT_MS: " 45000 ",
        PI_HANDOFF_SHELL_TIMEOUT_MS: "",
        PI_HANDOFF_WORKTREE_ROOT: "~/trees",
        PI_HANDOFF_LINEAGE_POLL_MS: "100",
        UNRELATED: "x",
      }),
    ).toEqual({
      ok: true,
      env: {
        PI_HANDOFF_CONFIRM_TIMEOUT_MS: 45000,
        PI_HANDOFF_WORKTREE_ROOT: "~/trees",
        PI_HANDOFF_LINEAGE_POLL_MS: 100,
      },
    });
    expect(readHandoffEnv({ PI_HANDOFF_WORKTREE_ROOT: "/srv/trees" })).toEqual({
      ok: true,
      env: { PI_HANDOFF_WORKTREE_ROOT: "/srv/trees" },
    });
    expect(readHandoffEnv({})).toEqual({ ok: true, env: {} });
  });

  it("checks only the variables asked for, and the launch waits take only valid ones", () => {
    expect(readHandoffEnv({ PI_HANDOFF_LINEAGE_POLL_MS: "x" }, ["PI_HANDOFF_CONFIRM_TIMEOUT_MS"])).toEqual({
      ok: true,
      env: {},
    });
    expect(
      validHandoffEnv({ PI_HANDOFF_CONFIRM_TIMEOUT_MS: "abc", PI_HANDOFF_SHELL_TIMEOUT_MS: "500" }, HANDOFF_ENV_NAMES),
    ).toEqual({ PI_HANDOFF_SHELL_TIMEOUT_MS: 500 });
    expect(launchTimeoutsFromEnv({ PI_HANDOFF_CONFIRM_TIMEOUT_MS: "abc", PI_HANDOFF_SHELL_TIMEOUT_MS: "500" })).toEqual(
      {
        ...DEFAULT_LAUNCH_TIMEOUTS,
        shellMs: 500,
      },
    );
  });

  it("knows every PI_HANDOFF_* setting the code reads", () => {
    const files = ["src", "pi-extension"].flatMap((dir) => sourceFiles(join(PROJECT_ROOT, dir)));
    const read = new Set<string>();
    for (const file of files) {
      for (const match of readFileSync(file, "utf8").matchAll(/\bPI_HANDOFF_[A-Z_]+\b/g)) read.add(match[0]);
    }
    // Set by the package for its children, or for tests: not user settings.
    for (const internal of [
      "PI_HANDOFF_ID",
      "PI_HANDOFF_BRANCH",
      "PI_HANDOFF_WORKTREE",
      "PI_HANDOFF_MAIN_CHECKOUT",
      "PI_HANDOFF_FAULT",
      "PI_HANDOFF_PROCESS_INFO",
      "PI_HANDOFF_PORT",
      "PI_HANDOFF_PORTS",
      "PI_HANDOFF_WARM",
    ]) {
      read.delete(internal);
    }
    expect([...read].filter((name) => !(HANDOFF_ENV_NAMES as string[]).includes(name)).sort()).toEqual([]);
  });
});

describe("the note for uncommitted work that stays behind", () => {
  it.each([
    [
      { tracked: 2, untracked: 0 },
      undefined,
      "Not carried: 2 uncommitted changes to tracked files stayed in /repo (the new worktree does not have them); --carry takes them along.",
    ],
    [
      { tracked: 2, untracked: 1 },
      undefined,
      "Not carried: 2 uncommitted changes to tracked files and 1 untracked file stayed in /repo (the new worktree does not have them); --carry takes the changes along, --carry=all the untracked files too.",
    ],
    [
      { tracked: 0, untracked: 3 },
      undefined,
      "Not carried: 3 untracked files stayed in /repo (the new worktree does not have them); --carry=all takes them along.",
    ],
    [
      { tracked: 2, untracked: 1 },
      "tracked",
      "Not carried: 1 untracked file stayed in /repo (the new worktree does not have them); --carry=all takes them along.",
    ],
    [{ tracked: 2, untracked: 0 }, "tracked", undefined],
    [{ tracked: 2, untracked: 1 }, "all", undefined],
    [{ tracked: 0, untracked: 0 }, undefined, undefined],
  ] as const)("%j with carry %s", (counts, carry, expected) => {
    expect(leftBehindNote(counts, carry, "/repo")).toBe(expected);
  });
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith(".ts") ? [full] : [];
  });
}
