/**
 * The parent's watch of its children (src/watch/watch.ts `HandoffWatch`) on real files and a
 * real child process: a stand-in child (test/support/fixtures/state-writer.ts) holds its sessions'
 * leases and publishes its state with the project's own code; the watch shows each change without
 * a single refresh of the caller (so no poll tells it): a turn, a tool, a dialog, /new (followed to
 * the new session), a manifest retired, the child killed (its pid gone). And where no directory
 * can be watched, nothing comes between refreshes, and a refresh still tells all.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { ActivityEvent } from "../../src/child/child-state.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { formatChildrenWidget } from "../../src/inventory/format.ts";
import { HandoffWatch, type OwnHandoff } from "../../src/watch/watch.ts";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";
import { storeRunningHandoff } from "../support/running-handoff.ts";
import { waitFor } from "../support/tmux.ts";

const dir = mkdtempSync(join(tmpdir(), "phw-handoff-watch-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const WRITER = join(PROJECT_ROOT, "test", "support", "fixtures", "state-writer.ts");
const T = new Date(Date.now() - 3_600_000).toISOString();

interface StandIn {
  process: ChildProcessWithoutNullStreams;
  send(command: { i: number; event?: ActivityEvent; moveTo?: string }): void;
}

const started: StandIn[] = [];
afterEach(() => {
  for (const standIn of started.splice(0)) standIn.process.kill("SIGKILL");
});

async function startWriter(agentDir: string, sessions: string[]): Promise<StandIn> {
  const child = spawn(NODE_BIN, [WRITER, agentDir, ...sessions], { stdio: ["pipe", "pipe", "pipe"] });
  const standIn: StandIn = {
    process: child,
    send: (command) => child.stdin.write(`${JSON.stringify(command)}\n`),
  };
  started.push(standIn);
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += String(chunk)));
  await new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      if (line.includes('"ready"')) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the state writer exited (${code}): ${stderr}`)));
  });
  return standIn;
}

function rows(own: readonly OwnHandoff[]): string[] {
  return own.map(
    (handoff) => `${handoff.branch} ${handoff.status.state}${handoff.status.tool ? ` ${handoff.status.tool}` : ""}`,
  );
}

describe("HandoffWatch", () => {
  it("shows each change a child publishes, follows it to a new session, and notices it killed, without a refresh", async () => {
    const agentDir = join(dir, "agent");
    const store = ManifestStore.forAgentDir(agentDir);
    const parent = { sessionFile: join(dir, "parent.jsonl"), sessionId: "parent" };
    const files = ["one", "two"].map((name) => join(dir, `${name}.jsonl`));
    for (const file of files) writeFileSync(file, "");
    const writer = await startWriter(agentDir, files);
    const pid = writer.process.pid ?? 0;
    const [one, two] = await Promise.all(
      files.map((sessionFile, index) =>
        storeRunningHandoff(store, {
          branch: `feat/${index === 0 ? "one" : "two"}`,
          at: T,
          parent,
          child: { sessionFile, pid },
          worktreeRoot: dir,
        }),
      ),
    );
    let latest: OwnHandoff[] = [];
    let changes = 0;
    const watch = new HandoffWatch({
      deps: { store, now: () => new Date(), agentDir },
      parent,
      onChange: (own) => {
        latest = own;
        changes += 1;
      },
    });
    try {
      const first = await watch.refresh();
      expect(rows(first)).toEqual(["feat/one idle", "feat/two idle"]);
      // The ages are this child's: since it said idle, not the hour-old acknowledgement.
      expect(Date.now() - Date.parse(first[0]?.status.since ?? "")).toBeLessThan(60_000);
      expect(watch.watching).toBe(true);
      const shows = (expected: string[], description: string) =>
        waitFor(() => (JSON.stringify(rows(latest)) === JSON.stringify(expected) ? true : undefined), {
          timeoutMs: 10_000,
          intervalMs: 20,
          description,
        });

      writer.send({ i: 0, event: { type: "agent_start" } });
      await shows(["feat/one working", "feat/two idle"], "a turn shown");
      writer.send({ i: 0, event: { type: "tool_start", id: "t1", name: "bash" } });
      await shows(["feat/one working bash", "feat/two idle"], "the tool shown");
      writer.send({ i: 1, event: { type: "prompt_start", kind: "select" } });
      await shows(["feat/one working bash", "feat/two waiting_input"], "a dialog shown");
      writer.send({ i: 1, event: { type: "prompt_end" } });
      await shows(["feat/one working bash", "feat/two idle"], "the dialog closed");

      // /new in the second child: followed to the new session, where its Pi goes on.
      const moved = join(dir, "two-new.jsonl");
      writer.send({ i: 1, moveTo: moved });
      writer.send({ i: 1, event: { type: "agent_start" } });
      await shows(["feat/one working bash", "feat/two working"], "the moved child's turn shown");
      expect(latest[1]?.status.basis).toContain(`on ${moved}, where it went on`);

      // A manifest retired: shown at once (the manifests' directory is watched too).
      await store.transition(one?.id ?? "", "removed");
      await shows(["feat/one removed", "feat/two working"], "the removal shown");

      // Killed: its pid is gone, so both show exited, without a code (it said nothing).
      writer.process.kill("SIGKILL");
      await shows(["feat/one removed", "feat/two exited"], "the killed child shown exited");
      expect(latest[1]?.status.exitCode).toBeUndefined();
      expect(two?.id).toBe(latest[1]?.id);
      expect(changes).toBeGreaterThanOrEqual(7);
    } finally {
      watch.stop();
    }
  }, 60_000);

  it("the widget keeps the child killed last in view among four that quit before it (issue 41, point 4)", async () => {
    const agentDir = join(dir, "agent-crowd");
    const store = ManifestStore.forAgentDir(agentDir);
    const parent = { sessionFile: join(dir, "parent-crowd.jsonl"), sessionId: "crowd" };
    const names = ["one", "two", "three", "four"];
    const files = names.map((name) => join(dir, `crowd-${name}.jsonl`));
    for (const file of files) writeFileSync(file, "");
    const quitter = await startWriter(agentDir, files);
    for (const [index, sessionFile] of files.entries())
      await storeRunningHandoff(store, {
        branch: `feat/${names[index]}`,
        at: T,
        parent,
        child: { sessionFile, pid: quitter.process.pid ?? 0 },
        worktreeRoot: dir,
      });
    let latest: OwnHandoff[] = [];
    const watch = new HandoffWatch({
      deps: { store, now: () => new Date(), agentDir },
      parent,
      onChange: (own) => {
        latest = own;
      },
    });
    // The widget's lines, each age (it counts on) as <age>.
    const widget = () =>
      formatChildrenWidget(latest, Date.now()).map((line) => line.replace(/ \d+s( \(code 0\))?$/, " <age>$1"));
    try {
      latest = await watch.refresh();
      // The four children quit (a clean end: each says exited, code 0).
      quitter.process.stdin.end();
      await waitFor(() => (latest.every((row) => row.status.state === "exited") ? true : undefined), {
        timeoutMs: 10_000,
        description: "the four children shown exited",
      });
      // Then a fifth handoff, live, which is killed.
      const liveFile = join(dir, "crowd-live.jsonl");
      writeFileSync(liveFile, "");
      const live = await startWriter(agentDir, [liveFile]);
      await storeRunningHandoff(store, {
        branch: "feat/live",
        at: T,
        parent,
        child: { sessionFile: liveFile, pid: live.process.pid ?? 0 },
        worktreeRoot: dir,
      });
      latest = await watch.refresh();
      expect(widget()[0]).toBe("handoff feat/live   idle <age>");
      live.process.kill("SIGKILL");
      await waitFor(
        () => (latest.find((row) => row.branch === "feat/live")?.status.state === "exited" ? true : undefined),
        {
          timeoutMs: 10_000,
          description: "the killed child shown exited",
        },
      );
      // The freshest change first, in view; one of those that quit (together, in one ms or a few) is summed up.
      const quit = /^handoff feat\/(?:one|two|three|four) +exited <age> \(code 0\)$/;
      expect(widget()).toEqual([
        "handoff feat/live   exited <age>",
        expect.stringMatching(quit),
        expect.stringMatching(quit),
        expect.stringMatching(quit),
        "handoffs: 1 more (/handoffs lists them)",
      ]);
    } finally {
      watch.stop();
    }
  }, 60_000);

  it("a clean exit shows its code; where nothing can be watched, only a refresh tells", async () => {
    const agentDir = join(dir, "agent-blind");
    const store = ManifestStore.forAgentDir(agentDir);
    const parent = { sessionFile: join(dir, "parent-blind.jsonl"), sessionId: "blind" };
    const file = join(dir, "blind.jsonl");
    writeFileSync(file, "");
    const writer = await startWriter(agentDir, [file]);
    await storeRunningHandoff(store, {
      branch: "feat/blind",
      at: T,
      parent,
      child: { sessionFile: file, pid: writer.process.pid ?? 0 },
      worktreeRoot: dir,
    });
    let changes = 0;
    const watch = new HandoffWatch({
      deps: { store, now: () => new Date(), agentDir },
      parent,
      onChange: () => (changes += 1),
      watchDirectory: () => ({ watching: false, close: () => {} }),
      livenessMs: 0,
    });
    try {
      expect(rows(await watch.refresh())).toEqual(["feat/blind idle"]);
      expect(watch.watching).toBe(false);
      writer.send({ i: 0, event: { type: "agent_start" } });
      await waitFor(async () => ((await watch.refresh())[0]?.status.state === "working" ? true : undefined), {
        timeoutMs: 10_000,
        description: "the turn, by refresh",
      });
      // stdin closed: the writer ends cleanly and says so with its code.
      writer.process.stdin.end();
      await new Promise((resolve) => writer.process.once("exit", resolve));
      const after = await watch.refresh();
      expect(after[0]?.status).toMatchObject({ state: "exited", exitCode: 0, basis: "its Pi exited with code 0" });
      expect(changes).toBe(0);
    } finally {
      watch.stop();
    }
  }, 60_000);
});
