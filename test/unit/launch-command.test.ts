import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { currentPiCommand, mirroredPiFlags, shellQuote } from "../../src/child/launch-command.ts";
import { hostileWords } from "../support/hostile-words.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "launch-cmd-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// A script for currentPiCommand to find on disk.
const recorder = join(root, "record.cjs");
writeFileSync(recorder, "");

const canary = join(root, "canary");
const hostile = hostileWords(canary);

describe("shellQuote", () => {
  it.each(["sh", "bash"])("round-trips every hostile word through a real %s without running anything", (shell) => {
    for (const word of hostile) {
      const out = execFileSync(shell, ["-c", `printf '%s' ${shellQuote(word)}`], { encoding: "utf8" });
      expect(out).toBe(word);
    }
    expect(existsSync(canary)).toBe(false);
  });

  it("refuses control characters, which a terminal would act on", () => {
    expect(() => shellQuote("a\nb")).toThrow(/control character/);
    expect(() => shellQuote("a\u001b[2Jb")).toThrow(/control character/);
  });
});

describe("currentPiCommand and mirroredPiFlags", () => {
  it("starts the child with the same node and Pi entry point", () => {
    // npm's .bin/pi is a link without an extension: followed to the real script.
    const link = join(root, "pi-link");
    symlinkSync(recorder, link);
    expect(currentPiCommand(process.execPath, [process.execPath, link, "--x"])).toEqual([process.execPath, recorder]);
    // A single-file build: no script on disk.
    expect(currentPiCommand(process.execPath, [process.execPath, "/$bunfs/root/pi", "--session", "s"])).toEqual([
      process.execPath,
    ]);
    expect(currentPiCommand(process.execPath, [process.execPath])).toEqual([process.execPath]);
  });

  it("mirrors extensions (local paths made absolute) and offline, and nothing else", () => {
    const argv = [
      "node",
      "cli.js",
      "-e",
      "./ext/a.ts",
      "--model",
      "x",
      "--extension=npm:pkg",
      "--offline",
      "-ne",
      "--extension",
      "/abs/b.ts",
      "--",
      "-e",
      "no",
    ];
    expect(mirroredPiFlags(argv, "/work")).toEqual([
      "--extension",
      "/work/ext/a.ts",
      "--extension",
      "npm:pkg",
      "--offline",
      "--no-extensions",
      "--extension",
      "/abs/b.ts",
    ]);
  });
});
