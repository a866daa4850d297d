import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildLaunchCommand, currentPiCommand, mirroredPiFlags, shellQuote } from "../../src/launch/launch-command.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "launch-cmd-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Stands in for Pi: records its argv, cwd and the forwarded environment as JSON.
const recorder = join(root, "record.cjs");
writeFileSync(
  recorder,
  `require("fs").writeFileSync(process.env.RECORD_TO, JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd(),
  agentDir: process.env.PI_CODING_AGENT_DIR, handoffId: process.env.PI_HANDOFF_ID, offline: process.env.PI_OFFLINE }));`,
);

const canary = join(root, "canary");
const hostile = [
  "plain",
  "with space",
  "it's",
  'double "quoted"',
  `$(touch ${canary})`,
  `\`touch ${canary}\``,
  `; touch ${canary}`,
  `| touch ${canary} &`,
  "back\\slash",
  "$HOME and ${PATH}",
  "*glob?[x]",
  "ünïcödé-名前-🚀",
  "-leading-dash",
  "!history",
  "~tilde",
  "'",
  "''",
  "",
];

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

describe("buildLaunchCommand", () => {
  it.each(hostile.filter((w) => w !== "" && !w.includes("/")))("starts Pi with exact arguments in a worktree named %j", (name) => {
    const worktree = join(root, `wt ${name}`);
    mkdirSync(worktree, { recursive: true });
    const recordTo = join(root, "record.json");
    rmSync(recordTo, { force: true });
    const command = buildLaunchCommand({
      piCommand: [process.execPath, recorder],
      worktreePath: worktree,
      childSessionFile: join(root, `session ${name}.jsonl`),
      agentDir: join(root, `agent ${name}`),
      handoffId: "20261130-120000-x-abcd",
      model: { provider: "faux", id: `model ${name}` },
      thinkingLevel: "high",
      approve: true,
      extraArgs: ["--extension", join(root, `ext ${name}.ts`)],
      parentEnv: { PI_OFFLINE: "1", SECRET_TOKEN: "do-not-forward" },
    });
    expect(command).not.toContain("do-not-forward");
    execFileSync("bash", ["-c", command], { env: { ...process.env, RECORD_TO: recordTo } });
    const recorded = JSON.parse(readFileSync(recordTo, "utf8"));
    expect(recorded).toEqual({
      argv: [
        "--session",
        join(root, `session ${name}.jsonl`),
        "--model",
        `faux/model ${name}`,
        "--thinking",
        "high",
        "--approve",
        "--extension",
        join(root, `ext ${name}.ts`),
      ],
      cwd: worktree,
      agentDir: join(root, `agent ${name}`),
      handoffId: "20261130-120000-x-abcd",
      offline: "1",
    });
    expect(existsSync(canary)).toBe(false);
  });
});

describe("the child's environment per backend", () => {
  it("inside Herdr the child also gets HERDR_AGENT=pi (Herdr's agent hint); on tmux it does not", () => {
    const input = {
      piCommand: ["pi"],
      worktreePath: root,
      childSessionFile: join(root, "s.jsonl"),
      agentDir: join(root, "agent"),
      handoffId: "20261130-120000-x-abcd",
      model: { provider: "faux", id: "m" },
      approve: false,
      extraArgs: [],
      parentEnv: {},
    };
    expect(buildLaunchCommand({ ...input, muxKind: "herdr" })).toBe(
      `cd ${root} && env PI_CODING_AGENT_DIR=${root}/agent PI_HANDOFF_ID=20261130-120000-x-abcd HERDR_AGENT=pi pi --session ${root}/s.jsonl --model faux/m`,
    );
    expect(buildLaunchCommand({ ...input, muxKind: "tmux" })).not.toContain("HERDR_AGENT");
  });
});

describe("currentPiCommand and mirroredPiFlags", () => {
  it("starts the child with the same node and Pi entry point", () => {
    // npm's .bin/pi is a link without an extension: followed to the real script.
    const link = join(root, "pi-link");
    symlinkSync(recorder, link);
    expect(currentPiCommand(process.execPath, [process.execPath, link, "--x"])).toEqual([process.execPath, recorder]);
    // A single-file build: no script on disk.
    expect(currentPiCommand(process.execPath, [process.execPath, "/$bunfs/root/pi", "--session", "s"])).toEqual([process.execPath]);
    expect(currentPiCommand(process.execPath, [process.execPath])).toEqual([process.execPath]);
  });

  it("mirrors extensions (local paths made absolute) and offline, and nothing else", () => {
    const argv = ["node", "cli.js", "-e", "./ext/a.ts", "--model", "x", "--extension=npm:pkg", "--offline", "-ne", "--extension", "/abs/b.ts", "--", "-e", "no"];
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
