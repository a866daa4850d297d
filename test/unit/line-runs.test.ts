/**
 * src/fs/line-runs.ts on a real file, with chunks smaller than a line so every line crosses a
 * chunk boundary: the runs cover the complete lines exactly, each at its offset; the unfinished
 * last line is returned; a start and an end bound are kept.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readLineRuns, type LineRange } from "../../src/fs/line-runs.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "phw-line-runs-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function runsOf(text: string, range: LineRange, chunkBytes: number) {
  const file = join(dir, "f.jsonl");
  writeFileSync(file, text);
  const handle = await open(file, "r");
  try {
    const runs: Array<[number, string]> = [];
    const { rest, restStart } = await readLineRuns(handle, range, chunkBytes, (bytes, offset) => {
      runs.push([offset, bytes.toString("utf8")]);
    });
    return { runs, rest: rest.toString("utf8"), restStart };
  } finally {
    await handle.close();
  }
}

describe("readLineRuns", () => {
  it("hands over complete lines at their offsets, whatever the chunk size, and returns the unfinished one", async () => {
    const text = "first line\nsecond\n\nthird line, longer\nunfinished";
    for (const chunkBytes of [1, 3, 7, 1024]) {
      const { runs, rest, restStart } = await runsOf(text, { start: 0 }, chunkBytes);
      expect(runs.map(([, bytes]) => bytes).join("")).toBe("first line\nsecond\n\nthird line, longer\n");
      for (const [offset, bytes] of runs) expect(text.slice(offset, offset + bytes.length)).toBe(bytes);
      expect([rest, restStart]).toEqual(["unfinished", 38]);
    }
  });

  it("reads from a start and stops at an end bound, leaving what follows for the next read", async () => {
    const text = "aa\nbb\ncc\ndd\n";
    const { runs, rest, restStart } = await runsOf(text, { start: 3, end: 10 }, 2);
    expect(runs.map(([, bytes]) => bytes).join("")).toBe("bb\ncc\n");
    expect(runs[0]?.[0]).toBe(3);
    expect([rest, restStart]).toEqual(["d", 9]);
  });

  it("a file with no newline is all rest", async () => {
    expect(await runsOf("no newline", { start: 0 }, 4)).toEqual({ runs: [], rest: "no newline", restStart: 0 });
  });
});
