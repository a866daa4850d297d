/**
 * The handoff end to end, written once and run on each backend's rig (test/support/mux-rig.ts)
 * with the real Pi: a parent with an abandoned branch and a live turn types `/handoff-worktree
 * feat/e2e v1`; then what the handoff leaves is checked: the notice, the manifest's steps, the
 * worktree and branch, the child session (the active branch forked plus one handoff message, the
 * model's context), the parent file untouched, the child Pi alive in the worktree, confirmed by its
 * ack, focused after it, answering a prompt and not starting a turn by itself. A backend adds what
 * only it can show through `BackendChecks`, at the point of the scenario it belongs to.
 */
import { existsSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { buildSessionContext } from "@earendil-works/pi-coding-agent";
import { ManifestSchema, type Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { launcherFiles } from "../../src/child/launcher-file.ts";
import { createTempRepo, type TempRepo } from "./git-repo.ts";
import type { MuxRig } from "./mux-rig.ts";
import { createPiSandbox, piTuiCommand, readEntries, type PiSandbox } from "./pi.ts";
import { waitFor } from "./tmux.ts";
import {
  buildParentWithAbandonedBranch,
  entriesOnly,
  HANDOFF_STARTED,
  PI_READY,
  sha256OfFile,
  submitLine,
  textOf,
  waitForScreen,
  type PaneDriver,
} from "./tui.ts";

/** A repository with a tag `v1` one commit behind `main`, a Pi sandbox, and a rig, set up once per file. */
export interface HandoffWorld<R extends MuxRig> {
  sandbox: PiSandbox;
  repo: TempRepo;
  rig: R;
  /** The commit `v1` names: the handoff's base. */
  baseSha: string;
}

/** Registers the set-up and clean-up of a world in the enclosing `describe`; its fields are set in `beforeAll`. */
export function useHandoffWorld<R extends MuxRig>(
  sandboxPrefix: string,
  startRig: (sandbox: PiSandbox, repo: TempRepo) => Promise<R>,
): HandoffWorld<R> {
  const world = {} as HandoffWorld<R>;
  beforeAll(async () => {
    world.sandbox = createPiSandbox(sandboxPrefix);
    world.repo = createTempRepo({ extraCommits: 2 });
    world.repo.run(["tag", "v1", "HEAD~1"]);
    world.baseSha = world.repo.run(["rev-parse", "v1"]);
    world.rig = await startRig(world.sandbox, world.repo);
  });
  afterAll(async () => {
    await world.rig?.stop();
    world.repo?.cleanup();
    world.sandbox?.cleanup();
  });
  return world;
}

/** What one backend adds to the scenario. */
export interface BackendChecks {
  /** The notice's line naming where the child runs. */
  windowLine: RegExp;
  /** The child is the Pi its window's launcher warmed up (the window runs the launcher itself). */
  warmStart: boolean;
  /** The notice's `Next:` sentence for this handoff. */
  nextStep(manifest: Manifest): string;
  /** Runs right before the handoff is typed. */
  beforeHandoff?(): void;
  /** Where the child runs, as the manifest records it and the backend reports it. */
  location?(manifest: Manifest): Promise<void>;
  /** The child Pi's environment (`NAME=value` lines), beyond its handoff id. */
  childEnvironment?(manifest: Manifest, env: string[]): Promise<void>;
  /** The backend shows the child focused; `ackAt` is when the child acknowledged (ms). */
  focused(manifest: Manifest, ackAt: number): Promise<void>;
}

/** Starts the parent Pi in the rig's parent pane with a live turn; returns its file, abandoned ids and leaf. */
async function startParentWithLiveTurn(
  world: HandoffWorld<MuxRig>,
): Promise<{ file: string; abandonedIds: string[]; leafId: string }> {
  const { rig } = world;
  const parent = buildParentWithAbandonedBranch(world.sandbox, world.repo);
  await rig.runInParentPane(piTuiCommand(world.repo.root, ["--session", parent.file]));
  await waitForScreen(rig.parentPane, PI_READY, "the parent TUI");
  // A live turn in the TUI, so the handoff starts from a leaf that exists only in this process's memory too.
  await submitLine(rig.parentPane, "live question", /faux reply to: live question/);
  const leafId = await waitFor(
    () => {
      const last = entriesOnly(readEntries(parent.file)).at(-1);
      return last?.type === "message" && textOf(last.message) === "faux reply to: live question" ? last.id : undefined;
    },
    { timeoutMs: 10_000, description: "the live turn on disk" },
  );
  return { ...parent, leafId };
}

/** The one handoff of this world, read from its file and decoded strictly. */
async function onlyManifest(world: HandoffWorld<MuxRig>): Promise<Manifest> {
  const listed = await ManifestStore.forAgentDir(world.sandbox.agentDir).list();
  expect(listed).toHaveLength(1);
  const entry = listed[0];
  if (entry === undefined || !entry.ok) throw new Error("manifest did not decode");
  return ManifestSchema.parse(JSON.parse(readFileSync(entry.path, "utf8")));
}

/** The child session: header, active branch only, plus exactly one handoff message the model sees after the parent's context. */
function expectForkedChildSession(
  world: HandoffWorld<MuxRig>,
  manifest: Manifest,
  parent: { file: string; abandonedIds: string[]; leafId: string },
): void {
  const childEntries = readEntries(manifest.child.sessionFile ?? "");
  expect(childEntries[0]).toMatchObject({ type: "session", cwd: manifest.worktree.path, parentSession: parent.file });
  const childIds = new Set(entriesOnly(childEntries).map((e) => e.id));
  for (const id of parent.abandonedIds) expect(childIds.has(id)).toBe(false);
  const handoffEntries = entriesOnly(childEntries).filter(
    (e) => e.type === "custom_message" && e.customType === "handoff-worktree",
  );
  expect(handoffEntries).toHaveLength(1);
  const handoffEntry = handoffEntries[0];
  if (handoffEntry === undefined || handoffEntry.type !== "custom_message") throw new Error("no handoff entry");
  expect(handoffEntry.parentId).toBe(parent.leafId);
  expect(handoffEntry.content).toContain("feat/e2e");
  expect(handoffEntry.content).toContain(world.baseSha);

  // The model sees the parent's context at its leaf plus the one handoff message.
  const parentContext = buildSessionContext(entriesOnly(readEntries(parent.file)), parent.leafId);
  const childContext = buildSessionContext(entriesOnly(childEntries), handoffEntry.id);
  expect(childContext.messages.slice(0, -1)).toEqual(parentContext.messages);
  expect(childContext.messages).toHaveLength(parentContext.messages.length + 1);
  expect(childContext.messages.at(-1)).toMatchObject({ role: "custom", customType: "handoff-worktree" });
}

/** The child answers a prompt typed into its pane, loaded this extension once, and started no turn by itself. */
async function expectChildAnswersOnlyUs(world: HandoffWorld<MuxRig>, manifest: Manifest): Promise<void> {
  const childFile = manifest.child.sessionFile ?? "";
  const childPane = world.rig.childPane(manifest);
  await waitForScreen(childPane, PI_READY, "the child TUI");
  expect((await childPane.read()).match(/pi-extension/g)).toHaveLength(1);
  await submitLine(childPane, "ping from the test", /faux reply to: ping from the test/);
  await waitFor(() => readFileSync(childFile, "utf8").includes("faux reply to: ping from the test"), {
    timeoutMs: 30_000,
    description: "the child's answer",
  });
  // Without a task, the child did not start a turn by itself: the only answer is to our prompt.
  const answers = entriesOnly(readEntries(childFile)).filter(
    (e) =>
      e.type === "message" &&
      e.message.role === "assistant" &&
      Date.parse(e.timestamp) > Date.parse(manifest.createdAt),
  );
  expect(answers.map((e) => (e.type === "message" ? textOf(e.message) : ""))).toEqual([
    "faux reply to: ping from the test",
  ]);
}

/** Types `/handoff-worktree <branch> --no-focus` into `pane`, waits for its notice, and returns the running handoff's manifest. */
export async function handOffUnfocused(pane: PaneDriver, agentDir: string, branch: string): Promise<Manifest> {
  await submitLine(pane, `/handoff-worktree ${branch} --no-focus`, HANDOFF_STARTED);
  const screen = await waitForScreen(
    pane,
    new RegExp(`Handed off to branch ${branch.replace("/", "\\/")}|failed|did not confirm`),
    "the handoff's notice",
    90_000,
  ).catch(async (error: unknown) => {
    // Where the handoff itself got to, for a notice that never came (seen once under CI's load).
    const entries = await ManifestStore.forAgentDir(agentDir)
      .list()
      .catch(() => []);
    const records = entries.flatMap((entry) =>
      entry.ok && entry.manifest.branch === branch ? [JSON.stringify(entry.manifest.history)] : [],
    );
    throw new Error(`${(error as Error).message}\nThe handoff's history: ${records.join("\n") || "(no manifest)"}`);
  });
  expect(screen).toContain(`Handed off to branch ${branch}`);
  const listed = (await ManifestStore.forAgentDir(agentDir).list()).filter(
    (entry) => entry.ok && entry.manifest.branch === branch,
  );
  const entry = listed[0];
  if (entry === undefined || !entry.ok || entry.manifest.state !== "running")
    throw new Error(`The handoff to ${branch} is not running.`);
  return entry.manifest;
}

/** Forks the active branch into a worktree, starts the child, confirms by its ack, then focuses it. */
export async function runHandoffScenario(world: HandoffWorld<MuxRig>, backend: BackendChecks): Promise<void> {
  const { repo, rig, baseSha } = world;
  const parent = await startParentWithLiveTurn(world);
  const parentHashBefore = sha256OfFile(parent.file);

  backend.beforeHandoff?.();
  await submitLine(rig.parentPane, "/handoff-worktree feat/e2e v1", HANDOFF_STARTED);
  const screen = await waitForScreen(
    rig.parentPane,
    /Handed off to branch feat\/e2e|failed|did not confirm|not running/,
    "the handoff's final notice",
    90_000,
  );
  expect(screen).toContain("Handed off to branch feat/e2e (from v1 at " + baseSha.slice(0, 12) + ")");
  expect(screen).toMatch(/Worktree: \S+feat-e2e/);
  expect(screen).toMatch(/Child session: \S+\.jsonl/);
  expect(screen).toMatch(backend.windowLine);

  // The manifest: every step, in transaction order, on this backend.
  const manifest = await onlyManifest(world);
  expect(manifest.history.map((h) => h.state)).toEqual([
    "provisioning",
    "provisioned",
    "forked",
    "launching",
    "running",
  ]);
  expect(manifest.state).toBe("running");
  expect(manifest.branch).toBe("feat/e2e");
  expect(manifest.base).toEqual({ ref: "v1", sha: baseSha });
  expect(manifest.parent).toMatchObject({ sessionFile: parent.file, leafId: parent.leafId, cwd: repo.root });
  expect(manifest.child.confirmedBy).toBe("ack");
  expect(manifest.mux.kind).toBe(rig.kind);
  // The notice ends with what to do next, with this handoff's own ids.
  expect(screen).toContain(backend.nextStep(manifest));
  expect(screen).toContain(
    `Later: /handoffs here, or pi-handoff inspect ${manifest.id} in a shell (relaunch its Pi, switch to it, remove it).`,
  );

  // The worktree: at the planned path beside the main checkout, on the new branch, at the base commit.
  const worktree = manifest.worktree.path;
  expect(worktree).toBe(join(repo.dir, "repo.worktrees", "feat-e2e"));
  expect(worktree.startsWith(repo.root + "/")).toBe(false);
  expect(repo.run(["rev-parse", "HEAD"], { cwd: worktree })).toBe(baseSha);
  expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: worktree })).toBe("feat/e2e");
  await backend.location?.(manifest);

  expectForkedChildSession(world, manifest, parent);
  // The parent file was never written.
  expect(sha256OfFile(parent.file)).toBe(parentHashBefore);

  // The child Pi is alive, in the worktree, marked with the handoff id.
  const pid = manifest.child.pid ?? 0;
  expect(existsSync(`/proc/${pid}`)).toBe(true);
  expect(realpathSync(readlinkSync(`/proc/${pid}/cwd`))).toBe(worktree);
  expect(readFileSync(`/proc/${pid}/comm`, "utf8").trim()).toBe("pi");
  const childEnv = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  expect(childEnv).toContain(`PI_HANDOFF_ID=${manifest.id}`);
  // Warm: the Node the window's launcher started with Pi's modules loading, let go by the launch step.
  const launcher = launcherFiles(ManifestStore.forAgentDir(world.sandbox.agentDir).pathFor(manifest.id));
  const warmed = existsSync(launcher.warmed) ? readFileSync(launcher.warmed, "utf8") : undefined;
  const launchToken = readFileSync(launcher.started, "utf8").split(" ")[0];
  expect(warmed).toBe(backend.warmStart ? `${launchToken} ${pid}\n` : undefined);
  await backend.childEnvironment?.(manifest, childEnv);

  // Focus came after the acknowledgement, and the backend shows the child focused.
  const ackAt = Date.parse(manifest.child.ackAt ?? "");
  const focus = manifest.focus;
  if (focus === undefined || "error" in focus) throw new Error(`focus not recorded: ${JSON.stringify(focus)}`);
  expect(Date.parse(focus.at)).toBeGreaterThanOrEqual(ackAt);
  await backend.focused(manifest, ackAt);

  await expectChildAnswersOnlyUs(world, manifest);
}
