/**
 * `readTextIfPresent`: a file's exact text, or undefined for anything it cannot read.
 * `readFileEnd`: the final bytes of a file, whatever its length, and whether it holds more.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { errorCode, readFileEnd, readSmallFile, readTextIfPresent } from "../../src/fs/probe.ts";
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

it("readSmallFile: missing only for a file that is not there, an error through a file, the text otherwise", async () => {
  await writeFile(join(dir, "record.json"), '{"a":1}\n');
  await writeFile(join(dir, "file"), "x");
  expect(readSmallFile(join(dir, "record.json"))).toEqual({ code: "ok", text: '{"a":1}\n' });
  expect(readSmallFile(join(dir, "missing.json"))).toEqual({ code: "missing" });
  // Directories that do not exist yet (a store nobody wrote to): still missing.
  expect(readSmallFile(join(dir, "no", "such", "dir", "x.json"))).toEqual({ code: "missing" });
  // A path through a file is ENOTDIR, which a stat without throwing would also call absent.
  const through = readSmallFile(join(dir, "file", "below", "x.json"));
  expect(through.code).toBe("error");
  expect(through.code === "error" ? errorCode(through.error) : undefined).toBe("ENOTDIR");
  // A directory cannot be read as a record.
  await mkdir(join(dir, "a-directory"));
  const directory = readSmallFile(join(dir, "a-directory"));
  expect(directory.code === "error" ? errorCode(directory.error) : directory.code).toBe("EISDIR");
});
