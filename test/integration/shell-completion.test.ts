/**
 * `pi-handoff completion bash|zsh|fish`, loaded into the real shell and asked what it completes:
 * bash through `complete -p` and the function with COMP_WORDS/COMP_CWORD, zsh with its `compadd`
 * recording the words offered, fish through `complete -C`. The commands and options come from the
 * one grammar (src/recovery/command-line.ts), the handoff names from the store, through the real
 * `bin/pi-handoff.mjs` on PATH.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { RECOVERY_COMMANDS, RECOVERY_OPTIONS } from "../../src/recovery/command-line.ts";
import { completionScript, valuedOptions, VALUE_KINDS } from "../../src/recovery/shell-completion.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";

let dir: string;
let env: Record<string, string>;
let scripts: Record<"bash" | "zsh" | "fish", string>;

beforeAll(async () => {
  dir = makeTempDir("phw-completion-");
  const agentDir = join(dir, "agent");
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  // `pi-handoff` on PATH, as an install puts it: the real launcher, run by the project's Node.
  writeFileSync(
    join(bin, "pi-handoff"),
    `#!/bin/sh\nexec '${NODE_BIN}' '${join(PROJECT_ROOT, "bin", "pi-handoff.mjs")}' "$@"\n`,
    { mode: 0o755 },
  );
  symlinkSync(NODE_BIN, join(bin, "node"));
  env = {
    PATH: `${bin}:/usr/bin:/bin`,
    HOME: dir,
    PI_CODING_AGENT_DIR: agentDir,
    XDG_CONFIG_HOME: join(dir, "config"),
  };
  const store = ManifestStore.forAgentDir(agentDir);
  const at = new Date("2026-01-01T00:00:00.000Z");
  for (const [id, branch, removed] of [
    ["20260101-000000-feat-login-0001", "feat/login", false],
    ["20260101-000001-fix-typo-0002", "fix/typo", false],
    ["20260101-000002-old-0003", "feat/old", true],
  ] as const) {
    const manifest = newManifest({
      id,
      now: at,
      branch,
      base: { ref: "HEAD", sha: "a".repeat(40) },
      repo: { root: join(dir, "repo"), commonDir: join(dir, "repo", ".git") },
      parent: { sessionFile: join(dir, "parent.jsonl"), sessionId: "p", leafId: "abcd1234", cwd: join(dir, "repo") },
      worktree: { path: join(dir, "repo.worktrees", branch.replace("/", "-")) },
      mux: { kind: "tmux", socketPath: join(dir, "tmux.sock") },
    });
    await store.create(removed ? { ...manifest, state: "removed" } : manifest);
  }
  scripts = { bash: completionScript("bash"), zsh: completionScript("zsh"), fish: completionScript("fish") };
  for (const [shell, text] of Object.entries(scripts)) writeFileSync(join(dir, `completion.${shell}`), text);
});
afterAll(() => {
  if (dir !== undefined) removeTempDir(dir);
});

function run(shell: string, args: string[]): string {
  const result = spawnSync(shell, args, { env, encoding: "utf8", timeout: 60_000, cwd: dir });
  if (result.status !== 0) throw new Error(`${shell} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

/** What the bash function offers for the words typed (the last one is being completed). */
function bash(words: string[]): string[] {
  const script = [
    `source ${join(dir, "completion.bash")}`,
    `COMP_WORDS=(${words.map((word) => `'${word}'`).join(" ")})`,
    `COMP_CWORD=${words.length - 1}`,
    "_pi_handoff",
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join("\n");
  return run("bash", ["--norc", "--noprofile", "-c", script]).split("\n").filter(Boolean);
}

/** What the zsh function offers: `compadd` records the words after `--` (zsh's own `_files` is not loaded here). */
function zsh(words: string[]): string[] {
  const script = [
    'compadd() { while [[ $1 != -- && $# -gt 0 ]]; do shift; done; shift; printf "%s\\n" "$@"; }',
    `source ${join(dir, "completion.zsh")}`,
    `words=(${words.map((word) => `'${word}'`).join(" ")})`,
    `CURRENT=${words.length}`,
    "_pi_handoff",
  ].join("\n");
  return run("zsh", ["-f", "-c", script]).split("\n").filter(Boolean);
}

/** What fish offers for a command line (`complete -C`), without the descriptions. */
function fish(line: string): string[] {
  const script = `source ${join(dir, "completion.fish")}; complete -C${JSON.stringify(line)}`;
  return run("fish", ["--no-config", "-c", script])
    .split("\n")
    .filter(Boolean)
    .map((entry) => entry.split("\t")[0] ?? "");
}

describe("pi-handoff completion", () => {
  it("is printed by the CLI for each shell, and refuses any other in one sentence", () => {
    const cli = (args: string[]) =>
      spawnSync("pi-handoff", args, { env, encoding: "utf8", timeout: 60_000, cwd: dir, shell: false });
    expect(cli(["completion", "bash"]).stdout).toBe(scripts.bash);
    expect(cli(["completion", "zsh"]).stdout).toBe(scripts.zsh);
    expect(cli(["completion", "fish"]).stdout).toBe(scripts.fish);
    const refused = cli(["completion", "tcsh"]);
    expect([refused.status, refused.stdout, refused.stderr]).toEqual([
      2,
      "",
      'pi-handoff: completion takes one of bash, zsh, fish, not "tcsh" (see pi-handoff --help).\n',
    ]);
    expect(cli(["completion", "handoffs"]).stdout).toBe(
      "fix/typo\n20260101-000001-fix-typo-0002\nfeat/login\n20260101-000000-feat-login-0001\n",
    );
  });

  it("gives every value-taking option of the grammar a kind of value", () => {
    expect(valuedOptions().sort()).toEqual(Object.keys(VALUE_KINDS).sort());
  });

  it("bash: registered for pi-handoff; commands, each command's options, values and handoff names", () => {
    expect(
      run("bash", ["--norc", "--noprofile", "-c", `source ${join(dir, "completion.bash")}; complete -p pi-handoff`]),
    ).toBe("complete -F _pi_handoff pi-handoff\n");
    expect(bash(["pi-handoff", ""])).toEqual([...RECOVERY_COMMANDS, "completion", "--help", "--version"]);
    expect(bash(["pi-handoff", "re"])).toEqual(["relaunch", "remove", "rebase"]);
    expect(bash(["pi-handoff", "remove", "--"])).toEqual([
      ...Object.keys(RECOVERY_OPTIONS.remove).map((name) => `--${name}`),
      "--help",
    ]);
    expect(bash(["pi-handoff", "land", "x", "--strategy", ""])).toEqual(["ff", "rebase", "merge", "squash"]);
    expect(bash(["pi-handoff", "completion", ""])).toEqual(["bash", "zsh", "fish"]);
    // Names from the store, newest first, never a removed one; none once a handoff is named.
    expect(bash(["pi-handoff", "inspect", ""])).toEqual([
      "fix/typo",
      "20260101-000001-fix-typo-0002",
      "feat/login",
      "20260101-000000-feat-login-0001",
    ]);
    expect(bash(["pi-handoff", "land", "--into", "main", "feat/"])).toEqual(["feat/login"]);
    expect(bash(["pi-handoff", "remove", "feat/login", ""])).toEqual([]);
    expect(bash(["pi-handoff", "list", ""])).toEqual([]);
  });

  it("zsh: the same words", () => {
    // zsh matches the typed start itself: every word is handed over.
    expect(zsh(["pi-handoff", "re"])).toEqual([...RECOVERY_COMMANDS, "completion", "--help", "--version"]);
    expect(zsh(["pi-handoff", "remove", "--"])).toEqual([
      ...Object.keys(RECOVERY_OPTIONS.remove).map((name) => `--${name}`),
      "--help",
    ]);
    expect(zsh(["pi-handoff", "land", "x", "--strategy", ""])).toEqual(["ff", "rebase", "merge", "squash"]);
    expect(zsh(["pi-handoff", "focus", ""])).toEqual([
      "fix/typo",
      "20260101-000001-fix-typo-0002",
      "feat/login",
      "20260101-000000-feat-login-0001",
    ]);
    expect(zsh(["pi-handoff", "remove", "feat/login", ""])).toEqual([]);
  });

  it("fish: the same words", () => {
    expect(fish("pi-handoff re")).toEqual(["rebase", "relaunch", "remove"]);
    expect(fish("pi-handoff remove --").sort()).toEqual(
      [...Object.keys(RECOVERY_OPTIONS.remove).map((name) => `--${name}`)].sort(),
    );
    expect(fish("pi-handoff land x --strategy ")).toEqual(["ff", "merge", "rebase", "squash"]);
    expect(fish("pi-handoff relaunch f").sort()).toEqual(["feat/login", "fix/typo"]);
  });
});
