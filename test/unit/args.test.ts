import { describe, expect, it } from "vitest";
import { HANDOFF_USAGE, parseHandoffArgs } from "../../src/handoff/args.ts";

describe("parseHandoffArgs", () => {
  it("takes a branch alone, with HEAD as the base and focus on", () => {
    expect(parseHandoffArgs("feat/x")).toEqual({
      ok: true,
      args: { branch: "feat/x", base: "HEAD", baseGiven: false, focus: true },
    });
  });

  it("takes a base and a task after a lone --, keeping the task verbatim", () => {
    expect(parseHandoffArgs("  feat/x   main -- fix the --flag parsing;  then `test` ")).toEqual({
      ok: true,
      args: {
        branch: "feat/x",
        base: "main",
        baseGiven: true,
        task: "fix the --flag parsing;  then `test`",
        focus: true,
      },
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
    expect(parseHandoffArgs("b --force")).toEqual({
      ok: false,
      message: expect.stringContaining('Unknown option "--force"'),
    });
    expect(parseHandoffArgs("b --mux screen")).toEqual({
      ok: false,
      message: '--mux takes tmux, herdr or zellij, not "screen".',
    });
    expect(parseHandoffArgs("b --mux")).toEqual({
      ok: false,
      message: "--mux takes tmux, herdr or zellij, not nothing.",
    });
    expect(parseHandoffArgs("b main extra words")).toEqual({
      ok: false,
      message: 'Too many words before the task ("extra words"); put the task after " -- ".',
    });
  });

  it("suggests the one option a mistyped one most likely meant, and none when nothing is near", () => {
    expect(parseHandoffArgs("b --no-focs")).toEqual({
      ok: false,
      message: `Unknown option "--no-focs": did you mean --no-focus (usage: ${HANDOFF_USAGE})?`,
    });
    expect(parseHandoffArgs("b --exisitng")).toMatchObject({
      message: expect.stringContaining("did you mean --existing"),
    });
    expect(parseHandoffArgs("b --fetchh")).toMatchObject({ message: expect.stringContaining("did you mean --fetch") });
    expect(parseHandoffArgs("b --force")).toEqual({
      ok: false,
      message: `Unknown option "--force"; usage: ${HANDOFF_USAGE}.`,
    });
  });

  it("answers --help", () => {
    expect(parseHandoffArgs("--help")).toEqual({ ok: true, help: true });
  });

  it("reports a dash-led word as an unknown option, never as a branch or a base", () => {
    for (const line of ["-x", "-m tmux feat/x", "feat/x -m tmux", "feat/x main -q"]) {
      const word = line.split(" ").find((w) => w.startsWith("-"));
      expect(parseHandoffArgs(line), line).toEqual({
        ok: false,
        message: `Unknown option ${JSON.stringify(word)}; usage: ${HANDOFF_USAGE}.`,
      });
    }
    // Quoted, it is a value again, left to git's validation of the name.
    expect(parseHandoffArgs('"-x"')).toMatchObject({ ok: true, args: { branch: "-x" } });
  });
});

describe("quotes, as a shell user types them", () => {
  it.each([
    ['"feat/x"', { branch: "feat/x", base: "HEAD" }],
    ["'feat/x' 'main'", { branch: "feat/x", base: "main" }],
    ['"feat/x" --mux "tmux"', { branch: "feat/x", mux: "tmux" }],
    ['"feat"/x', { branch: "feat/x" }],
    ['"space name"', { branch: "space name" }],
    // A quote inside a word is part of the name, as before.
    ["quote'd", { branch: "quote'd" }],
    ['dq"x main', { branch: 'dq"x', base: "main" }],
    ["back\\slash", { branch: "back\\slash" }],
  ])("%s", (line, expected) => {
    expect(parseHandoffArgs(line)).toMatchObject({ ok: true, args: expected });
  });

  it("keeps the task after -- verbatim, quotes and all, and a quoted -- is no separator", () => {
    expect(parseHandoffArgs(`"feat/x" -- say "hi" and don't stop`)).toEqual({
      ok: true,
      args: { branch: "feat/x", base: "HEAD", baseGiven: false, task: `say "hi" and don't stop`, focus: true },
    });
    expect(parseHandoffArgs(`quote'd -- don't`)).toMatchObject({
      ok: true,
      args: { branch: "quote'd", task: "don't" },
    });
    expect(parseHandoffArgs('b "--" c')).toEqual({
      ok: false,
      message: 'Too many words before the task ("c"); put the task after " -- ".',
    });
  });

  it("refuses an opening quote that is never closed, and an empty quoted branch", () => {
    expect(parseHandoffArgs('"feat/x main')).toEqual({
      ok: false,
      message: 'The quote " before "feat/x" is never closed; close it, or leave the quotes out.',
    });
    expect(parseHandoffArgs('"" main')).toEqual({ ok: false, message: `Name the new branch: ${HANDOFF_USAGE}.` });
  });
});
