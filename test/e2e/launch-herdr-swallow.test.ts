/**
 * End to end with the real Pi on Herdr where typed input is at risk, as Herdr users report it: every
 * new pane's shell runs builtins for 1.5 s at start-up (its rc file: so it owns the foreground from
 * the first instant and `shell_pid` readiness proves nothing) and throws away what was typed before
 * its prompt; on the double the terminal also keeps only the first 1023 bytes of a typed line, as
 * macOS does (Linux, where the real Herdr runs here, keeps 4095). The worktree
 * sits under a deep directory, where the one-line command this launch replaced did not fit.
 * The handoff (print mode, inside a pane) reaches `running`, typing the short launcher line as often
 * as it records; the child starts with every flag and answers a prompt.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { HERDR_TARGET, startHerdr, startHerdrDouble, type HerdrServer } from "../support/herdr.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  PI_CLI,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { waitFor } from "../support/tmux.ts";
import { entriesOnly, herdrPane, PI_READY, submitLine, textOf, waitForScreen } from "../support/tui.ts";

const SWALLOW_MS = 1_500;

describe(`a handoff on Herdr (${HERDR_TARGET}) whose new pane's shell swallows early input (real Pi)`, () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let herdr: HerdrServer;
  let parentPane: string;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-pi-swallow-");
    repo = createTempRepo({ extraCommits: 1 });
    herdr =
      HERDR_TARGET === "real"
        ? await startHerdr({ env: sandbox.env, shellSwallowMs: SWALLOW_MS })
        : await startHerdrDouble({ env: sandbox.env, shellSwallowMs: SWALLOW_MS, lineCap: 1024 });
    parentPane = (await herdr.openWorkspace(repo.root, "parent")).paneId;
  });

  afterAll(async () => {
    await herdr?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("types the launcher line again until it runs, and the child starts with every flag and answers", async () => {
    const parentFile = join(sandbox.dir, "sessions", "parent.jsonl");
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "--session", parentFile, "what is here?"]);
    // As deep as Pi's session dir allows (the worktree path, flattened, is one file name).
    const deepRoot = join(
      sandbox.dir,
      ...Array.from({ length: 4 }, (_, i) => `deep-directory-level-${i}-${"x".repeat(30)}`),
    );
    mkdirSync(deepRoot, { recursive: true });
    if (herdr.kind === "double") herdr.clearCalls();
    const run = spawnSync(
      NODE_BIN,
      [
        PI_CLI,
        "-p",
        "--session",
        parentFile,
        "--model",
        FAUX_MODEL,
        "--thinking",
        "low",
        "--extension",
        EXTENSION_ENTRY,
        "/handoff-worktree feat/swallow",
      ],
      {
        cwd: repo.root,
        env: {
          ...(await herdr.paneEnv(parentPane)),
          PI_HANDOFF_WORKTREE_ROOT: deepRoot,
          PI_HANDOFF_CONFIRM_TIMEOUT_MS: "30000",
        },
        encoding: "utf8",
        timeout: 120_000,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    expect(run.status, run.stderr).toBe(0);

    const listed = await ManifestStore.forAgentDir(sandbox.agentDir).list();
    const entry = listed.find((e) => e.ok && e.manifest.branch === "feat/swallow");
    if (entry === undefined || !entry.ok) throw new Error("no manifest for feat/swallow");
    const manifest = entry.manifest;
    expect(manifest.state).toBe("running");
    expect(manifest.child.confirmedBy).toBe("ack");
    expect(manifest.worktree.path.startsWith(deepRoot)).toBe(true);
    if (manifest.mux.kind !== "herdr") throw new Error("expected a Herdr location");
    const paneId = manifest.mux.paneId ?? "";

    // The short line, typed exactly as often as recorded, never more than the bound. (Whether the
    // first typing fell into the start-up depends on how long the real fork took; the integration
    // test launch-verified.test.ts proves the retyping with a fast stand-in.)
    const line = manifest.child.command ?? "";
    expect(line).toBe(`sh ${entry.path.replace(/\.json$/, ".launch.sh")}`);
    if (herdr.kind === "double") {
      const typed = herdr
        .calls()
        .filter((call) => call.argv[0] === "pane" && call.argv[1] === "run" && call.argv[2] === paneId);
      expect(typed.map((call) => call.argv.slice(3).join(" "))).toEqual(
        Array.from({ length: manifest.launch?.typed ?? 0 }, () => line),
      );
    }
    expect(manifest.launch?.typed).toBeGreaterThanOrEqual(1);
    expect(manifest.launch?.typed).toBeLessThanOrEqual(3);

    // Every flag reached the child: what the launcher ran, word for word.
    const params = readFileSync(entry.path.replace(/\.json$/, ".launch.params"), "utf8");
    const sessionFile = manifest.child.sessionFile ?? "";
    // The parent's session is in a custom dir, so the child gets it too; the project is trusted here.
    expect(params).toContain(
      `--session ${sessionFile} --session-dir ${join(sandbox.dir, "sessions")} --model faux/faux-1 --thinking low --approve --extension ${EXTENSION_ENTRY}; }`,
    );
    expect(Buffer.byteLength(params)).toBeGreaterThan(1024);
    const pid = manifest.child.pid ?? 0;
    expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toEqual(
      expect.arrayContaining([`PI_HANDOFF_ID=${manifest.id}`, "HERDR_AGENT=pi"]),
    );

    // The child runs the faux model on its session, with this extension loaded: it answers.
    const child = herdrPane(herdr, paneId);
    await waitForScreen(child, PI_READY, "the child TUI", 60_000);
    await submitLine(child, "ping from the test", /faux reply to: ping from the test/);
    await waitFor(() => readFileSync(sessionFile, "utf8").includes("faux reply to: ping from the test"), {
      timeoutMs: 30_000,
      description: "the child's answer",
    });
    const answers = entriesOnly(readEntries(sessionFile)).filter(
      (e) =>
        e.type === "message" &&
        e.message.role === "assistant" &&
        Date.parse(e.timestamp) > Date.parse(manifest.createdAt),
    );
    expect(answers.map((e) => (e.type === "message" ? textOf(e.message) : ""))).toEqual([
      "faux reply to: ping from the test",
    ]);
  });
});
