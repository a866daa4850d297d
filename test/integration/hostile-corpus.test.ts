/**
 * The hostile input corpus (test/fixtures/hostile-corpus.json) through the real transaction: real
 * git in temp dirs, a private tmux server, a real fork, the stand-in child started by the real
 * launch command. Every case asserts its fixture's expectation:
 * - refused: one sentence, and nothing left behind (no manifest, worktree, branch, window, session);
 * - accepted: exactly that branch, a valid manifest, a running acknowledged child, and a window
 *   label tmux cannot expand;
 * - repository paths with spaces, quotes, unicode, `$()`, backticks and `#()` work end to end;
 * - tasks are cleaned of control characters, bounded, and every secret is redacted from both the
 *   child's handoff message and the manifest.
 * A canary file proves that nothing was executed; it is looked for after every case.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseHandoffArgs } from "../../src/handoff/args.ts";
import type { HandoffOutcome } from "../../src/handoff/transaction.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { muxLabel } from "../../src/mux/label.ts";
import { MAX_HANDOFF_CONTENT_CHARS, MAX_TASK_CHARS, prepareTask } from "../../src/session/handoff-message.ts";
import { PROJECT_ROOT, readEntries } from "../support/pi.ts";
import { isProcessAlive, killAndWait } from "../support/recovery-rig.ts";
import { createWorld, newArtifacts, type Artifacts, type World } from "../support/reliability.ts";
import { waitFor } from "../support/tmux.ts";

interface Corpus {
  branches: Array<{ name: string; expect: "refused" | "accepted" | "help" }>;
  bases: Array<{ ref: string; expect: "refused" | "accepted" }>;
  repoDirNames: Array<{ name: string; expect: "refused" | "accepted" }>;
  tasks: Array<{ task: string; mustContain?: string[]; mustNotContain?: string[]; noTask?: boolean }>;
  secrets: Array<{ kind: string; text: string; secret: string }>;
}

const corpus = JSON.parse(
  readFileSync(join(PROJECT_ROOT, "test", "fixtures", "hostile-corpus.json"), "utf8"),
) as Corpus;
const CANARY_NAME = `CANARY-${randomBytes(4).toString("hex")}`;
const MEGABYTE = "0123456789abcdef".repeat(65_536);
const NOTHING_NEW: Artifacts = {
  manifests: [],
  storeLeftovers: [],
  gitWorktrees: [],
  worktreeDirs: [],
  branches: [],
  panes: [],
  sessions: [],
};

/** Every file named like the canary where a command could have run: the worlds, tmux's dirs, this project, the temp dir, `/`. */
function canariesFound(roots: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = join(dir, entry.name);
      if (entry.name === CANARY_NAME) found.push(full);
      else if (entry.isDirectory() && depth > 0 && entry.name !== "node_modules" && entry.name !== ".git")
        walk(full, depth - 1);
    }
  };
  for (const root of roots) walk(root, 8);
  for (const shallow of [PROJECT_ROOT, tmpdir(), "/"]) walk(shallow, 0);
  return found;
}

/** The window name tmux shows for a pane. */
async function windowNameOf(world: World, paneId: string): Promise<string> {
  return (await world.tmux.tmux(["display-message", "-p", "-t", paneId, "#{window_name}"])).replace(/\n$/, "");
}

function handoffMessageOf(manifest: Manifest): { content: string; details: Record<string, unknown> } {
  const entry = readEntries(manifest.child.sessionFile ?? "").find(
    (e) => e.type === "custom_message" && e.customType === "handoff-worktree",
  );
  if (entry === undefined || entry.type !== "custom_message")
    throw new Error("no handoff message in the child session");
  return {
    content: typeof entry.content === "string" ? entry.content : JSON.stringify(entry.content),
    details: entry.details as Record<string, unknown>,
  };
}

describe("the hostile input corpus through the real transaction", () => {
  let world: World;
  let canary: string;
  const fill = (text: string) => text.replaceAll("{CANARY}", canary);

  beforeAll(async () => {
    world = await createWorld({ prefix: "phw-corpus-" });
    canary = join(world.dir, CANARY_NAME);
  });
  afterAll(async () => {
    await world?.cleanup();
  });

  /** A handoff; nothing executed; for a refusal, nothing left behind and one sentence. */
  async function attempt(
    input: { branch: string; base?: string; task?: string },
    expected: "refused" | "accepted",
  ): Promise<HandoffOutcome> {
    const before = await world.artifacts();
    const outcome = await world.handoff(input);
    expect(canariesFound([world.dir, world.tmux.rootDir])).toEqual([]);
    if (expected === "refused") {
      expect(outcome.code, outcome.message).toBe("refused");
      expect(outcome.message).toMatch(/^[^\n]+[.)]$/);
      expect(newArtifacts(before, await world.artifacts())).toEqual(NOTHING_NEW);
      return outcome;
    }
    expect(outcome.code, outcome.message).toBe("running");
    if (outcome.code !== "running") throw new Error(outcome.message);
    const manifest = outcome.manifest;
    // A valid manifest on disk, the same as returned; a live child that acknowledged.
    expect(await world.store.read(manifest.id)).toEqual({ ok: true, manifest });
    expect(manifest.child.confirmedBy).toBe("ack");
    expect(isProcessAlive(manifest.child.pid ?? 0)).toBe(true);
    // The child lets go of the manifest's lock just after acknowledging (killed holding it, it would
    // leave a stale lock); wait for that before counting what is in the store.
    await waitFor(() => !existsSync(`${world.store.pathFor(manifest.id)}.lock`), {
      description: "the child's lock on the manifest",
    });
    // Exactly these things were made, and they are this handoff's.
    const paneId = manifest.mux.kind === "tmux" ? manifest.mux.paneId : undefined;
    expect(newArtifacts(before, await world.artifacts())).toEqual({
      ...NOTHING_NEW,
      manifests: [manifest.id],
      gitWorktrees: [manifest.worktree.path],
      worktreeDirs: [manifest.worktree.path],
      branches: [manifest.branch],
      panes: [paneId],
      sessions: [manifest.child.sessionFile],
    });
    await killAndWait(manifest.child.pid ?? 0);
    return outcome;
  }

  // Before the branch names: an accepted branch such as `$(touch${IFS}...)` would make the same base resolve.
  describe("bases", () => {
    it.each(corpus.bases.map((c, index) => [c.ref, index, c] as const))("%s", async (_label, index, c) => {
      const ref = fill(c.ref);
      const outcome = await attempt({ branch: `base/${index}`, base: ref }, c.expect);
      if (outcome.code !== "running") return;
      const sha = world.repo.run(["rev-parse", "--verify", "--end-of-options", `${ref}^{commit}`]);
      expect(outcome.manifest.base).toEqual({ ref, sha });
      expect(world.repo.run(["rev-parse", "HEAD"], { cwd: outcome.manifest.worktree.path })).toBe(sha);
    });
  });

  describe("branch names", () => {
    it.each(corpus.branches.map((c) => [JSON.stringify(c.name).slice(0, 60), c] as const))("%s", async (_label, c) => {
      const name = fill(c.name);
      const parsed = parseHandoffArgs(name);
      if (c.expect === "help") {
        expect(parsed).toEqual({ ok: true, help: true });
        return;
      }
      // Typed after /handoff-worktree, a name without whitespace reaches the transaction unchanged,
      // except a dash-led one, which is refused as an unknown option before it gets there.
      if (name.startsWith("-"))
        expect(parsed).toEqual({ ok: false, message: expect.stringMatching(/^Unknown option /) });
      else if (!/\s/.test(name)) expect(parsed).toMatchObject({ ok: true, args: { branch: name } });
      const outcome = await attempt({ branch: name }, c.expect);
      if (outcome.code !== "running") return;
      const { manifest } = outcome;
      expect(manifest.branch).toBe(name);
      expect(world.repo.run(["rev-parse", "--verify", "--end-of-options", `refs/heads/${name}`])).toBe(
        manifest.base.sha,
      );
      expect(world.repo.run(["symbolic-ref", "HEAD"], { cwd: manifest.worktree.path })).toBe(`refs/heads/${name}`);
      // The window is labelled with the branch made safe: tmux shows it as given, nothing expanded.
      const label = await windowNameOf(world, manifest.mux.kind === "tmux" ? (manifest.mux.paneId ?? "") : "");
      expect(label).toBe(muxLabel(name));
      expect(label).toMatch(/^[\p{L}\p{N}._/-]+$/u);
    });
  });

  describe("tasks", () => {
    it.each(corpus.tasks.map((c, index) => [JSON.stringify(c.task).slice(0, 50), index, c] as const))(
      "%s",
      async (_label, index, c) => {
        const task = c.task === "MEGABYTE" ? MEGABYTE : fill(c.task);
        const parsed = parseHandoffArgs(`task/${index} -- ${task}`);
        expect(parsed).toMatchObject({ ok: true, args: { branch: `task/${index}` } });
        expect(parsed.ok && "args" in parsed ? parsed.args.task : "?").toBe(
          task.trim() === "" ? undefined : task.trim(),
        );
        const outcome = await attempt({ branch: `task/${index}`, task }, "accepted");
        if (outcome.code !== "running") return;
        const { manifest } = outcome;
        const { content } = handoffMessageOf(manifest);
        // The manifest keeps the task as cleaned, redacted and bounded; so does the message.
        expect(manifest.task).toBe(prepareTask(task).task);
        if (c.noTask === true) {
          expect(manifest.task).toBeUndefined();
          expect(content).toContain("No task was given with the handoff");
        }
        for (const needle of c.mustContain ?? []) expect(content).toContain(fill(needle));
        for (const needle of c.mustNotContain ?? []) {
          expect(content).not.toContain(needle);
          expect(manifest.task ?? "").not.toContain(needle);
        }
        expect(content.length).toBeLessThanOrEqual(MAX_HANDOFF_CONTENT_CHARS);
        expect((manifest.task ?? "").length).toBeLessThanOrEqual(MAX_TASK_CHARS);
        if (c.task === "MEGABYTE") {
          // 1 MB in, kilobytes on disk.
          expect(statSync(join(world.store.dir, `${manifest.id}.json`)).size).toBeLessThan(16_384);
          expect(statSync(manifest.child.sessionFile ?? "").size).toBeLessThan(
            statSync(world.parent.sessionFile).size + 16_384,
          );
        }
      },
    );

    it("redacts every secret of the corpus from the handoff message, the manifest and the child session", async () => {
      const task = `deploy with these:\n${corpus.secrets.map((s) => fill(s.text)).join("\n")}\nthen report back`;
      const outcome = await attempt({ branch: "task/secrets", task }, "accepted");
      if (outcome.code !== "running") return;
      const { manifest } = outcome;
      const { content, details } = handoffMessageOf(manifest);
      const manifestFile = readFileSync(join(world.store.dir, `${manifest.id}.json`), "utf8");
      const sessionFile = readFileSync(manifest.child.sessionFile ?? "", "utf8");
      for (const secret of corpus.secrets) {
        expect(content, secret.kind).not.toContain(secret.secret);
        expect(manifest.task ?? "", secret.kind).not.toContain(secret.secret);
        expect(manifestFile, secret.kind).not.toContain(secret.secret);
        expect(sessionFile, secret.kind).not.toContain(secret.secret);
        expect(content, secret.kind).toContain(`[REDACTED:${secret.kind}]`);
      }
      expect(Object.keys(details.redactions as Record<string, number>).sort()).toEqual(
        [...new Set(corpus.secrets.map((s) => s.kind))].sort(),
      );
      expect(content).toContain("then report back");
    });
  });
});

describe("hostile repository directory names, end to end", () => {
  it.each(corpus.repoDirNames.map((c) => [JSON.stringify(c.name), c] as const))("%s", async (_label, c) => {
    const world = await createWorld({
      prefix: "phw-corpus-repo-",
      repoName: c.name.replaceAll("{CANARY}", CANARY_NAME),
    });
    try {
      const before = await world.artifacts();
      const outcome = await world.handoff({ branch: "feat/x", task: "look around" });
      expect(canariesFound([world.dir, world.tmux.rootDir])).toEqual([]);
      if (c.expect === "refused") {
        expect(outcome).toEqual({
          ok: false,
          code: "refused",
          reason: "worktree_path_control",
          message: `The worktree path ${JSON.stringify(join(`${world.repo.root}.worktrees`, "feat-x"))} would contain a control character, which cannot be typed into a terminal; rename the repository's directory first.`,
        });
        expect(newArtifacts(before, await world.artifacts())).toEqual(NOTHING_NEW);
        return;
      }
      expect(outcome.code, outcome.message).toBe("running");
      if (outcome.code !== "running") return;
      const { manifest } = outcome;
      expect(manifest.repo.root).toBe(world.repo.root);
      expect(dirname(manifest.worktree.path)).toBe(`${world.repo.root}.worktrees`);
      expect(basename(world.repo.root)).toBe(c.name.replaceAll("{CANARY}", CANARY_NAME));
      // The window opened in the worktree (tmux took the path literally) and the child runs there.
      const paneId = manifest.mux.kind === "tmux" ? (manifest.mux.paneId ?? "") : "";
      expect(
        (await world.tmux.tmux(["display-message", "-p", "-t", paneId, "#{pane_current_path}"])).replace(/\n$/, ""),
      ).toBe(manifest.worktree.path);
      expect(readFileSync(`/proc/${manifest.child.pid}/environ`, "utf8").split("\0")).toContain(
        `PI_HANDOFF_ID=${manifest.id}`,
      );
      expect(existsSync(join(manifest.worktree.path, "README.md"))).toBe(true);
      expect(handoffMessageOf(manifest).content).toContain("## Task\n\nlook around");
      await killAndWait(manifest.child.pid ?? 0);
      expect(canariesFound([world.dir, world.tmux.rootDir])).toEqual([]);
    } finally {
      await world.cleanup();
    }
  });
});
