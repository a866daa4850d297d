/**
 * Every command a handoff's notice names runs as printed in the user's install: `pi-handoff` where
 * one is on PATH (each README route puts it there), else this copy's launcher by its path.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nextSteps } from "../../src/handoff/next-steps.ts";
import { environmentNote } from "../../src/handoff/notice.ts";
import { launcherScript, type LauncherFiles } from "../../src/child/launcher-file.ts";
import { choosePorts } from "../../src/ports/reserve.ts";
import { formatRelaunchAll } from "../../src/relaunch/relaunch-all.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { recoveryCommand } from "../../src/child/pi-command.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";

const LAUNCHER = join(PROJECT_ROOT, "bin", "pi-handoff.mjs");

describe("the recovery command a notice names", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) removeTempDir(dir);
  });
  function pathDir(file?: { name: string; mode: number }): string {
    const dir = makeTempDir("phw-recovery-command-");
    dirs.push(dir);
    if (file !== undefined) {
      writeFileSync(join(dir, file.name), "#!/bin/sh\n");
      chmodSync(join(dir, file.name), file.mode);
    }
    return dir;
  }

  it("is pi-handoff where an executable pi-handoff is on PATH", () => {
    const env = { PATH: `${pathDir()}:${pathDir({ name: "pi-handoff", mode: 0o755 })}` };
    expect(recoveryCommand(env, LAUNCHER)).toBe("pi-handoff");
  });

  it("is this copy's launcher, by its path, where none is (a file that cannot run does not count)", () => {
    const env = { PATH: `${pathDir({ name: "pi-handoff", mode: 0o644 })}:${pathDir()}` };
    expect(recoveryCommand(env, LAUNCHER)).toBe(LAUNCHER);
    const spaced = join(pathDir(), "a checkout");
    mkdirSync(spaced);
    expect(recoveryCommand(env, join(spaced, "pi-handoff.mjs"))).toBe(`'${join(spaced, "pi-handoff.mjs")}'`);
    expect(recoveryCommand({}, LAUNCHER)).toBe(LAUNCHER);
  });

  it("runs as printed: the launcher by its path answers like pi-handoff", () => {
    const printed = recoveryCommand({ PATH: pathDir() });
    const ran = spawnSync("sh", ["-c", `${printed} --version`], {
      encoding: "utf8",
      env: { PATH: `${join(NODE_BIN, "..")}:/usr/bin:/bin` },
      timeout: 30_000,
    });
    expect({ status: ran.status, stderr: ran.stderr }).toEqual({ status: 0, stderr: "" });
    expect(ran.stdout).toMatch(/^pi-handoff \d+\.\d+\.\d+\n$/);
  });

  it("is the one every command of the handoff's notice starts with", () => {
    const manifest = {
      id: "20261206-abcdef",
      branch: "feat/x",
      mux: { kind: "tmux", windowId: "@1", paneId: "%1" },
      worktree: { path: "/nowhere/feat-x" },
      child: { sessionFile: "/nowhere/child.jsonl" },
    } as unknown as Manifest;
    const cli = "/opt/phw/bin/pi-handoff.mjs";
    const lines = [
      ...nextSteps({ code: "running", manifest }, { env: {}, cli }),
      ...nextSteps({ code: "launch_unconfirmed", manifest }, { env: {}, cli }),
      ...nextSteps({ code: "failed", manifest }, { env: {}, cli, exists: () => true }),
      ...nextSteps({ code: "failed", manifest }, { env: {}, cli, exists: () => false }),
    ].join("\n");
    expect(lines).not.toMatch(/(?<![/\w-])pi-handoff /);
    expect(lines.match(new RegExp(`${cli} \\w+`, "g"))?.sort()).toEqual(
      [
        `${cli} inspect`,
        `${cli} inspect`,
        `${cli} inspect`,
        `${cli} prune`,
        `${cli} relaunch`,
        `${cli} relaunch`,
        `${cli} remove`,
        `${cli} remove`,
      ].sort(),
    );
  });

  it("is the one every other message that names pi-handoff starts its command with", async () => {
    const cli = "'/opt/a b/pi-handoff.mjs'";
    expect(environmentNote({ id: "h-1", ports: [4100], env: { A: "1" } }, cli)).toBe(
      `Ports reserved for this handoff: 4100 ($PI_HANDOFF_PORT is the first, $PI_HANDOFF_PORTS all of them); run its servers on these, not on the project's usual ports. Variables set for it: A. Everything run for it gets them (postCreate, its Pi and what that Pi runs); ${cli} env h-1 prints them for another shell.`,
    );
    const ports = await choosePorts(
      { count: 1, range: [4100, 4100] },
      new Set([4100]),
      { check: async () => ({ free: true }) },
      { recoveryCommand: cli },
    );
    expect(ports).toMatchObject({ ok: false, message: expect.stringContaining(`(${cli} list)`) });
    expect(formatRelaunchAll({ ok: true, lines: [], scope: { name: "/r" }, skipped: 1, landed: 0 }, cli)).toEqual([
      `Nothing to relaunch: no handoff of /r has a worktree and a session to start a Pi on (1 other handoff with no worktree or session to start a Pi on, left alone; ${cli} list shows it).`,
    ]);
    // The launcher holds it as one quoted word, said where it gives up (test/unit/launcher-file.test.ts runs it).
    const files = { params: "/p", window: "/w", lock: "/l", started: "/s", refused: "/r" } as LauncherFiles;
    const script = launcherScript({
      handoffId: "h-1",
      files,
      ownerPid: 1,
      paramsWaitMs: 1_000,
      recoveryCommand: cli,
      byHand: "sh /x",
    });
    const assignment = script.split("\n").find((line) => line.startsWith("list_handoffs="));
    const value = spawnSync("sh", ["-c", `${assignment}; printf %s "$list_handoffs"`], {
      encoding: "utf8",
      timeout: 10_000,
    });
    expect(value.stdout).toBe(`${cli} list`);
    expect(script.match(/see: [^)]*\)/g)).toEqual(["see: $list_handoffs)", "see: $list_handoffs)"]);
  });

  it("is never written as pi-handoff in the messages of a handoff, its launcher, its ports or relaunch --all", () => {
    // A command named literally would not run where no pi-handoff is on PATH: each takes the recovery command.
    const sources = [
      "src/handoff/notice.ts",
      "src/handoff/transaction.ts",
      "src/child/launcher-file.ts",
      "src/ports/reserve.ts",
      "src/relaunch/relaunch-all.ts",
      "pi-extension/handoff-command.ts",
    ];
    const literal = /(?<![\w/.-])pi-handoff (?:list|inspect|env|relaunch|remove|prune|land|rebase|forecast)\b/;
    const named = sources.flatMap((source) =>
      readFileSync(join(PROJECT_ROOT, source), "utf8")
        .split("\n")
        .filter((line) => !/^\s*(?:\*|\/\/|\/\*\*)/.test(line) && literal.test(line))
        .map((line) => `${source}: ${line.trim()}`),
    );
    expect(named).toEqual([]);
  });
});
