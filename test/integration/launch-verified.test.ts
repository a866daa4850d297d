/**
 * The launch on shells that lose typed input and terminals that cut long lines, through the real
 * transaction and relaunch (real git, the Herdr double, a private tmux server, the stand-in Pi
 * started by the real launcher):
 * - Herdr, a shell whose start-up runs builtins and throws away what was typed before its prompt (so
 *   `shell_pid` readiness proves nothing), lasting until the first line was typed into it (so the
 *   loss is certain, however long the fork took): the launcher is typed once more, and the child
 *   runs; exactly two `pane run` calls, both the short line. (The e2e runs the same with a fixed
 *   1.5 s start-up and the real Pi.)
 * - Herdr with a 1024-byte line limit and the worktree under a deep directory (the old one-line
 *   command would be cut there): the child runs with every flag.
 * - Herdr, a shell that never looks ready: the wait backs off (50 ms doubling to 500 ms), so it
 *   asks the server a bounded number of times.
 * - tmux: the window runs the launcher itself (nothing typed); after the child exits the pane is
 *   the user's shell (the swallowing one); a relaunch into it types once more when the first line is
 *   lost, and the child runs.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ManifestStore } from "../../src/manifest/store.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envInvocation, launchCommandFor } from "../../src/child/launch-command.ts";
import { MAX_DIRECT_LINE } from "../../src/child/launcher-file.ts";
import { HerdrMultiplexer } from "../../src/mux/herdr/herdr.ts";
import { relaunchHandoff } from "../../src/relaunch/relaunch.ts";
import {
  createHerdrRecoveryRig,
  createRecoveryRig,
  isProcessAlive,
  killAndWait,
  runningManifest,
  STAND_IN_PI,
  type HerdrRecoveryRig,
  type RecoveryRig,
} from "../support/recovery-rig.ts";
import { NODE_BIN } from "../support/pi.ts";
import { waitFor } from "../support/tmux.ts";

/** Lets the swallowing start-up end once the launch line of `branch` was typed (and so lost). */
async function releaseAfterFirstTyping(store: ManifestStore, branch: string, release: string): Promise<void> {
  await waitFor(
    async () =>
      (await store.list()).some((e) => e.ok && e.manifest.branch === branch && (e.manifest.launch?.typed ?? 0) >= 1),
    {
      timeoutMs: 60_000,
      description: `the first typing for ${branch}`,
    },
  );
  writeFileSync(release, "");
}

function cmdline(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1);
}

describe("a launch on Herdr whose shell swallows early input and cuts long lines", () => {
  let rig: HerdrRecoveryRig;
  let dir: string;
  let release: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "phw-swallow-"));
    release = join(dir, "shell-up");
    rig = await createHerdrRecoveryRig({ shellSwallowUntil: release, lineCap: 1024 });
  });
  afterAll(async () => {
    await rig?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("types the short line again after the start-up swallowed it, and the child runs", async () => {
    rig.herdr.clearCalls();
    const handoff = rig.handoff("feat/swallowed", { focus: false });
    await releaseAfterFirstTyping(rig.store, "feat/swallowed", release).finally(() => writeFileSync(release, ""));
    const manifest = runningManifest(await handoff);
    const paneId = manifest.mux.kind === "herdr" ? manifest.mux.paneId : undefined;
    const typed = rig.herdr
      .calls()
      .filter((call) => call.argv[0] === "pane" && call.argv[1] === "run" && call.argv[2] === paneId);
    const line = manifest.child.command ?? "";
    expect(typed.map((call) => call.argv.slice(3).join(" "))).toEqual([line, line]);
    expect(manifest.launch).toMatchObject({ typed: 2, startedAt: expect.any(String) });
    expect(Buffer.byteLength(line)).toBeLessThanOrEqual(MAX_DIRECT_LINE);
    expect(manifest.child.confirmedBy).toBe("ack");
    expect(isProcessAlive(manifest.child.pid ?? 0)).toBe(true);
    await killAndWait(manifest.child.pid ?? 0);
  });

  it("starts the child with every flag when the worktree is deep enough that the old line would be cut", async () => {
    // As deep as Pi's session dir allows (the worktree path, flattened, is one file name: <= 255
    // bytes), with a mirrored extension deeper still, as installed packages often are.
    const deepRoot = join(
      rig.repo.dir,
      ...Array.from({ length: 4 }, (_, i) => `deep-directory-level-${i}-${"x".repeat(26)}`),
    );
    const extensionDir = join(deepRoot, ...Array.from({ length: 8 }, (_, i) => `node_modules-${i}-${"y".repeat(40)}`));
    mkdirSync(extensionDir, { recursive: true });
    const extension = join(extensionDir, "extension.ts");
    rig.env.PI_HANDOFF_WORKTREE_ROOT = deepRoot;
    try {
      const manifest = runningManifest(
        await rig.handoff("feat/deep", { focus: false, extraPiArgs: ["--extension", extension, "--offline"] }),
      );
      expect(manifest.worktree.path.startsWith(deepRoot)).toBe(true);
      // The one-line command this launch replaces would not fit in the terminal's line.
      const derived = launchCommandFor(manifest, {
        piCommand: [NODE_BIN, STAND_IN_PI],
        agentDir: rig.agentDir,
        env: rig.env,
      });
      if (!derived.ok) throw new Error(derived.message);
      expect(Buffer.byteLength(`cd ${manifest.worktree.path} && ${envInvocation(derived.command)}`)).toBeGreaterThan(
        1024,
      );
      const pid = manifest.child.pid ?? 0;
      expect(JSON.parse(readFileSync(`${manifest.child.sessionFile}.argv.json`, "utf8"))).toEqual([
        NODE_BIN,
        STAND_IN_PI,
        "--session",
        manifest.child.sessionFile,
        "--model",
        "faux/faux-1",
        "--thinking",
        "medium",
        "--extension",
        extension,
        "--offline",
      ]);
      expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toEqual(
        expect.arrayContaining([`PI_HANDOFF_ID=${manifest.id}`, "HERDR_AGENT=pi"]),
      );
      await killAndWait(pid);
    } finally {
      delete rig.env.PI_HANDOFF_WORKTREE_ROOT;
    }
  });
});

describe("the shell wait's polling budget on Herdr", () => {
  let rig: HerdrRecoveryRig;

  beforeAll(async () => {
    // A start-up job that holds the foreground longer than the wait: the shell never looks ready.
    rig = await createHerdrRecoveryRig({ shellDelayMs: 30_000 });
  });
  afterAll(async () => {
    await rig?.cleanup();
  });

  it("backs off from 50 ms to 500 ms: a 6 s wait asks Herdr about 16 times, not a hundred", async () => {
    const pane = await rig.herdr.openWorkspace(rig.repo.root, "slow");
    const location = {
      kind: "herdr" as const,
      socketPath: rig.herdr.socketPath,
      workspaceId: pane.workspaceId,
      paneId: pane.paneId,
    };
    rig.herdr.clearCalls();
    const mux = new HerdrMultiplexer({
      herdrBin: rig.herdr.binPath,
      socketPath: rig.herdr.socketPath,
      env: rig.herdr.clientEnv,
    });
    const waited = await mux.waitForShell(location, { timeoutMs: 6_000 });
    expect(waited).toMatchObject({ ok: false, code: "shell_not_ready" });
    const polls = rig.herdr.calls().filter((call) => call.argv[0] === "pane" && call.argv[1] === "process-info");
    // 50 + 100 + 200 + 400 + 500 x 10 + the rest: at most 16 polls in 6 s (fixed 50 ms: up to 120).
    // At least one poll after the first, however long the double's Node client takes to answer.
    expect(polls.length).toBeGreaterThanOrEqual(2);
    expect(polls.length).toBeLessThanOrEqual(16);
    // From the fifth poll on, each next one starts at least 500 ms after the last one started
    // (its answer, then a 500 ms sleep), however fast the client; the last gap may be cut by the deadline.
    const starts = polls.map((call) => Date.parse(call.at));
    const gaps = starts.slice(1).map((start, index) => ({ after: index + 1, ms: start - (starts[index] ?? 0) }));
    const backedOff = gaps.filter((gap) => gap.after >= 5 && gap.after < polls.length - 1);
    expect(backedOff.filter((gap) => gap.ms < 500)).toEqual([]);
  });

  it("a last poll the deadline cut short does not turn a shell that was not ready into Herdr's timeout", async () => {
    const pane = await rig.herdr.openWorkspace(rig.repo.root, "cut-short");
    const location = {
      kind: "herdr" as const,
      socketPath: rig.herdr.socketPath,
      workspaceId: pane.workspaceId,
      paneId: pane.paneId,
    };
    // Each answer takes 5 s. The first poll has the whole 10 s wait (a 30 s call bound: room for a
    // slow Node client) and answers "not ready"; every later one starts after 5 s of the 10 s wait,
    // so less than 5 s is left for it: it cannot answer, and the deadline, not Herdr, cut it short.
    rig.herdr.setFaults({ "pane process-info": { delayMs: 5_000 } });
    try {
      const mux = new HerdrMultiplexer({
        herdrBin: rig.herdr.binPath,
        socketPath: rig.herdr.socketPath,
        env: rig.herdr.clientEnv,
        timeoutMs: 30_000,
      });
      const waited = await mux.waitForShell(location, { timeoutMs: 10_000 });
      expect(waited).toMatchObject({ ok: false, code: "shell_not_ready" });
      const message = "message" in waited ? waited.message : "";
      expect(message).toMatch(
        new RegExp(
          `^The shell in Herdr pane ${pane.paneId} did not become ready within 10 s; Herdr did not answer its last poll in the \\d(?:\\.\\d)? s left\\.$`,
        ),
      );
    } finally {
      rig.herdr.clearFaults();
    }
  });
});

describe("a launch on tmux whose shell swallows early input", () => {
  let rig: RecoveryRig;
  let dir: string;
  let release: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "phw-swallow-"));
    release = join(dir, "shell-up");
    const rcFile = join(dir, "swallow-rc.sh");
    // Builtins only (the shell owns the foreground throughout), throwing away whatever is typed,
    // until the test lets it finish starting up.
    writeFileSync(
      rcFile,
      `PS1='$ '\nwhile [ ! -e '${release}' ]; do read -r -t 0.1 -d "" _swallowed; done\nunset _swallowed\n`,
    );
    rig = await createRecoveryRig({ rcFile });
  });
  afterAll(async () => {
    await rig?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs the launcher as the window's command, then types it once more into the lost-input shell on relaunch", async () => {
    const manifest = runningManifest(await rig.handoff("feat/window", { focus: false }));
    // Nothing was typed: the window's own command was the launcher.
    expect(manifest.launch).toMatchObject({ windowCommand: true, typed: 0, startedAt: expect.any(String) });
    const paneId = manifest.mux.kind === "tmux" ? (manifest.mux.paneId ?? "") : "";
    const panePid = Number((await rig.tmux.tmux(["display-message", "-p", "-t", paneId, "#{pane_pid}"])).trim());
    expect(cmdline(panePid).slice(0, 3)).toEqual(["/bin/sh", manifest.launch?.launcherFile, "window"]);

    // The child exits: the launcher gives the pane to the user's shell, which starts up slowly.
    await killAndWait(manifest.child.pid ?? 0);
    await waitFor(async () => cmdline(panePid)[0] === "/bin/bash", {
      timeoutMs: 10_000,
      description: "the pane's shell after Pi",
    });
    const relaunching = relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
    await waitFor(async () => ((await rig.read(manifest.id)).launch?.typed ?? 0) >= 1, {
      timeoutMs: 30_000,
      description: "the first typing",
    }).finally(() => writeFileSync(release, ""));
    const relaunched = await relaunching;
    expect(relaunched.code, relaunched.message).toBe("running");
    if (relaunched.code !== "running") return;
    // The first line went into the swallowing start-up; the second one ran the launcher.
    expect(relaunched.manifest.launch).toMatchObject({ typed: 2, startedAt: expect.any(String) });
    expect(relaunched.manifest.child.command).toBe(`sh ${manifest.launch?.launcherFile}`);
    await killAndWait(relaunched.manifest.child.pid ?? 0);
  });
});
