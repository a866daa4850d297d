/**
 * `pi -p --session <parent> "/handoff-worktree ..."` with the real Pi: refusals that leave nothing
 * behind, a failure injected at each step that keeps everything and says so, and a print-mode
 * handoff with a task that returns only once the child confirmed and the child starts on the task.
 */
import { createHash } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HANDOFF_USAGE } from "../../src/handoff/args.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { childStateDir } from "../../src/child/child-state.ts";
import { ChildReportStore } from "../../src/manifest/child-reports.ts";
import { LINEAGE_LEDGER_TYPE } from "../../src/adoption/ledger.ts";
import { REPORT_MESSAGE_TYPE } from "../../src/adoption/reports.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import {
  createPiSandbox,
  FAUX_MODEL,
  NODE_BIN,
  onlySessionFile,
  PI_CLI,
  EXTENSION_ENTRY,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { startPrivateTmux, waitFor, type PrivateTmux, paneEnv } from "../support/tmux.ts";

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

interface PrintRun {
  status: number;
  stdout: string;
  stderr: string;
  /** Both streams as a terminal shows them, in the order written (with `merged`). */
  output?: string;
}

describe("/handoff-worktree in print mode with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let tmux: PrivateTmux;
  let parentFile: string;
  let tmuxEnv: Record<string, string>;
  let store: ManifestStore;

  /** One print-mode Pi on the parent session, as if typed in the parent's tmux pane. */
  function handoff(
    args: string,
    options: { env?: Record<string, string>; cwd?: string; session?: string[]; model?: boolean; merged?: boolean } = {},
  ): PrintRun {
    const argv = [
      PI_CLI,
      "-p",
      ...(options.session ?? ["--session", parentFile]),
      ...(options.model === false ? [] : ["--model", FAUX_MODEL]),
      "--extension",
      EXTENSION_ENTRY,
      `/handoff-worktree ${args}`,
    ];
    if (options.merged === true) {
      // One file for both streams, as a terminal shows them: what was written last is last.
      const file = join(sandbox.dir, `merged-${Date.now()}.txt`);
      const fd = openSync(file, "w");
      try {
        const run = spawnSync(NODE_BIN, argv, {
          cwd: options.cwd ?? repo.root,
          env: { ...tmuxEnv, ...options.env },
          timeout: 120_000,
          stdio: ["ignore", fd, fd],
        });
        return { status: run.status ?? -1, stdout: "", stderr: "", output: readFileSync(file, "utf8") };
      } finally {
        closeSync(fd);
      }
    }
    const run = spawnSync(NODE_BIN, argv, {
      cwd: options.cwd ?? repo.root,
      env: { ...tmuxEnv, ...options.env },
      encoding: "utf8",
      timeout: 120_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
  }

  /** What a refusal must leave exactly as it was. */
  async function snapshot() {
    return {
      manifests: (await store.list()).map((entry) => entry.id),
      worktrees: repo.run(["worktree", "list", "--porcelain"]),
      branches: repo.run(["branch", "--list", "--format=%(refname)"]),
      windows: await tmux.tmux(["list-windows", "-a", "-F", "#{window_id}"]),
      worktreeDirExists: existsSync(`${repo.root}.worktrees`),
      parentHash: sha256(parentFile),
    };
  }

  beforeAll(async () => {
    sandbox = createPiSandbox();
    repo = createTempRepo({ extraCommits: 1 });
    tmux = await startPrivateTmux({ env: sandbox.env });
    tmuxEnv = {
      ...sandbox.env,
      ...(await paneEnv(tmux)),
      PI_HANDOFF_CONFIRM_TIMEOUT_MS: "20000",
    };
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
    parentFile = onlySessionFile(sandbox, repo.root);
    runPiPrint(sandbox, repo.root, ["--session", parentFile, "--model", FAUX_MODEL, "second question"]);
    store = ManifestStore.forAgentDir(sandbox.agentDir);
  });

  afterAll(async () => {
    await tmux?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("a Pi that is not a handoff's child publishes no state: a plain run with the extension leaves no state file", () => {
    const plain = spawnSync(
      NODE_BIN,
      [
        PI_CLI,
        "-p",
        "--session-dir",
        join(sandbox.dir, "plain-sessions"),
        "--model",
        FAUX_MODEL,
        "--extension",
        EXTENSION_ENTRY,
        "plain question",
      ],
      { cwd: repo.root, env: tmuxEnv, encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"] },
    );
    expect(plain.status, plain.stderr).toBe(0);
    expect(plain.stdout).toBe("faux reply to: plain question\n");
    expect(existsSync(childStateDir(sandbox.agentDir))).toBe(false);
  });

  describe("refusals leave no manifest, worktree, branch or window", () => {
    it.each([
      [
        "an invalid branch name",
        "..bad",
        '"..bad" is not a valid branch name; pick a name git accepts (see git check-ref-format).',
      ],
      ["a branch name that looks like an option", "-x", `Unknown option "-x"; usage: ${HANDOFF_USAGE}.`],
      [
        "a quoted branch name that looks like an option",
        '"-x"',
        '"-x" is not a valid branch name; pick a name git accepts (see git check-ref-format).',
      ],
      ["a mistyped option before the branch", "-m tmux feat/ok", `Unknown option "-m"; usage: ${HANDOFF_USAGE}.`],
      [
        "a branch that exists",
        "existing",
        "Branch existing already exists; pick a new branch name (or add --existing to hand off into it).",
      ],
      [
        "a branch checked out elsewhere",
        "main",
        "Branch main is already checked out at {root}; pick a new branch name.",
      ],
      [
        "a base that is not a commit",
        "feat/ok nope",
        'Base "nope" does not resolve to a commit; give a branch, tag or commit.',
      ],
      [
        "a base that looks like an option",
        "feat/ok --upload-pack=touch",
        `Unknown option "--upload-pack=touch"; usage: ${HANDOFF_USAGE}.`,
      ],
    ])("refuses %s", async (_label, args, expected) => {
      if (args === "existing") repo.run(["branch", "existing"]);
      const before = await snapshot();
      const run = handoff(args);
      expect(run.stderr.trim().split("\n").at(-1)).toBe(expected.replace("{root}", repo.root));
      expect(run.status).toBe(1);
      expect(await snapshot()).toEqual(before);
    });

    it("refuses an unusable PI_HANDOFF_* variable in one sentence naming it", async () => {
      const before = await snapshot();
      const run = handoff("feat/ok", { env: { PI_HANDOFF_CONFIRM_TIMEOUT_MS: "abc" } });
      expect(run.stderr.trim().split("\n").at(-1)).toBe(
        'PI_HANDOFF_CONFIRM_TIMEOUT_MS is "abc", but it must be a whole number of milliseconds from 100 to 600000 (such as 45000); set it so, or unset it.',
      );
      expect(run.status).toBe(1);
      expect(await snapshot()).toEqual(before);
    });

    it("refuses outside tmux and Herdr", async () => {
      const before = await snapshot();
      const run = handoff("feat/ok", { env: { TMUX: "", TMUX_PANE: "", HERDR_ENV: "" } });
      expect(run.stderr.trim().split("\n").at(-1)).toBe(
        "This Pi is not running inside tmux, Herdr or zellij; start Pi in a tmux, Herdr or zellij pane to hand off.",
      );
      expect(await snapshot()).toEqual(before);
    });

    it("refuses a $TMUX whose server is gone, and a $TMUX_PANE the server does not have", async () => {
      const before = await snapshot();
      const dead = join(sandbox.dir, "no-server.sock");
      const gone = handoff("feat/ok", { env: { TMUX: `${dead},4242,0` } });
      expect(gone.stderr.trim().split("\n").at(-1)).toBe(
        `No tmux server is running at ${dead} (the socket $TMUX names); start Pi in a pane of a running tmux, then try again.`,
      );
      expect(gone.status).toBe(1);
      const noPane = handoff("feat/ok", { env: { TMUX_PANE: "%999" } });
      expect(noPane.stderr.trim().split("\n").at(-1)).toBe(
        `The tmux server at ${tmux.socketPath} has no pane %999 ($TMUX_PANE); start Pi in a pane of a running tmux, then try again.`,
      );
      expect(noPane.status).toBe(1);
      expect(await snapshot()).toEqual(before);
    });

    it("refuses --no-session and a session with nothing on disk yet", async () => {
      const before = await snapshot();
      const ephemeral = handoff("feat/ok", { session: ["--no-session"] });
      expect(ephemeral.stderr.trim().split("\n").at(-1)).toBe(
        "This session is not saved (--no-session), so there is nothing to hand off; start Pi with a saved session.",
      );
      const fresh = handoff("feat/ok", { session: [] });
      // In print mode no message can be sent first: the advice names what a script can do.
      expect(fresh.stderr.trim().split("\n").at(-1)).toBe(
        'This session has no messages on disk yet, and print mode cannot send one first; hand off from a saved session: pi -p --session <file> "/handoff-worktree ..." (or -c for the latest one here).',
      );
      const after = await snapshot();
      expect(after).toEqual(before);
    });

    it("refuses without a model", async () => {
      // An agent dir without the faux provider: the parent session's model cannot be found.
      const bare = join(sandbox.dir, "agent-without-models");
      mkdirSync(bare, { recursive: true });
      const before = await snapshot();
      const run = handoff("feat/ok", { env: { PI_CODING_AGENT_DIR: bare }, model: false });
      expect(run.stderr.trim().split("\n").at(-1)).toBe(
        "No usable model is selected (unknown/unknown is not available in this Pi); choose one with /model, then hand off.",
      );
      expect(await snapshot()).toEqual(before);
    });

    it("refuses outside a git repository", async () => {
      const plain = join(sandbox.dir, "not-a-repo");
      mkdirSync(plain, { recursive: true });
      runPiPrint(sandbox, plain, ["--model", FAUX_MODEL, "hello from a plain dir"]);
      const plainSession = onlySessionFile(sandbox, plain);
      const before = await snapshot();
      const run = handoff("feat/ok", { cwd: plain, session: ["--session", plainSession] });
      expect(run.stderr.trim().split("\n").at(-1)).toBe(
        `${plain} is not inside a git repository; start Pi in a repository to hand off into a worktree.`,
      );
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("a failure at each step keeps everything, records the step and says what exists", () => {
    async function onlyNewManifest(before: string[]): Promise<Manifest> {
      const added = (await store.list()).filter((entry) => !before.includes(entry.id));
      expect(added).toHaveLength(1);
      const entry = added[0];
      if (entry === undefined || !entry.ok) throw new Error("the new manifest did not decode");
      return entry.manifest;
    }

    it.each([
      ["worktree", "failed", false],
      ["fork", "failed", true],
      ["launch", "failed", true],
      ["confirm", "launch_unconfirmed", true],
    ] as const)("fault at %s -> %s", async (step, state, hasChildSession) => {
      const before = (await store.list()).map((entry) => entry.id);
      const parentHash = sha256(parentFile);
      const branch = `fault/${step}`;
      const run = handoff(branch, { env: { PI_HANDOFF_FAULT: step, PI_HANDOFF_CONFIRM_TIMEOUT_MS: "1500" } });
      expect(run.status).toBe(1);
      const manifest = await onlyNewManifest(before);
      expect(manifest.state).toBe(state);
      expect(manifest.error?.step).toBe(step);
      expect(manifest.history.at(-1)?.state).toBe(state);
      // Everything made so far is still there, and the message names it.
      expect(existsSync(manifest.worktree.path)).toBe(true);
      expect(repo.run(["rev-parse", "--abbrev-ref", "HEAD"], { cwd: manifest.worktree.path }).trim()).toBe(branch);
      const message = run.stderr;
      expect(message).toContain(`Kept (nothing was deleted): worktree ${manifest.worktree.path} on branch ${branch}`);
      expect(message).toContain(`Manifest: handoff ${manifest.id}.`);
      if (manifest.mux.kind !== "tmux") throw new Error("expected a tmux location");
      expect(await tmux.tmux(["list-windows", "-a", "-F", "#{window_id}"])).toContain(manifest.mux.windowId ?? "?");
      if (hasChildSession) {
        expect(existsSync(manifest.child.sessionFile ?? "")).toBe(true);
        expect(message).toContain(`child session ${manifest.child.sessionFile}`);
      } else {
        expect(manifest.child.sessionFile).toBeUndefined();
      }
      if (step === "confirm") {
        // The launcher ran and started nothing (the fault): said at once, not after the timeout.
        expect(message).toContain(
          "The launcher started, but its Pi exited (or never started) before confirming; the new pane shows why.",
        );
      } else {
        expect(message).toContain(
          `The handoff failed at the ${step} step: Injected fault at the ${step} step (PI_HANDOFF_FAULT).`,
        );
      }
      expect(sha256(parentFile)).toBe(parentHash);
    });

    it("a child started by hand after a launch failure still acknowledges", async () => {
      const before = (await store.list()).map((entry) => entry.id);
      const run = handoff("fault/by-hand", { env: { PI_HANDOFF_FAULT: "launch" } });
      const manifest = await onlyNewManifest(before);
      expect(manifest.state).toBe("failed");
      const command = manifest.child.command ?? "";
      expect(run.stderr).toContain(`To start the child by hand, run in its pane: ${command}`);
      if (manifest.mux.kind !== "tmux") throw new Error("expected a tmux location");
      await tmux.tmux(["send-keys", "-t", manifest.mux.paneId ?? "", "-l", command]);
      await tmux.tmux(["send-keys", "-t", manifest.mux.paneId ?? "", "Enter"]);
      const acknowledged = await waitFor(
        async () => {
          const read = await store.read(manifest.id);
          return read.ok && read.manifest.state === "running" ? read.manifest : undefined;
        },
        { timeoutMs: 30_000, description: "the hand-started child's acknowledgement" },
      );
      expect(acknowledged.child.confirmedBy).toBe("ack");
      expect(acknowledged.history.map((h) => h.state)).toEqual([
        "provisioning",
        "provisioned",
        "forked",
        "launching",
        "failed",
        "running",
      ]);
    });
  });

  it("the outcome is the last thing written, after Pi's own reprint of the previous answer on stdout", async () => {
    // Pi's print mode prints the conversation's last assistant answer after every prompt, a slash
    // command's too: stdout is Pi's. The handoff's outcome (stderr) comes after it, also on a terminal.
    const separate = handoff("existing");
    expect(separate.status).toBe(1);
    expect(separate.stdout).toBe("faux reply to: second question\n");
    const refusal = "Branch existing already exists; pick a new branch name (or add --existing to hand off into it).";
    expect(separate.stderr).toBe(`${refusal}\n`);
    const merged = handoff("existing", { merged: true });
    expect(merged.status).toBe(1);
    expect(merged.output).toBe(`faux reply to: second question\n${refusal}\n`);
  });

  it("hands off with a task: returns once the child confirmed, and the child starts on the task", async () => {
    const before = (await store.list()).map((entry) => entry.id);
    // Quoted as a shell user would: the quotes group and disappear; the task is kept verbatim.
    const run = handoff('"feat/print" -- summarise the README in one line');
    expect(run.status).toBe(0);
    const listed = (await store.list()).filter((entry) => !before.includes(entry.id));
    const entry = listed[0];
    if (entry === undefined || !entry.ok) throw new Error("no manifest");
    // Print mode returned only after the acknowledgement.
    expect(entry.manifest.state).toBe("running");
    expect(entry.manifest.history.map((h) => h.state)).toEqual([
      "provisioning",
      "provisioned",
      "forked",
      "launching",
      "running",
    ]);
    expect(run.stderr).toContain(`Handed off to branch feat/print (from HEAD at`);
    // stdout is Pi's reprint of the previous answer; the outcome, on stderr, ends with what to do next.
    expect(run.stdout).toBe("faux reply to: second question\n");
    expect(run.stderr.trimEnd().split("\n").at(-1)).toBe(
      `Later: /handoffs here, or pi-handoff inspect ${entry.manifest.id} in a shell (relaunch its Pi, switch to it, remove it).`,
    );
    expect(entry.manifest.branch).toBe("feat/print");
    expect(run.stderr).toContain(`Worktree: ${entry.manifest.worktree.path}`);
    expect(run.stderr).toContain(`Child session: ${entry.manifest.child.sessionFile}`);
    expect(entry.manifest.task).toBe("summarise the README in one line");
    // The child starts on the task by itself: one kickoff, then an answer to it.
    const childFile = entry.manifest.child.sessionFile ?? "";
    const answered = await waitFor(
      () => {
        const entries = readEntries(childFile);
        const kickoff = entries.findIndex(
          (e) => e.type === "custom_message" && e.customType === "handoff-worktree-kickoff",
        );
        return kickoff !== -1 &&
          entries.slice(kickoff).some((e) => e.type === "message" && e.message.role === "assistant")
          ? entries
          : undefined;
      },
      { timeoutMs: 30_000, description: "the child's first turn on the task" },
    );
    const handoffEntry = answered.find((e) => e.type === "custom_message" && e.customType === "handoff-worktree");
    expect(handoffEntry?.type === "custom_message" ? handoffEntry.content : "").toContain(
      "## Task\n\nsummarise the README in one line",
    );
  });

  it("delivers a report that waited for the parent at the start of a print run, before its prompt, exactly once", async () => {
    const entry = (await store.list()).find((listed) => listed.ok && listed.manifest.branch === "feat/print");
    if (entry === undefined || !entry.ok) throw new Error("no feat/print handoff");
    const report = await ChildReportStore.forAgentDir(sandbox.agentDir).write({
      handoffId: entry.manifest.id,
      kind: "report",
      branch: "feat/print",
      parentSessionFile: parentFile,
      text: "summarised the README",
      commits: [],
    });
    const ask = (prompt: string) =>
      spawnSync(
        NODE_BIN,
        [PI_CLI, "-p", "--session", parentFile, "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY, prompt],
        {
          cwd: repo.root,
          env: tmuxEnv,
          encoding: "utf8",
          timeout: 120_000,
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
    const reportsIn = () =>
      readEntries(parentFile).flatMap((e, index) =>
        e.type === "custom_message" && e.customType === REPORT_MESSAGE_TYPE ? [{ index, entry: e }] : [],
      );
    const promptIndex = (prompt: string) =>
      readEntries(parentFile).findIndex(
        (e) => e.type === "message" && e.message.role === "user" && JSON.stringify(e.message.content).includes(prompt),
      );

    expect(ask("what came back?").status).toBe(0);
    const delivered = reportsIn();
    expect(delivered).toHaveLength(1);
    const [first] = delivered;
    expect(first?.entry.type === "custom_message" ? String(first.entry.content) : "").toContain(
      "Report from handoff feat/print",
    );
    // In the session before the prompt, so the prompt's turn reads it; its ledger entry follows it.
    expect(first?.index).toBeLessThan(promptIndex("what came back?"));
    const ledger = readEntries(parentFile).filter((e) => e.type === "custom" && e.customType === LINEAGE_LEDGER_TYPE);
    expect(JSON.stringify(ledger)).toContain(report.id);

    // The next run delivers nothing again.
    expect(ask("anything else?").status).toBe(0);
    expect(promptIndex("anything else?")).toBeGreaterThan(-1);
    expect(reportsIn()).toHaveLength(1);
  });
});
