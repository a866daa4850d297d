/**
 * `readTextIfPresent`: a file's exact text, or undefined for anything it cannot read.
 * `readFileEnd`: the final bytes of a file, whatever its length, and whether it holds more.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { readFileEnd, readTextIfPresent } from "../../src/fs/probe.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";

let dir: string;
beforeEach(() => {
  dir = makeTempDir("fs-probe-");
});
afterEach(() => {
  removeTempDir(dir);
});

it("reads a file's text exactly", async () => {
  await writeFile(join(dir, "a"), "12 3\n");
  expect(await readTextIfPresent(join(dir, "a"))).toBe("12 3\n");
});

it("answers undefined for a missing file, a path through a file, and a directory", async () => {
  await writeFile(join(dir, "file"), "x");
  await mkdir(join(dir, "a-directory"));
  expect(await readTextIfPresent(join(dir, "missing"))).toBeUndefined();
  expect(await readTextIfPresent(join(dir, "file", "below"))).toBeUndefined();
  expect(await readTextIfPresent(join(dir, "a-directory"))).toBeUndefined();
});

it("readFileEnd reads the final bytes only, and says whether the file holds more", async () => {
  const file = join(dir, "log");
  await writeFile(file, "0123456789");
  const cut = await readFileEnd(file, 4);
  expect([cut?.bytes.toString("utf8"), cut?.cut, cut?.size]).toEqual(["6789", true, 10]);
  const whole = await readFileEnd(file, 64);
  expect([whole?.bytes.toString("utf8"), whole?.cut, whole?.size]).toEqual(["0123456789", false, 10]);
  expect(await readFileEnd(join(dir, "missing"), 4)).toBeUndefined();
});
