import { describe, expect, it } from "vitest";
import { parseHandoffArgs } from "../../src/handoff/args.ts";

describe("parseHandoffArgs", () => {
  it("takes a branch alone, with HEAD as the base and focus on", () => {
    expect(parseHandoffArgs("feat/x")).toEqual({ ok: true, args: { branch: "feat/x", base: "HEAD", baseGiven: false, focus: true } });
  });

  it("takes a base and a task after a lone --, keeping the task verbatim", () => {
    expect(parseHandoffArgs("  feat/x   main -- fix the --flag parsing;  then `test` ")).toEqual({
      ok: true,
      args: { branch: "feat/x", base: "main", baseGiven: true, task: "fix the --flag parsing;  then `test`", focus: true },
    });
  });

  it("reads --mux and --no-focus anywhere before the task", () => {
    expect(parseHandoffArgs("--mux tmux b --no-focus v1.0")).toEqual({
      ok: true,
      args: { branch: "b", base: "v1.0", baseGiven: true, mux: "tmux", focus: false },
    });
    expect(parseHandoffArgs("b --mux=herdr")).toMatchObject({ ok: true, args: { mux: "herdr" } });
  });

  it("refuses with one sentence: no branch, unknown option, bad --mux, extra words", () => {
    expect(parseHandoffArgs("")).toEqual({ ok: false, message: expect.stringMatching(/^Name the new branch: .*\.$/) });
    expect(parseHandoffArgs("-- only a task")).toMatchObject({ ok: false });
    expect(parseHandoffArgs("b --force")).toEqual({ ok: false, message: expect.stringContaining('Unknown option "--force"') });
    expect(parseHandoffArgs("b --mux screen")).toEqual({ ok: false, message: '--mux takes tmux or herdr, not "screen".' });
    expect(parseHandoffArgs("b --mux")).toEqual({ ok: false, message: "--mux takes tmux or herdr, not nothing." });
    expect(parseHandoffArgs("b main extra words")).toEqual({
      ok: false,
      message: 'Too many words before the task ("extra words"); put the task after " -- ".',
    });
  });

  it("answers --help", () => {
    expect(parseHandoffArgs("--help")).toEqual({ ok: true, help: true });
  });

  it("leaves a dash-led branch to git's validation rather than reading it as an option", () => {
    expect(parseHandoffArgs("-x")).toMatchObject({ ok: true, args: { branch: "-x" } });
  });
});
