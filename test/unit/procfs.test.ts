import { copyFile, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterEach, describe, expect, it } from "vitest";
import {
  isAlive,
  listDescendants,
  parseStat,
  readComm,
  readCwd,
  readEnvironValue,
  readStat,
} from "../../src/process/procfs.ts";

describe("parseStat", () => {
  it("takes the fields after the last ')' when the command name holds spaces and parentheses", () => {
    const text = "4242 (a) (b c) S 17 4242 4242 34816 4242 4194304 120 0 0 0 1 0 0 0 20 0 1 0 99\n";
    expect(parseStat(text)).toEqual({
      pid: 4242,
      comm: "a) (b c",
      state: "S",
      ppid: 17,
      pgrp: 4242,
      session: 4242,
      ttyNr: 34816,
      tpgid: 4242,
    });
  });

  it("keeps a negative tpgid (no controlling terminal)", () => {
    expect(parseStat("7 (kthreadd) S 2 0 0 0 -1 0")?.tpgid).toBe(-1);
  });

  it("rejects text that is not a stat line", () => {
    expect(parseStat("")).toBeUndefined();
    expect(parseStat("12 (x) S 1 2")).toBeUndefined();
    expect(parseStat("12 x) S 1 2 3 4 5")).toBeUndefined();
  });
});

describe("procfs readers on real processes", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it("reads a process whose name contains ') (' and spaces, and finds it as a descendant", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "phw-procfs-")));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const oddName = join(dir, "x) (y z");
    await copyFile("/bin/sleep", oddName);
    await execa("chmod", ["755", oddName]);
    const child = execa(oddName, ["300"], { cwd: dir, env: { PI_HANDOFF_ID: "h-1" }, reject: false });
    cleanups.push(async () => {
      child.kill("SIGKILL");
      await child;
    });
    const pid = child.pid ?? 0;

    const stat = await readStat(pid);
    expect(stat?.comm).toBe("x) (y z");
    expect(stat?.ppid).toBe(process.pid);
    expect(await readComm(pid)).toBe("x) (y z");
    expect(await readCwd(pid)).toBe(dir);
    expect(await readEnvironValue(pid, "PI_HANDOFF_ID")).toBe("h-1");
    expect(await readEnvironValue(pid, "NOT_SET_ANYWHERE")).toBeUndefined();
    expect(await listDescendants(process.pid)).toContain(pid);
    expect(await isAlive(pid)).toBe(true);

    child.kill("SIGKILL");
    await child;
    expect(await isAlive(pid)).toBe(false);
    expect(await readStat(pid)).toBeUndefined();
    expect(await readComm(pid)).toBeUndefined();
    expect(await readCwd(pid)).toBeUndefined();
  });

  it("tolerates pids that do not exist", async () => {
    expect(await readStat(2 ** 30)).toBeUndefined();
    expect(await listDescendants(2 ** 30)).toEqual([]);
    expect(await isAlive(0)).toBe(false);
    expect(await isAlive(-1)).toBe(false);
  });
});
