/**
 * Every command a handoff's notice names runs as printed in the user's install: `pi-handoff` where
 * one is on PATH (each README route puts it there), else this copy's launcher by its path.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nextSteps } from "../../src/handoff/next-steps.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { recoveryCommand } from "../../src/recovery/pi-command.ts";
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
});
