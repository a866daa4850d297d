/**
 * The one POSIX sh quoter (src/process/sh-quote.ts) through real shells: every word of a corpus
 * holding every ASCII metacharacter, control characters, quotes, non-ASCII and a leading dash comes
 * back exactly from `sh` (dash here), bash and zsh, and none runs anything.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { shQuote } from "../../src/process/sh-quote.ts";
import { hostileWords, metacharacterWords } from "../support/hostile-words.ts";

const dir = mkdtempSync(join(tmpdir(), "phw-sh-quote-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const canary = join(dir, "canary");
const corpus = [...metacharacterWords(canary), ...hostileWords(canary)];

/** What `shell` prints for `printf '%s\0'` of every word, each written into the script by `shQuote`. */
function readBack(shell: string, flags: readonly string[], words: readonly string[]): string[] {
  const script = `printf '%s\\0' ${words.map(shQuote).join(" ")}`;
  const out = execFileSync(shell, [...flags, "-c", script], {
    cwd: dir,
    encoding: "utf8",
    env: { PATH: process.env.PATH },
  });
  return out.split("\0").slice(0, -1);
}

describe("shQuote", () => {
  it.each([
    ["sh", []],
    ["bash", ["--norc", "--noprofile"]],
    ["zsh", ["-f"]],
  ] as const)("gives back every word of the corpus exactly through a real %s, and runs none", (shell, flags) => {
    expect(readBack(shell, flags, corpus)).toEqual(corpus);
    expect(existsSync(canary)).toBe(false);
  });

  it("is one word for sh: a word passed as a script's only argument arrives as $1 alone", () => {
    for (const word of corpus) {
      const out = execFileSync("sh", ["-c", `set -- ${shQuote(word)}; printf '%s|%s' "$#" "$1"`], {
        cwd: dir,
        encoding: "utf8",
      });
      expect(out).toBe(`1|${word}`);
    }
    expect(existsSync(canary)).toBe(false);
  });

  it("leaves a word of only plain characters bare and quotes the rest, the empty word included", () => {
    expect(["git", "status", "--porcelain=v2", "feat/x-1.2", "a=b", "user@host:path"].map(shQuote)).toEqual([
      "git",
      "status",
      "--porcelain=v2",
      "feat/x-1.2",
      "a=b",
      "user@host:path",
    ]);
    expect(["", "=ls", "~root", "it's", "a b"].map(shQuote)).toEqual(["''", "'=ls'", "'~root'", "'it'\\''s'", "'a b'"]);
  });
});
