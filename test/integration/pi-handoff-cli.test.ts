/**
 * `bin/pi-handoff.mjs` as a real process on real handoffs (real transaction, git, tmux; the
 * stand-in child): bad input, `--json` against the published schema, relaunch, remove that never
 * loses a file or a commit without --force (and lists them first with it), prune, and the
 * launcher itself (Node version check, an installed copy under node_modules).
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nextSteps } from "../../src/handoff/next-steps.ts";
import { InspectReportSchema, InventoryReportSchema, type HandoffReport } from "../../src/inventory/report-schema.ts";
import { ChildReportStore } from "../../src/manifest/child-reports.ts";
import { NODE_BIN, PROJECT_ROOT, recoveryOnPath } from "../support/pi.ts";
import {
  createRecoveryRig,
  isProcessAlive,
  killAndWait,
  runningManifest,
  STAND_IN_PI,
  type RecoveryRig,
} from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";

const BIN = join(PROJECT_ROOT, "bin", "pi-handoff.mjs");

let rig: RecoveryRig;
let cliEnv: Record<string, string>;

interface CliRun {
  status: number;
  stdout: string;
  stderr: string;
}

function cli(
  args: readonly string[],
  options: { node?: string; script?: string; env?: Record<string, string>; cwd?: string } = {},
): CliRun {
  const run = spawnSync(options.node ?? NODE_BIN, [options.script ?? BIN, ...args], {
    cwd: options.cwd ?? rig.repo.root,
    env: options.env ?? cliEnv,
    encoding: "utf8",
    timeout: 120_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
}

function listJson(): HandoffReport[] {
  const run = cli(["list", "--json"]);
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  return InventoryReportSchema.parse(JSON.parse(run.stdout)).handoffs;
}

function reportOf(id: string): HandoffReport {
  const run = cli(["inspect", id, "--json"]);
  expect(run.status).toBe(0);
  return InspectReportSchema.parse(JSON.parse(run.stdout)).handoff;
}

async function windowIds(): Promise<string[]> {
  return (await rig.tmux.tmux(["list-windows", "-a", "-F", "#{window_id}"])).split("\n").filter(Boolean);
}

beforeAll(async () => {
  rig = await createRecoveryRig();
  // `pi` on PATH is the stand-in, as the real `pi` would be: relaunch finds Pi there.
  const binDir = join(rig.repo.dir, "path-bin");
  mkdirSync(binDir);
  symlinkSync(STAND_IN_PI, join(binDir, "pi"));
  cliEnv = {
    ...rig.env,
    // And `pi-handoff`, as every README install route puts it there: inspect's next steps name it so.
    PATH: `${binDir}:${recoveryOnPath(binDir)}:${join(PROJECT_ROOT, "node_modules", ".bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    PI_HANDOFF_CONFIRM_TIMEOUT_MS: "20000",
  };
});
afterAll(async () => {
  await rig?.cleanup();
});

describe("bad input: one sentence on stderr, prefixed once, exit 2", () => {
  it.each([
    [
      ["lst"],
      'pi-handoff: "lst" is not a command: did you mean list (the commands are list, inspect, env, focus, relaunch, remove, prune, land, forecast, rebase, tree, completion; see pi-handoff --help)?',
    ],
    [
      ["frobnicate"],
      'pi-handoff: "frobnicate" is not a command; the commands are list, inspect, env, focus, relaunch, remove, prune, land, forecast, rebase, tree, completion (see pi-handoff --help).',
    ],
    [["list", "--jsno"], 'pi-handoff list: Unknown option "--jsno": did you mean --json (see pi-handoff --help)?'],
    [
      ["remove", "x", "--dryrun"],
      'pi-handoff remove: Unknown option "--dryrun": did you mean --dry-run (see pi-handoff --help)?',
    ],
    [["list", "--bogus"], 'pi-handoff list: Unknown option "--bogus" (see pi-handoff --help).'],
    [["list", "-m", "tmux"], 'pi-handoff list: Unknown option "-m" (see pi-handoff --help).'],
    [["remove", "-f", "some-id"], 'pi-handoff remove: Unknown option "-f" (see pi-handoff --help).'],
    [["list", "--repo"], "pi-handoff list: Option --repo needs a value (see pi-handoff --help)."],
    [["list", "--json=yes"], "pi-handoff list: Option --json takes no value (see pi-handoff --help)."],
    [["list", "extra"], 'pi-handoff list: Unexpected "extra" (see pi-handoff --help).'],
    [
      ["inspect"],
      "pi-handoff inspect: Name the handoff: its id, the start of its id, or its branch (pi-handoff list or /handoffs shows them).",
    ],
    [
      ["relaunch", "../../etc"],
      'pi-handoff relaunch: There is no handoff with id or branch "../../etc" in {agent}/handoff-worktree/manifests.',
    ],
    [
      ["remove", "--force"],
      "pi-handoff remove: Name the handoff: its id, the start of its id, or its branch (pi-handoff list or /handoffs shows them).",
    ],
    [
      ["remove", "no-such-handoff"],
      'pi-handoff remove: There is no handoff with id or branch "no-such-handoff" in {agent}/handoff-worktree/manifests.',
    ],
    [
      ["focus", "no-such-handoff"],
      'pi-handoff focus: There is no handoff with id or branch "no-such-handoff" in {agent}/handoff-worktree/manifests.',
    ],
    [
      ["relaunch", "no-such-handoff"],
      'pi-handoff relaunch: There is no handoff with id or branch "no-such-handoff" in {agent}/handoff-worktree/manifests.',
    ],
    [["list", "--repo", "/"], "pi-handoff list: / is not inside a git repository."],
    [["relaunch", "--all", "--repo", "/"], "pi-handoff relaunch: / is not inside a git repository."],
    [
      ["relaunch", "feat/x", "--all"],
      'pi-handoff relaunch: Give a handoff or --all, not both: "feat/x" was given with --all (see pi-handoff --help).',
    ],
    [
      ["land"],
      "pi-handoff land: Name the handoff: its id, the start of its id, or its branch (pi-handoff list or /handoffs shows them).",
    ],
    [
      ["land", "no-such-handoff"],
      'pi-handoff land: There is no handoff with id or branch "no-such-handoff" in {agent}/handoff-worktree/manifests.',
    ],
    [
      ["land", "x", "--strategy", "octopus"],
      'pi-handoff land: --strategy must be one of ff, rebase, merge, squash, not "octopus".',
    ],
  ])("%j", (args, expected) => {
    const run = cli(args);
    expect(run).toEqual({ status: 2, stdout: "", stderr: `${expected.replace("{agent}", rig.agentDir)}\n` });
  });

  it("names --repo . by its absolute path: outside a repository, and in one with no handoffs", () => {
    const plain = join(rig.repo.dir, "not-a-repo");
    mkdirSync(plain, { recursive: true });
    expect(cli(["list", "--repo", "."], { cwd: plain })).toEqual({
      status: 2,
      stdout: "",
      stderr: `pi-handoff list: ${plain} is not inside a git repository.\n`,
    });
    const other = join(rig.repo.dir, "repo-without-handoffs");
    mkdirSync(other, { recursive: true });
    rig.repo.run(["init", "-q", other]);
    expect(cli(["list", "--repo", "."], { cwd: other })).toEqual({
      status: 0,
      stdout: `No handoffs of the repository at ${other} in ${rig.agentDir}.\n`,
      stderr: "",
    });
  });

  it("keeps its stripped TypeScript beside Node's compile cache, and runs the same from it", () => {
    const cacheDir = join(rig.agentDir, "..", "compile-cache");
    const env = { ...cliEnv, NODE_COMPILE_CACHE: cacheDir };
    const first = cli(["list"], { env });
    const kept = readdirSync(cacheDir, { recursive: true, encoding: "utf8" }).filter(
      (name) => name.includes("pi-handoff-ts") && name.endsWith(".js"),
    );
    expect(kept.length).toBeGreaterThan(10);
    const second = cli(["list"], { env });
    expect(second).toEqual({ ...first, stdout: second.stdout });
    expect(second.stdout.replace(/\d+[smhd] ago/g, "")).toBe(first.stdout.replace(/\d+[smhd] ago/g, ""));
    expect(second.stderr).toBe("");
  });

  it("prints its version with --version", () => {
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as { version: string };
    expect(cli(["--version"])).toEqual({ status: 0, stdout: `pi-handoff ${pkg.version}\n`, stderr: "" });
  });

  it("prints the usage with --help (exit 0) and without a command (exit 2)", () => {
    const help = cli(["--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: pi-handoff <command> \[options\]\n/);
    expect(help.stdout).toContain("remove <handoff> [--force] [--delete-branch] [--dry-run]");
    expect(help.stdout).toContain("focus <handoff>");
    const none = cli([]);
    expect(none.status).toBe(2);
    expect(none.stderr).toBe(help.stdout);
  });
});

describe("the launcher", () => {
  const oldNode = ["/usr/bin/node", "/usr/local/bin/node"].find((path) => {
    if (!existsSync(path)) return false;
    const version = spawnSync(path, ["-p", "process.versions.node"], {
      encoding: "utf8",
      timeout: 10_000,
    }).stdout.trim();
    const [major = 0, minor = 0] = version.split(".").map(Number);
    return major < 22 || (major === 22 && minor < 19);
  });
  // CI's machine has its distribution's older Node (.ci/run installs nodejs when it lacks one):
  // there these two cases must run, never be skipped.
  if (oldNode === undefined && process.env.CI === "true")
    throw new Error(
      "CI runs the too-old-Node cases, and no Node older than 22.19 is at /usr/bin/node or /usr/local/bin/node.",
    );

  it.runIf(oldNode !== undefined)("says in one sentence that Node is too old", () => {
    const version = spawnSync(oldNode ?? "", ["-p", "process.versions.node"], {
      encoding: "utf8",
      timeout: 10_000,
    }).stdout.trim();
    const run = cli(["list"], { node: oldNode ?? "" });
    expect(run).toEqual({
      status: 1,
      stdout: "",
      stderr: `pi-handoff: needs Node.js 22.19 or later (like Pi itself), but this is Node.js ${version}; run it with a newer node.\n`,
    });
  });

  it.runIf(oldNode !== undefined)(
    "node scripts/demo.ts says in one line which Node it needs and that npm run demo gives it",
    () => {
      const version = spawnSync(oldNode ?? "", ["-p", "process.versions.node"], {
        encoding: "utf8",
        timeout: 10_000,
      }).stdout.trim();
      const run = spawnSync(oldNode ?? "", [join(PROJECT_ROOT, "scripts", "demo.ts"), "--help"], {
        cwd: PROJECT_ROOT,
        encoding: "utf8",
        timeout: 30_000,
      });
      expect([run.status, run.stdout, run.stderr]).toEqual([
        1,
        "",
        `demo: needs Node.js 22.19 or later (like Pi), but this is Node.js ${version}; run npm run demo, which starts it on the project's own Node 22 (the node devDependency, installed by npm install).\n`,
      ]);
    },
  );

  it("npm install on an older Node ends with one line saying why EBADENGINE was warned (the prepare step), and nothing on Node 22", () => {
    const prepare = (agent: string) =>
      spawnSync(NODE_BIN, [join(PROJECT_ROOT, "bin", "node-version.mjs"), "--npm"], {
        encoding: "utf8",
        timeout: 30_000,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", npm_config_user_agent: agent },
      });
    const old = prepare("npm/11.19.1 node/v20.20.2 linux x64 workspaces/false");
    expect([old.status, old.stdout, old.stderr]).toEqual([
      0,
      "",
      "pi-handoff-worktree: npm runs on Node.js 20.20.2, older than the 22.19 Pi needs, hence the EBADENGINE warnings: npm run demo, npm test and npm run bench use the project's own Node 22 (the node devDependency), and Pi itself needs Node.js 22.19 or later.\n",
    ]);
    const current = prepare("npm/11.19.1 node/v22.23.3 linux x64 workspaces/false");
    expect([current.status, current.stdout, current.stderr]).toEqual([0, "", ""]);
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.prepare).toBe("node bin/node-version.mjs --npm");
  });

  it("runs as an executable through its shebang", () => {
    const run = spawnSync(BIN, ["list"], { cwd: rig.repo.root, env: cliEnv, encoding: "utf8", timeout: 60_000 });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("works from an installed copy under node_modules, where Node cannot strip types", () => {
    // The package as npm would install it (package.json "files"), its dependencies beside it.
    const prefix = join(rig.repo.dir, "installed");
    const modules = join(prefix, "node_modules");
    const installed = join(modules, "pi-handoff-worktree");
    mkdirSync(installed, { recursive: true });
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as { files: string[] };
    // A "!" entry leaves a file out of the package; copying a little more changes nothing here.
    for (const entry of [...pkg.files.filter((file) => !file.startsWith("!")), "package.json"])
      cpSync(join(PROJECT_ROOT, entry), join(installed, entry), { recursive: true });
    for (const name of readdirSync(join(PROJECT_ROOT, "node_modules"))) {
      if (name.startsWith(".")) continue;
      symlinkSync(join(PROJECT_ROOT, "node_modules", name), join(modules, name));
    }
    // Node alone refuses the TypeScript under node_modules; the launcher does not.
    const native = spawnSync(NODE_BIN, [join(installed, "src", "cli", "cli.ts")], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(native.status).not.toBe(0);
    expect(native.stderr).toContain("ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING");
    const run = cli(["list", "--json"], { script: join(installed, "bin", "pi-handoff.mjs") });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(InventoryReportSchema.parse(JSON.parse(run.stdout)).agentDir).toBe(rig.agentDir);
  });
});

describe("list and inspect", () => {
  it("list --json and inspect --json match the published schema and reality", async () => {
    const running = runningManifest(await rig.handoff("cli/listed"));
    const closed = runningManifest(await rig.handoff("cli/closed", { focus: false }));
    if (closed.mux.kind !== "tmux") throw new Error("expected tmux");
    await rig.tmux.tmux(["kill-window", "-t", closed.mux.windowId ?? ""]);
    await waitFor(() => !isProcessAlive(closed.child.pid ?? 0), {
      timeoutMs: 10_000,
      description: "the closed window's child to exit",
    });

    const handoffs = listJson();
    const listed = handoffs.find((handoff) => handoff.id === running.id);
    const gone = handoffs.find((handoff) => handoff.id === closed.id);
    expect(listed?.status).toEqual({
      code: "child_running",
      writers: [{ pid: running.child.pid, evidence: ["recorded_pid", "marker", "cwd"] }],
    });
    expect(gone?.status).toEqual({ code: "workspace_closed" });
    expect(gone?.actions).toEqual(["relaunch", "remove"]);

    const inspected = cli(["inspect", running.id, "--json"]);
    const parsed = InspectReportSchema.parse(JSON.parse(inspected.stdout));
    expect(parsed.manifest).toEqual(JSON.parse(readFileSync(rig.store.pathFor(running.id), "utf8")));
    expect(parsed.handoff).toEqual(listed);
    // Where the real handoff spent its time: every step it ran, then the launch until the child's acknowledgement.
    expect(parsed.stepTimes?.steps.map((step) => step.step)).toEqual(["preconditions", "manifest", "worktree", "fork"]);
    expect(parsed.stepTimes?.launchToAckMs).toEqual(expect.any(Number));
    expect(cli(["inspect", running.id]).stdout).toMatch(
      /\n {2}steps: {9}preconditions [\d.]+ m?s, manifest [\d.]+ m?s, worktree [\d.]+ m?s, fork [\d.]+ m?s, launch→ack [\d.]+ m?s\n/,
    );

    const table = cli(["list"]);
    expect(table.status).toBe(0);
    const [header, ...rows] = table.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^ID +STATUS +CHILD +BRANCH +FLAGS +FORECAST +ACTIONS$/);
    // CHILD: the child's state and the time in it (inventory/status.ts).
    expect(rows.find((row) => row.startsWith(running.id))).toMatch(
      new RegExp(
        `^${running.id} +child running \\(pid ${running.child.pid}\\) +idle \\d+[smhd]( \\d+m)? +cli/listed +- +nothing to land +focus \\(quit its Pi to remove\\)$`,
      ),
    );
    expect(rows.find((row) => row.startsWith(closed.id))).toMatch(
      new RegExp(
        `^${closed.id} +window closed, no Pi +exited \\d+[smhd]( \\d+m)? +cli/closed +- +nothing to land +relaunch,remove$`,
      ),
    );

    const text = cli(["inspect", closed.id]);
    expect(text.stdout).toContain(
      `Handoff ${closed.id}\n  status:        window closed, no Pi (manifest state running)\n`,
    );
    expect(text.stdout).toContain(
      `  next:          pi-handoff relaunch ${closed.id} | pi-handoff remove ${closed.id}\n`,
    );
    // Its window is closed: focus says so, naming the command that reopens it.
    expect(cli(["focus", closed.id])).toEqual({
      status: 1,
      stdout: "",
      stderr: `pi-handoff focus: The window of handoff ${closed.id} is closed, so there is nothing to switch to; pi-handoff relaunch ${closed.id} reopens it and starts its Pi.\n`,
    });

    // --repo: another repository has none of these handoffs.
    const other = join(rig.repo.dir, "other-repo");
    mkdirSync(other);
    rig.repo.run(["init", "-q", other]);
    const elsewhere = cli(["list", "--repo", other, "--json"]);
    expect(InventoryReportSchema.parse(JSON.parse(elsewhere.stdout)).handoffs).toEqual([]);
    const here = cli(["list", "--repo", rig.repo.root, "--json"]);
    expect(InventoryReportSchema.parse(JSON.parse(here.stdout)).handoffs.map((h) => h.id)).toContain(running.id);
    await killAndWait(running.child.pid ?? 0);
  });
});

describe("naming a handoff", () => {
  it("takes a unique start of the id or the branch, and refuses an ambiguous name listing the candidates", async () => {
    const one = runningManifest(await rig.handoff("names/one", { focus: false }));
    const two = runningManifest(await rig.handoff("names/two", { focus: false }));
    for (const name of [one.id, one.id.slice(0, -3), "names/one"]) {
      const run = cli(["inspect", name, "--json"]);
      expect(run.stderr, name).toBe("");
      expect(InspectReportSchema.parse(JSON.parse(run.stdout)).handoff.id, name).toBe(one.id);
    }
    // Both ids start with the same timestamp-ish prefix: the shortest shared start names both.
    let shared = 0;
    while (one.id[shared] === two.id[shared]) shared++;
    const prefix = one.id.slice(0, shared);
    const ambiguous = cli(["inspect", prefix]);
    expect(ambiguous.status).toBe(2);
    expect(ambiguous.stdout).toBe("");
    expect(ambiguous.stderr).toMatch(
      new RegExp(`^pi-handoff inspect: "${prefix}" names \\d+ handoffs \\(.*; give more of the id\\.\n$`),
    );
    expect(ambiguous.stderr).toContain(`${one.id} (names/one)`);
    expect(ambiguous.stderr).toContain(`${two.id} (names/two)`);
    await killAndWait(one.child.pid ?? 0);
    await killAndWait(two.child.pid ?? 0);
  });

  it("inspect shows the task and the child's last report as text, terminal escapes removed; --json has the report too", async () => {
    const manifest = runningManifest(
      await rig.handoff("cli/told", { focus: false, task: "fix \u001b[31mthe\u001b[0m tests\nthen report back" }),
    );
    const reports = ChildReportStore.forAgentDir(rig.agentDir);
    const report = {
      handoffId: manifest.id,
      kind: "report",
      branch: "cli/told",
      parentSessionFile: rig.parentSessionFile,
      commits: [],
    } as const;
    await reports.write({ ...report, text: "an early word" }, new Date("2026-01-01T00:00:00.000Z"));
    const last = await reports.write(
      { ...report, text: "fixed them", done: "the tests", left: "the docs" },
      new Date("2026-01-01T00:05:00.000Z"),
    );
    const text = cli(["inspect", manifest.id]).stdout;
    const lines = text.split("\n");
    const from = lines.findIndex((line) => line.startsWith("  task:"));
    expect(lines.slice(from, from + 6)).toEqual([
      "  task:          fix the tests",
      "                 then report back",
      "  last report:   sent 2026-01-01T00:05:00.000Z (0 commits on the branch then)",
      "                 fixed them",
      "                 Done: the tests",
      "                 Left: the docs",
    ]);
    expect(text).not.toContain("\u001b");
    const json = InspectReportSchema.parse(JSON.parse(cli(["inspect", manifest.id, "--json"]).stdout));
    expect(json.lastReport).toEqual({ ...last, written: undefined });
    await killAndWait(manifest.child.pid ?? 0);
  });

  it("names an unreadable manifest's path once, in list and in inspect", async () => {
    const id = "20000101-000000-broken-beef";
    const path = rig.store.pathFor(id);
    writeFileSync(path, "{ not json");
    try {
      const listed = cli(["list"]);
      const line = listed.stdout.split("\n").find((text) => text.includes(path)) ?? "";
      expect(line.split(path).length - 1).toBe(1);
      expect(line).toMatch(/^Unreadable: Manifest file .* is not valid JSON/);
      const inspected = cli(["inspect", id]);
      expect(inspected.status).toBe(1);
      expect(inspected.stderr.split(path).length - 1).toBe(1);
      expect(inspected.stderr).toMatch(
        new RegExp(
          `^pi-handoff inspect: Manifest file ${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not valid JSON`,
        ),
      );
    } finally {
      rmSync(path);
    }
  });
});

describe("every next step printed is a command that runs", () => {
  /** `pi-handoff <command> [<id>]` as printed in a sentence. */
  const suggested = (text: string): string[][] =>
    [...text.matchAll(/pi-handoff ([a-z]+)(?: ([a-z0-9][a-z0-9-]{2,80}))?/g)].map((m) =>
      m.slice(1).filter((w): w is string => w !== undefined),
    );

  it("inspect's next: focus, relaunch and remove, each run as printed", async () => {
    const manifest = runningManifest(await rig.handoff("next/inspect", { focus: false }));
    if (manifest.mux.kind !== "tmux") throw new Error("expected tmux");
    await killAndWait(manifest.child.pid ?? 0);
    const text = cli(["inspect", manifest.id]).stdout;
    const nextLine = text.split("\n").find((line) => line.startsWith("  next:")) ?? "";
    const commands = suggested(nextLine);
    expect(commands).toEqual([
      ["relaunch", manifest.id],
      ["focus", manifest.id],
      ["remove", manifest.id],
    ]);
    for (const command of commands) {
      const run = cli(command);
      expect(
        run.stderr.split("\n").filter((line) => line.startsWith("pi-handoff")),
        command.join(" "),
      ).toEqual([]);
      expect(run.status, command.join(" ")).toBe(0);
      if (command[0] === "relaunch") await killAndWait((await rig.read(manifest.id)).child.pid ?? 0);
      if (command[0] === "focus") {
        expect(run.stdout).toBe(
          `Switched to handoff ${manifest.id}: tmux window ${manifest.mux.windowId} (pane ${manifest.mux.paneId}).\n`,
        );
        const active = (
          await rig.tmux.tmux([
            "list-windows",
            "-t",
            manifest.mux.sessionId ?? "",
            "-F",
            "#{window_active} #{window_id}",
          ])
        ).split("\n");
        expect(active).toContain(`1 ${manifest.mux.windowId}`);
      }
    }
    expect((await rig.read(manifest.id)).state).toBe("removed");
    // Removed now: focus says why, in one sentence.
    const closed = cli(["focus", manifest.id]);
    expect(closed).toEqual({
      status: 1,
      stdout: "",
      stderr: `pi-handoff focus: Handoff ${manifest.id} was removed, so it has no window to switch to.\n`,
    });
  });

  it("the notice of a handoff that failed after its worktree: inspect, relaunch and remove, each run as printed", async () => {
    const outcome = await rig.handoff("next/failed", { focus: false, faultAt: "launch" });
    if (outcome.code !== "failed") throw new Error(`expected a failure, got ${outcome.code}`);
    const commands = suggested(nextSteps(outcome, { env: {} }).join("\n"));
    const id = outcome.manifest.id;
    expect(commands).toEqual([
      ["inspect", id],
      ["relaunch", id],
      ["remove", id],
    ]);
    for (const command of commands) {
      const run = cli(command);
      expect(run.status, `${command.join(" ")}: ${run.stderr}`).toBe(0);
      if (command[0] === "relaunch") await killAndWait((await rig.read(id)).child.pid ?? 0);
    }
    expect((await rig.read(id)).state).toBe("removed");
  });
});

describe("relaunch", () => {
  it("refuses while the child runs, and starts the Pi found on PATH once it died", async () => {
    const manifest = runningManifest(await rig.handoff("cli/relaunch", { focus: false }));
    const firstPid = manifest.child.pid ?? 0;
    const refused = cli(["relaunch", manifest.id, "--no-focus"]);
    expect(refused).toEqual({
      status: 1,
      stdout: "",
      stderr: `pi-handoff relaunch: Handoff ${manifest.id} already has a live Pi on its session (pid ${firstPid}), so no second one was started.\n`,
    });

    await killAndWait(firstPid);
    // Every command's git and multiplexer waits are checked first: an unusable one is named.
    expect(cli(["list"], { env: { ...cliEnv, PI_HANDOFF_GIT_TIMEOUT_MS: "5s" } })).toEqual({
      status: 1,
      stdout: "",
      stderr:
        'pi-handoff list: PI_HANDOFF_GIT_TIMEOUT_MS is "5s", but it must be a whole number of milliseconds from 1000 to 3600000 (such as 60000); set it so, or unset it.\n',
    });
    // Its waits come from PI_HANDOFF_*_TIMEOUT_MS: an unusable one is named, and nothing starts.
    expect(
      cli(["relaunch", manifest.id, "--no-focus"], { env: { ...cliEnv, PI_HANDOFF_CONFIRM_TIMEOUT_MS: "abc" } }),
    ).toEqual({
      status: 1,
      stdout: "",
      stderr:
        'pi-handoff relaunch: PI_HANDOFF_CONFIRM_TIMEOUT_MS is "abc", but it must be a whole number of milliseconds from 100 to 600000 (such as 45000); set it so, or unset it.\n',
    });
    expect((await rig.read(manifest.id)).child.pid).toBe(firstPid);
    const relaunched = cli(["relaunch", manifest.id, "--no-focus"]);
    const after = await rig.read(manifest.id);
    const secondPid = after.child.pid ?? 0;
    expect(relaunched.status).toBe(0);
    expect(relaunched.stdout).toBe(
      `Relaunched handoff ${manifest.id}: Pi pid ${secondPid} runs on ${after.child.sessionFile} in tmux window ${manifest.mux.kind === "tmux" ? manifest.mux.windowId : "?"} (pane ${manifest.mux.kind === "tmux" ? manifest.mux.paneId : "?"}).\n`,
    );
    expect(relaunched.stderr).toBe(
      "launch: Waiting for the new pane's shell\nlaunch: Starting Pi in the new pane\nconfirm: Waiting for the new Pi to start\n",
    );
    expect(isProcessAlive(secondPid)).toBe(true);
    // The Pi on PATH (a node script) runs with the CLI's own Node: the launcher's params say so.
    expect(readFileSync(rig.store.pathFor(manifest.id).replace(/\.json$/, ".launch.params"), "utf8")).toContain(
      ` ${NODE_BIN} ${STAND_IN_PI} --session `,
    );
    await killAndWait(secondPid);
  });
});

describe("remove never loses a file or a commit without --force", () => {
  it("refuses uncommitted files, lists them, then deletes exactly those with --force", async () => {
    const manifest = runningManifest(await rig.handoff("cli/dirty", { focus: false }));
    const worktree = manifest.worktree.path;

    const whileRunning = cli(["remove", manifest.id]);
    expect(whileRunning.status).toBe(1);
    expect(whileRunning.stderr).toBe(
      `pi-handoff remove: Handoff ${manifest.id} still has a live Pi (pid ${manifest.child.pid}); quit it first, then remove the handoff.\n`,
    );
    await killAndWait(manifest.child.pid ?? 0);

    writeFileSync(join(worktree, "README.md"), "# edited\n");
    writeFileSync(join(worktree, "draft.txt"), "not committed\n");
    const before = readFileSync(rig.store.pathFor(manifest.id), "utf8");
    const refused = cli(["remove", manifest.id]);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toBe(
      [
        `The worktree ${worktree} would be deleted and its window closed.`,
        "Would be lost for good (2 files with uncommitted work):",
        "  modified   README.md",
        "  untracked  draft.txt",
        "Branch cli/dirty would be kept.",
        "",
      ].join("\n"),
    );
    expect(refused.stderr).toBe(
      `pi-handoff remove: Handoff ${manifest.id} has 2 uncommitted, untracked or ignored files; nothing was removed (add --force to remove it anyway: the files listed are deleted).\n`,
    );
    expect(readFileSync(join(worktree, "draft.txt"), "utf8")).toBe("not committed\n");
    expect(readFileSync(join(worktree, "README.md"), "utf8")).toBe("# edited\n");
    expect(readFileSync(rig.store.pathFor(manifest.id), "utf8")).toBe(before);
    if (manifest.mux.kind !== "tmux") throw new Error("expected tmux");
    expect(await windowIds()).toContain(manifest.mux.windowId);

    // --dry-run shows the same plan, changes nothing, and says what the real run would do.
    const dry = cli(["remove", manifest.id, "--dry-run"]);
    expect(dry).toEqual({
      status: 1,
      stdout: refused.stdout,
      stderr: refused.stderr.replace("pi-handoff remove: ", "pi-handoff remove: Dry run: "),
    });
    const dryForced = cli(["remove", manifest.id, "--force", "--dry-run"]);
    expect(dryForced).toEqual({ status: 0, stdout: `${refused.stdout}Dry run: nothing was removed.\n`, stderr: "" });
    expect(readFileSync(join(worktree, "draft.txt"), "utf8")).toBe("not committed\n");
    expect(readFileSync(rig.store.pathFor(manifest.id), "utf8")).toBe(before);
    expect(await windowIds()).toContain(manifest.mux.windowId);

    const forced = cli(["remove", manifest.id, "--force"]);
    expect(forced.status).toBe(0);
    // What is lost comes first, said as what is about to happen, then what was done.
    expect(forced.stdout).toBe(
      `${refused.stdout.replace(" would be deleted", " will be deleted").replace("Would be lost", "Will be lost").replace(" would be kept", " will be kept")}Removed handoff ${manifest.id}: deleted worktree ${worktree}, kept branch cli/dirty.\n`,
    );
    expect(existsSync(worktree)).toBe(false);
    expect(await windowIds()).not.toContain(manifest.mux.windowId);
    expect(rig.repo.run(["rev-parse", "refs/heads/cli/dirty"])).toBe(manifest.base.sha);
    const removed = await rig.read(manifest.id);
    expect(removed.state).toBe("removed");
    expect(removed.gitState).toMatchObject({
      head: manifest.base.sha,
      dirtyFiles: ["README.md"],
      untrackedFiles: ["draft.txt"],
      aheadOfBase: 0,
    });
    expect(removed.history.at(-1)?.note).toBe(
      `removed with pi-handoff: deleted worktree ${worktree}, kept branch cli/dirty`,
    );
  });

  it("refuses unmerged commits, keeps an unmerged branch even with --force --delete-branch", async () => {
    const manifest = runningManifest(await rig.handoff("cli/unmerged", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    const tip = rig.repo.commitFile("feature.txt", "feature\n", "add the feature", { cwd: manifest.worktree.path });
    // A commit to land: list and inspect offer land as the next step.
    expect(reportOf(manifest.id).actions).toEqual(["relaunch", "focus", "land", "remove"]);
    const row =
      cli(["list"])
        .stdout.split("\n")
        .find((line) => line.startsWith(manifest.id)) ?? "";
    expect(row).toMatch(/ relaunch,focus,land,remove$/);
    expect(cli(["inspect", manifest.id]).stdout).toContain(`pi-handoff land ${manifest.id} | pi-handoff remove`);

    const refused = cli(["remove", manifest.id, "--delete-branch"]);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toContain(
      `1 commit not merged into HEAD would stay on branch cli/unmerged, which would be kept:\n  ${tip.slice(0, 12)} add the feature\n`,
    );
    // Only what applies is said: a commit, and no files.
    expect(refused.stderr).toBe(
      `pi-handoff remove: Handoff ${manifest.id} has 1 commit not merged into HEAD; nothing was removed (add --force to remove it anyway: the commit stays on branch cli/unmerged).\n`,
    );
    expect(existsSync(manifest.worktree.path)).toBe(true);

    const forced = cli(["remove", manifest.id, "--force", "--delete-branch"]);
    expect(forced.status).toBe(0);
    expect(forced.stdout).toContain(
      "Branch cli/unmerged will be kept: it has 1 unmerged commit, and an unmerged branch is never deleted, even with --force.\n",
    );
    expect(forced.stdout.indexOf("add the feature")).toBeLessThan(forced.stdout.indexOf("Removed handoff"));
    // The commit is still on its branch.
    expect(rig.repo.run(["rev-parse", "refs/heads/cli/unmerged"])).toBe(tip);
    expect(rig.repo.run(["cat-file", "-p", `${tip}:feature.txt`])).toBe("feature");
    expect(existsSync(manifest.worktree.path)).toBe(false);
  });

  it("keeps a branch that existed before the handoff (--existing), even with --delete-branch", async () => {
    rig.repo.run(["branch", "cli/mine"]);
    const before = rig.repo.run(["rev-parse", "refs/heads/cli/mine"]);
    const manifest = runningManifest(await rig.handoff("cli/mine", { focus: false, existing: true }));
    expect(manifest.setup?.existingBranch).toBe(true);
    await killAndWait(manifest.child.pid ?? 0);
    const run = cli(["remove", manifest.id, "--delete-branch"]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      "Branch cli/mine will be kept: it existed before this handoff (--existing), so it is not this handoff's to delete.\n",
    );
    expect(rig.repo.run(["rev-parse", "refs/heads/cli/mine"])).toBe(before);
    expect(existsSync(manifest.worktree.path)).toBe(false);
  });

  it("does not call an --existing handoff's new commits merged, and refuses to remove them without --force", async () => {
    rig.repo.run(["branch", "cli/mine-work"]);
    const manifest = runningManifest(await rig.handoff("cli/mine-work", { focus: false, existing: true }));
    await killAndWait(manifest.child.pid ?? 0);
    const tip = rig.repo.commitFile("work.txt", "work\n", "work in the handoff", { cwd: manifest.worktree.path });
    const inspected = JSON.parse(cli(["inspect", manifest.id, "--json"]).stdout);
    expect(JSON.stringify(inspected)).toContain(tip);
    expect(JSON.stringify(inspected)).not.toMatch(/"merged":\s*true/);
    const refused = cli(["remove", manifest.id]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("has 1 commit not merged into");
    expect(existsSync(manifest.worktree.path)).toBe(true);
  });

  it("deletes a merged branch with --delete-branch", async () => {
    const manifest = runningManifest(await rig.handoff("cli/merged", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    const tip = rig.repo.commitFile("merged.txt", "merged\n", "merge me", { cwd: manifest.worktree.path });
    rig.repo.run(["merge", "-q", "--ff-only", "cli/merged"]);
    const run = cli(["remove", manifest.id, "--delete-branch"]);
    expect(run.stdout).toBe(
      [
        `The worktree ${manifest.worktree.path} will be deleted and its window closed.`,
        "Branch cli/merged will be deleted: everything on it is in HEAD.",
        `Removed handoff ${manifest.id}: deleted worktree ${manifest.worktree.path}, deleted branch cli/merged.`,
        "",
      ].join("\n"),
    );
    expect(run.status).toBe(0);
    expect(rig.repo.run(["branch", "--list", "cli/merged"])).toBe("");
    expect(rig.repo.run(["merge-base", "--is-ancestor", tip, "HEAD"])).toBe("");
  });

  it("drops git's entry for a worktree whose directory vanished, and closes its window", async () => {
    const manifest = runningManifest(await rig.handoff("cli/vanished", { focus: false }));
    if (manifest.mux.kind !== "tmux") throw new Error("expected tmux");
    await killAndWait(manifest.child.pid ?? 0);
    rmSync(manifest.worktree.path, { recursive: true, force: true });
    const run = cli(["remove", manifest.id]);
    expect(run.stdout).toBe(
      [
        `The worktree ${manifest.worktree.path} is not where the handoff made it; git's entry for it will be dropped (a checkout moved by hand elsewhere would lose its link to git: git worktree repair <its new path> first).`,
        "Branch cli/vanished will be kept.",
        `Removed handoff ${manifest.id}: dropped git's entry for ${manifest.worktree.path}, kept branch cli/vanished.`,
        "",
      ].join("\n"),
    );
    expect(run.status).toBe(0);
    expect(rig.repo.run(["worktree", "list", "--porcelain"])).not.toContain(manifest.worktree.path);
    // Its shell sat in the deleted directory: that is still the handoff's window, so it is closed.
    expect(await windowIds()).not.toContain(manifest.mux.windowId);
  });

  it("never closes a recorded window that no longer shows the worktree", async () => {
    const manifest = runningManifest(await rig.handoff("cli/moved-window", { focus: false }));
    if (manifest.mux.kind !== "tmux") throw new Error("expected tmux");
    const pane = manifest.mux.paneId ?? "";
    await killAndWait(manifest.child.pid ?? 0);
    // The person went on using the window elsewhere.
    await rig.tmux.tmux(["send-keys", "-t", pane, "-l", `cd ${rig.repo.dir}`]);
    await rig.tmux.tmux(["send-keys", "-t", pane, "Enter"]);
    await waitFor(
      async () =>
        (await rig.tmux.tmux(["display-message", "-p", "-t", pane, "#{pane_current_path}"])).trim() === rig.repo.dir,
      {
        description: "the pane to leave the worktree",
      },
    );
    const run = cli(["remove", manifest.id]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      `Removed handoff ${manifest.id}: deleted worktree ${manifest.worktree.path}, left its window open (it no longer shows the worktree), kept branch cli/moved-window.\n`,
    );
    expect(existsSync(manifest.worktree.path)).toBe(false);
    expect(await windowIds()).toContain(manifest.mux.windowId);
  });
});

describe("prune", () => {
  it("lists what it would do, changes nothing on --dry-run, then does only what loses nothing", async () => {
    // 1. failed before any worktree existed
    const early = await rig.handoff("prune/early", { targetSession: "$999" });
    if (early.code !== "failed") throw new Error(`expected a failure, got ${early.code}`);
    // 2. worktree deleted by hand, branch merged
    const merged = runningManifest(await rig.handoff("prune/merged", { focus: false }));
    await killAndWait(merged.child.pid ?? 0);
    rig.repo.commitFile("p.txt", "p\n", "pruned work", { cwd: merged.worktree.path });
    rig.repo.run(["merge", "-q", "--ff-only", "prune/merged"]);
    // 3. worktree deleted by hand, branch NOT merged: its commit must survive
    const unmerged = runningManifest(await rig.handoff("prune/unmerged", { focus: false }));
    await killAndWait(unmerged.child.pid ?? 0);
    const keptTip = rig.repo.commitFile("u.txt", "u\n", "unmerged work", { cwd: unmerged.worktree.path });
    // The merged one's window stays open, its shell in the deleted directory: prune closes it.
    if (unmerged.mux.kind === "tmux") await rig.tmux.tmux(["kill-window", "-t", unmerged.mux.windowId ?? ""]);
    for (const manifest of [merged, unmerged]) rmSync(manifest.worktree.path, { recursive: true, force: true });
    if (merged.mux.kind !== "tmux") throw new Error("expected tmux");
    expect(await windowIds()).toContain(merged.mux.windowId);

    const manifestsBefore = readdirSync(rig.store.dir).map((name) => [
      name,
      readFileSync(join(rig.store.dir, name), "utf8"),
    ]);
    const worktreesBefore = rig.repo.run(["worktree", "list", "--porcelain"]);
    const dry = cli(["prune", "--dry-run"]);
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain("Would do (dry run, nothing changed):\n");
    for (const manifest of [merged, unmerged]) {
      const entry = join(rig.repo.root, ".git", "worktrees", manifest.worktree.path.split("/").at(-1) ?? "");
      expect(dry.stdout).toContain(
        `  drop git's entry ${entry} for the vanished worktree ${manifest.worktree.path} of handoff ${manifest.id}\n`,
      );
    }
    expect(dry.stdout).toContain(
      `  mark handoff ${early.manifest.id} removed: it failed before its worktree existed\n`,
    );
    expect(dry.stdout).toContain(
      `  mark handoff ${merged.id} removed: its worktree is gone and branch prune/merged is merged (the branch is kept), and close its window\n`,
    );
    expect(dry.stdout).not.toContain(`mark handoff ${unmerged.id}`);
    expect(readdirSync(rig.store.dir).map((name) => [name, readFileSync(join(rig.store.dir, name), "utf8")])).toEqual(
      manifestsBefore,
    );
    expect(rig.repo.run(["worktree", "list", "--porcelain"])).toBe(worktreesBefore);

    const real = cli(["prune"]);
    expect(real.status).toBe(0);
    expect(real.stdout).toMatch(/Done: (\d+) of \1 actions?\.\n$/);
    expect((await rig.read(early.manifest.id)).state).toBe("removed");
    expect((await rig.read(merged.id)).state).toBe("removed");
    expect(await windowIds()).not.toContain(merged.mux.windowId);
    expect((await rig.read(unmerged.id)).state).toBe("running");
    expect(reportOf(unmerged.id).status).toEqual({ code: "worktree_missing" });
    const worktreesAfter = rig.repo.run(["worktree", "list", "--porcelain"]);
    expect(worktreesAfter).not.toContain(merged.worktree.path);
    expect(worktreesAfter).not.toContain(unmerged.worktree.path);
    // No branch was deleted; the unmerged commit is where it was.
    expect(rig.repo.run(["rev-parse", "refs/heads/prune/unmerged"])).toBe(keptTip);
    expect(rig.repo.run(["branch", "--list", "prune/merged"])).toBe("  prune/merged");
    // Removed handoffs are hidden from the list, and counted.
    const table = cli(["list"]);
    expect(table.stdout).not.toContain(merged.id);
    expect(table.stdout).toMatch(/\(\d+ removed handoffs? not shown; pi-handoff list --all shows them\.\)/);
    expect(cli(["list", "--all"]).stdout).toContain(merged.id);
  });
});
