import { execFile, spawn } from "node:child_process";
import { mkdtemp, mkdir, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newManifest } from "../../src/manifest/factory.ts";
import { type Manifest, ManifestSchema } from "../../src/manifest/schema.ts";
import { agentDirFromEnv } from "../../src/session/paths.ts";
import { writeFileAtomic, writeFileAtomicSync } from "../../src/fs/atomic-write.ts";
import { ManifestStore, ManifestStoreError } from "../../src/manifest/store.ts";

const execFileAsync = promisify(execFile);
const STORE_MODULE_URL = pathToFileURL(fileURLToPath(new URL("../../src/manifest/store.ts", import.meta.url))).href;
const SHA = "0123456789abcdef0123456789abcdef01234567";

let tempRoot: string;
let manifestsDir: string;

beforeEach(async () => {
  tempRoot = await mkdtemp(join(tmpdir(), "manifest-store-"));
  manifestsDir = join(tempRoot, "agent", "handoff-worktree", "manifests");
});

afterEach(async () => {
  await rm(tempRoot, { recursive: true, force: true });
});

/** A clock that advances one second per call, so every timestamp is distinct and ordered. */
function steppingClock(start = Date.parse("2025-03-04T05:06:07.000Z")): () => Date {
  let tick = 0;
  return () => new Date(start + 1000 * tick++);
}

function makeStore(options: ConstructorParameters<typeof ManifestStore>[1] = {}): ManifestStore {
  return ManifestStore.forAgentDir(join(tempRoot, "agent"), { now: steppingClock(), ...options });
}

function sampleManifest(store: ManifestStore, branch = "feature/login", repoRoot = "/repo"): Manifest {
  return newManifest({
    id: store.newId(branch),
    now: new Date("2025-03-04T05:06:07.000Z"),
    branch,
    base: { ref: "main", sha: SHA },
    repo: { root: repoRoot, commonDir: `${repoRoot}/.git` },
    parent: { sessionFile: "/sessions/p.jsonl", sessionId: "p1", leafId: "leaf1", cwd: repoRoot },
    worktree: { path: `${repoRoot}-worktrees/${branch}` },
    mux: { kind: "tmux", socketPath: "/tmp/tmux-test" },
    task: "finish the login form",
  });
}

async function createOrFail(store: ManifestStore, manifest: Manifest): Promise<Manifest> {
  const result = await store.create(manifest);
  if (!result.ok) throw new Error(`create failed: ${result.message}`);
  return result.manifest;
}

/** Takes a file's bytes and modification time now; the returned check asserts both are unchanged. */
async function expectUntouchedLater(path: string): Promise<() => Promise<void>> {
  const bytes = await readFile(path, "utf8");
  const mtimeMs = (await stat(path)).mtimeMs;
  return async () => {
    expect(await readFile(path, "utf8")).toBe(bytes);
    expect((await stat(path)).mtimeMs).toBe(mtimeMs);
  };
}

describe("ids, paths and the agent dir", () => {
  it("makes short, sortable, filename-safe ids that match the schema", () => {
    const store = makeStore();
    const first = store.newId("Feature/Login_Form!!");
    const second = store.newId("x".repeat(200));
    expect(first).toMatch(/^20250304-050607-feature-login-form-[0-9a-f]{4}$/);
    expect(second).toMatch(/^20250304-050608-x{40}-[0-9a-f]{4}$/);
    expect(store.newId("///")).toMatch(/^\d{8}-\d{6}-handoff-[0-9a-f]{4}$/);
    expect([second, first].sort()).toEqual([first, second]);
    for (const id of [first, second]) expect(() => store.pathFor(id)).not.toThrow();
    expect(store.pathFor(first)).toBe(join(manifestsDir, `${first}.json`));
    expect(() => store.pathFor("../../etc/passwd")).toThrow(/Invalid handoff id/);
  });

  it("reads the agent dir from PI_CODING_AGENT_DIR, expanding ~, else ~/.pi/agent", () => {
    expect(agentDirFromEnv({ HOME: "/home/u" })).toBe("/home/u/.pi/agent");
    expect(agentDirFromEnv({ HOME: "/home/u", PI_CODING_AGENT_DIR: "~/agent" })).toBe("/home/u/agent");
    expect(agentDirFromEnv({ HOME: "/home/u", PI_CODING_AGENT_DIR: "~" })).toBe("/home/u");
    expect(agentDirFromEnv({ HOME: "/home/u", PI_CODING_AGENT_DIR: "/x/agent" })).toBe("/x/agent");
  });
});

describe("create and read", () => {
  it("round-trips a manifest through a pretty-printed, schema-valid file", async () => {
    const store = makeStore();
    const manifest = sampleManifest(store);
    const result = await store.create(manifest);
    expect(result).toEqual({ ok: true, manifest, path: store.pathFor(manifest.id) });

    const text = await readFile(store.pathFor(manifest.id), "utf8");
    expect(text).toBe(`${JSON.stringify(manifest, null, 2)}\n`);
    expect(ManifestSchema.parse(JSON.parse(text))).toEqual(manifest);
    expect(await store.read(manifest.id)).toEqual({ ok: true, manifest });
    expect(manifest.state).toBe("provisioning");
    expect(manifest.history).toEqual([{ state: "provisioning", at: manifest.createdAt }]);
  });

  it("reports a missing manifest as not_found", async () => {
    const store = makeStore();
    const missing = await store.read("20250101-000000-nope-abcd");
    expect(missing).toMatchObject({ ok: false, code: "not_found" });
    expect(await store.read("../escape")).toMatchObject({ ok: false, code: "not_found" });
    expect(await store.list()).toEqual([]);
    await expect(store.update("20250101-000000-nope-abcd", () => {})).rejects.toMatchObject({ code: "not_found" });
  });

  it("reports corrupt and schema-violating files as invalid, and list() shows them without throwing", async () => {
    const store = makeStore();
    const good = await createOrFail(store, sampleManifest(store, "good"));
    const corruptId = "20250101-000000-corrupt-0000";
    const wrongId = "20250101-000000-wrong-0000";
    const mismatchedId = "20250101-000000-mismatch-0000";
    await writeFile(store.pathFor(corruptId), '{"version": 1, "id": ');
    await writeFile(store.pathFor(wrongId), JSON.stringify({ ...good, id: wrongId, state: "exploded" }));
    await writeFile(store.pathFor(mismatchedId), JSON.stringify(good));
    // Noise that list() must ignore: a temp file and a lock dir.
    await writeFile(join(manifestsDir, `.${good.id}.json.123.abcd.tmp`), "{");
    await mkdir(join(manifestsDir, `${good.id}.json.lock`));

    const corrupt = await store.read(corruptId);
    expect(corrupt).toMatchObject({ ok: false, code: "invalid" });
    if (!corrupt.ok) expect(corrupt.message).toContain(store.pathFor(corruptId));
    const wrong = await store.read(wrongId);
    expect(wrong).toMatchObject({ ok: false, code: "invalid" });
    if (!wrong.ok) expect(wrong.message).toMatch(/does not match the manifest schema \(state:/);
    expect(await store.read(mismatchedId)).toMatchObject({ ok: false, code: "invalid" });

    const listed = await store.list();
    expect(listed.map((entry) => [entry.id, entry.ok])).toEqual([
      [corruptId, false],
      [mismatchedId, false],
      [wrongId, false],
      [good.id, true],
    ]);
    for (const entry of listed) {
      if (!entry.ok) expect(entry.error).toContain(entry.path);
    }
  });

  it("reports a manifest of another format version as invalid, naming the version", async () => {
    const store = makeStore();
    const good = await createOrFail(store, sampleManifest(store));
    await writeFile(store.pathFor(good.id), JSON.stringify({ ...good, version: 2 }));
    const result = await store.read(good.id);
    expect(result).toMatchObject({ ok: false, code: "invalid" });
    if (!result.ok) expect(result.message).toMatch(/version 2.*only version 1/);
  });

  it("refuses to overwrite an existing id", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    const before = await readFile(store.pathFor(manifest.id), "utf8");
    await expect(store.create({ ...manifest, task: "something else" })).rejects.toMatchObject({
      name: "ManifestStoreError",
      code: "exists",
    });
    expect(await readFile(store.pathFor(manifest.id), "utf8")).toBe(before);
    expect(await readdir(manifestsDir)).toEqual([`${manifest.id}.json`]);
  });

  it("refuses a handoff that conflicts with a live one, and allows it once the old one is removed", async () => {
    const store = makeStore();
    const sameBranchLive = (candidate: Manifest) => (existing: Manifest) =>
      existing.repo.root === candidate.repo.root &&
      existing.branch === candidate.branch &&
      existing.state !== "removed";
    const first = await createOrFail(store, sampleManifest(store, "feature/x"));

    const otherRepo = sampleManifest(store, "feature/x", "/other-repo");
    expect(await store.create(otherRepo, { conflictsWith: sameBranchLive(otherRepo) })).toMatchObject({ ok: true });

    const second = sampleManifest(store, "feature/x");
    const refused = await store.create(second, { conflictsWith: sameBranchLive(second) });
    expect(refused).toMatchObject({ ok: false, code: "conflict", conflicting: { id: first.id } });
    expect((await store.read(second.id)).ok).toBe(false);

    await store.transition(first.id, "failed");
    await store.transition(first.id, "removed");
    expect(await store.create(second, { conflictsWith: sameBranchLive(second) })).toMatchObject({ ok: true });
  });

  it("lets exactly one of many concurrent creators claim a branch", async () => {
    const store = makeStore();
    const candidates = Array.from({ length: 10 }, () => sampleManifest(store, "feature/race"));
    const results = await Promise.all(
      candidates.map((candidate) =>
        store.create(candidate, { conflictsWith: (existing) => existing.branch === candidate.branch }),
      ),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(results.filter((result) => !result.ok && result.code === "conflict")).toHaveLength(9);
    expect(await store.list()).toHaveLength(1);
  });
});

describe("update and transition", () => {
  it("appends history in order, sets updatedAt, and applies the patch", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    await store.transition(manifest.id, "provisioned", (m) => {
      m.mux = { kind: "tmux", socketPath: "/tmp/tmux-test", sessionId: "$1", windowId: "@2", paneId: "%3" };
    });
    await store.transition(
      manifest.id,
      "forked",
      (m) => {
        m.child.sessionFile = "/sessions/child.jsonl";
      },
      "forked at leaf1",
    );
    const final = await store.transition(manifest.id, "launching");

    expect(final.history.map((entry) => entry.state)).toEqual(["provisioning", "provisioned", "forked", "launching"]);
    expect(final.history[2]?.note).toBe("forked at leaf1");
    expect(final.history[1]).not.toHaveProperty("note");
    const times = final.history.map((entry) => Date.parse(entry.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(final.updatedAt).toBe(final.history[3]?.at);
    expect(final.mux).toMatchObject({ paneId: "%3" });
    expect(final.child.sessionFile).toBe("/sessions/child.jsonl");
    expect(await store.read(manifest.id)).toEqual({ ok: true, manifest: final });
  });

  it("writes nothing for a change that changes nothing: updatedAt keeps the last real change", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    const path = store.pathFor(manifest.id);
    const untouched = await expectUntouchedLater(path);
    // Still "provisioning", so nothing moves; and an update whose patch sets what is already there.
    expect(await store.transitionIfStill(manifest.id, "launching", "running")).toEqual(manifest);
    expect(await store.update(manifest.id, (m) => void (m.branch = manifest.branch))).toEqual(manifest);
    await untouched();
    const moved = await store.transitionIfStill(manifest.id, "provisioning", "provisioned");
    expect(moved.state).toBe("provisioned");
    expect(moved.history.at(-1)).toEqual({ state: "provisioned", at: moved.updatedAt });
  });

  it("rejects an illegal transition without writing", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    const path = store.pathFor(manifest.id);
    const untouched = await expectUntouchedLater(path);

    await expect(store.transition(manifest.id, "running")).rejects.toThrow(
      /Illegal handoff state transition provisioning -> running/,
    );
    await untouched();
    expect(await readdir(manifestsDir)).toEqual([`${manifest.id}.json`]);
  });

  it("rejects an update that breaks the schema or rewrites history, without writing", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    const before = await readFile(store.pathFor(manifest.id), "utf8");

    await expect(store.update(manifest.id, (m) => ({ ...m, branch: "" }))).rejects.toThrow(
      /not a valid manifest \(branch/,
    );
    await expect(
      store.update(manifest.id, (m) => {
        m.history[0] = { state: "provisioning", at: "2020-01-01T00:00:00.000Z" };
      }),
    ).rejects.toThrow(/append-only/);
    await expect(store.update(manifest.id, (m) => ({ ...m, id: "20990101-000000-other-0000" }))).rejects.toThrow(
      /id cannot change/,
    );
    expect(await readFile(store.pathFor(manifest.id), "utf8")).toBe(before);
  });

  it("changes the state only by a transition: update refuses a state change or a history entry, writing nothing", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    const before = await readFile(store.pathFor(manifest.id), "utf8");

    await expect(
      store.update(manifest.id, (m) => {
        // @ts-expect-error the draft's state is readonly: a state change is a transition
        m.state = "provisioned";
      }),
    ).rejects.toThrow(/changes its state or history; a state change is a transition/);
    await expect(store.update(manifest.id, (m) => ({ ...m, state: "failed" as const }))).rejects.toThrow(
      /a state change is a transition/,
    );
    await expect(
      store.update(manifest.id, (m) => void m.history.push({ state: "provisioning", at: m.updatedAt })),
    ).rejects.toThrow(/a state change is a transition/);
    expect(await readFile(store.pathFor(manifest.id), "utf8")).toBe(before);

    // The guarded transition moves only when its condition holds under the lock.
    expect(await store.transitionIf(manifest.id, (m) => m.branch === "other", "provisioned")).toEqual(manifest);
    expect(await readFile(store.pathFor(manifest.id), "utf8")).toBe(before);
    const moved = await store.transitionIf(
      manifest.id,
      (m) => m.branch === manifest.branch,
      "provisioned",
      undefined,
      "n",
    );
    expect(moved.state).toBe("provisioned");
    expect(moved.history.at(-1)).toEqual({ state: "provisioned", at: moved.updatedAt, note: "n" });
  });

  it("loses no update when 20 processes and 10 in-process callers update concurrently", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    for (const state of ["provisioned", "forked", "launching", "running"] as const) {
      await store.transition(manifest.id, state);
    }
    const script = join(tempRoot, "transition-child.mjs");
    await writeFile(
      script,
      [
        "const [storeUrl, dir, id, note] = process.argv.slice(2);",
        "const { ManifestStore } = await import(storeUrl);",
        'await new ManifestStore(dir).transition(id, "running", undefined, note);',
      ].join("\n"),
    );
    const childNotes = Array.from({ length: 20 }, (_, i) => `child-${i}`);
    const inProcessNotes = Array.from({ length: 10 }, (_, i) => `in-process-${i}`);
    await Promise.all([
      ...childNotes.map((note) =>
        execFileAsync(process.execPath, [
          "--experimental-strip-types",
          "--disable-warning=ExperimentalWarning",
          script,
          STORE_MODULE_URL,
          manifestsDir,
          manifest.id,
          note,
        ]),
      ),
      ...inProcessNotes.map((note) => store.transition(manifest.id, "running", undefined, note)),
    ]);

    const result = await store.read(manifest.id);
    if (!result.ok) throw new Error(result.message);
    const notes = result.manifest.history.flatMap((entry) => (entry.note === undefined ? [] : [entry.note]));
    expect(notes).toHaveLength(30);
    expect(new Set(notes)).toEqual(new Set([...childNotes, ...inProcessNotes]));
    expect((await readdir(manifestsDir)).sort()).toEqual([`${manifest.id}.json`]);
  }, 60_000);
});

describe("locks", () => {
  it("takes over a lock left long ago by a killed process at once", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    const lockDir = `${store.pathFor(manifest.id)}.lock`;
    await mkdir(lockDir);
    const longAgo = new Date(Date.now() - 60_000);
    await utimes(lockDir, longAgo, longAgo);

    const started = Date.now();
    await store.transition(manifest.id, "provisioned");
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((await store.read(manifest.id)).ok && (await readdir(manifestsDir))).toEqual([`${manifest.id}.json`]);
  });

  it("waits for a recently abandoned lock to go stale (10 s), then takes it over", async () => {
    const store = makeStore();
    const manifest = await createOrFail(store, sampleManifest(store));
    const lockDir = `${store.pathFor(manifest.id)}.lock`;
    await mkdir(lockDir);
    const nineSecondsAgo = new Date(Date.now() - 9_000);
    await utimes(lockDir, nineSecondsAgo, nineSecondsAgo);

    const started = Date.now();
    const updated = await store.transition(manifest.id, "provisioned");
    const waited = Date.now() - started;
    expect(updated.state).toBe("provisioned");
    expect(waited).toBeGreaterThanOrEqual(500);
    expect(waited).toBeLessThan(5_000);
  });

  it("gives up on a live lock after the bounded wait instead of blocking", async () => {
    const store = makeStore({ lockWaitMs: 500 });
    const manifest = await createOrFail(store, sampleManifest(store));
    const lockDir = `${store.pathFor(manifest.id)}.lock`;
    await mkdir(lockDir);

    const started = Date.now();
    const error: unknown = await store.transition(manifest.id, "provisioned").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ManifestStoreError);
    expect(error).toMatchObject({ code: "locked" });
    expect(Date.now() - started).toBeLessThan(3_000);
    // The other holder's lock is left alone, and nothing was written.
    expect((await stat(lockDir)).isDirectory()).toBe(true);
    expect(await store.read(manifest.id)).toEqual({ ok: true, manifest });
  });
});

describe("writeFileAtomic", () => {
  it("leaves no temp file behind and honours overwrite: false", async () => {
    const target = join(tempRoot, "file.json");
    await writeFileAtomic(target, "1\n");
    await writeFileAtomic(target, "2\n");
    expect(await readFile(target, "utf8")).toBe("2\n");
    await expect(writeFileAtomic(target, "3\n", { overwrite: false })).rejects.toMatchObject({ code: "EEXIST" });
    expect(await readFile(target, "utf8")).toBe("2\n");
    expect(await readdir(tempRoot)).toEqual(["file.json"]);

    writeFileAtomicSync(target, "4\n");
    expect(() => writeFileAtomicSync(target, "5\n", { overwrite: false })).toThrow(/EEXIST/);
    expect(await readFile(target, "utf8")).toBe("4\n");
    expect(await readdir(tempRoot)).toEqual(["file.json"]);
  });

  it("never shows a reader in another process a partial file", async () => {
    const target = join(tempRoot, "watched.json");
    const stopFile = join(tempRoot, "stop");
    const readerScript = join(tempRoot, "reader.mjs");
    const content = (i: number) => `${JSON.stringify({ i, pad: "x".repeat((i * 7919) % 50_000) }, null, 2)}\n`;
    await writeFileAtomic(target, content(0));
    await writeFile(
      readerScript,
      [
        'import { existsSync, readFileSync } from "node:fs";',
        "const [target, stopFile] = process.argv.slice(2);",
        "let reads = 0, failures = 0, firstFailure = null;",
        'process.stdout.write("ready\\n");',
        "while (!existsSync(stopFile)) {",
        '  try { JSON.parse(readFileSync(target, "utf8")); } catch (e) { failures++; firstFailure ??= String(e); }',
        "  reads++;",
        "}",
        "process.stdout.write(JSON.stringify({ reads, failures, firstFailure }) + '\\n');",
      ].join("\n"),
    );
    const reader = spawn(process.execPath, [readerScript, target, stopFile], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    reader.stdout.setEncoding("utf8");
    const ready = new Promise<void>((resolve) => {
      reader.stdout.on("data", (chunk: string) => {
        output += chunk;
        if (output.includes("ready\n")) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) => reader.on("exit", resolve));
    await ready;

    for (let i = 1; i <= 200; i++) await writeFileAtomic(target, content(i));
    await writeFile(stopFile, "");
    expect(await exited).toBe(0);

    const summary = JSON.parse(output.split("\n")[1] ?? "") as {
      reads: number;
      failures: number;
      firstFailure: string | null;
    };
    expect(summary.failures, summary.firstFailure ?? "").toBe(0);
    expect(summary.reads).toBeGreaterThan(200);
    expect(await readFile(target, "utf8")).toBe(content(200));
    expect((await readdir(tempRoot)).sort()).toEqual(["reader.mjs", "stop", "watched.json"]);
  }, 30_000);
});
