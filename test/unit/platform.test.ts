import { describe, expect, it } from "vitest";
import { unsupportedPlatform } from "../../src/process/platform.ts";
import { main } from "../../src/cli/cli.ts";

const WINDOWS =
  "pi-handoff-worktree does not run on Windows (it needs Linux or macOS with tmux, Herdr or zellij); run Pi inside WSL to use it there.";

describe("platforms", () => {
  it("runs on Linux, macOS and the BSDs, and refuses Windows in one sentence", () => {
    expect(unsupportedPlatform("linux")).toBeUndefined();
    expect(unsupportedPlatform("darwin")).toBeUndefined();
    expect(unsupportedPlatform("freebsd")).toBeUndefined();
    expect(unsupportedPlatform("win32")).toBe(WINDOWS);
  });

  it("pi-handoff on Windows refuses before it reads anything", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(["list"], {
      // An agent dir that does not exist: nothing may be looked at.
      env: { PI_CODING_AGENT_DIR: "/nonexistent/agent" },
      stdout: (text) => out.push(text),
      stderr: (text) => err.push(text),
      execPath: process.execPath,
      platform: "win32",
    });
    expect({ code, out, err }).toEqual({ code: 1, out: [], err: [`pi-handoff: ${WINDOWS}\n`] });
  });
});
