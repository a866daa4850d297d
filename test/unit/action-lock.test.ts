/**
 * The per-handoff action lock (`ManifestStore.withActionLock`) and the store's leftovers
 * (`leftovers`, `sweepLeftovers`), with real processes as holders and writers: a live holder is
 * answered `busy` at once, naming it; a SIGKILLed holder's lock is taken over by exactly one
 * taker; temp files go only when their writer is dead (or the file is too old to be anyone's).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newManifest } from "../../src/manifest/factory.ts";
import { isActionBusy, ManifestStore, TEMP_MAX_AGE_MS } from "../../src/manifest/store.ts";
import { deadPid } from "../support/recovery-rig.ts";

const STORE_MODULE_URL = pathToFileURL(fileURLToPath(new URL("../../src/manifest/store.ts", import.meta.url))).href;
const SHA = "0123456789abcdef0123456789abcdef01234567";

let tempRoot: string;
let store: ManifestStore;

beforeEach(async () => {
  tempRoot = await mkdtemp(join(tmpdir(), "action-lock-"));
  store = ManifestStore.forAgentDir(join(tempRoot, "agent"));
});

afterEach(async () => {
  await rm(tempRoot, { recursive: true, force: true });
});

async function createHandoff(branch = "feature/lock"): Promise<string> {
  const id = store.newId(branch);
  const created = await store.create(
    newManifest({
      id,
      now: new Date(),
      branch,
      base: { ref: "main", sha: SHA },
      repo: { root: "/repo", commonDir: "/repo/.git" },
      parent: { sessionFile: "/s/p.jsonl", sessionId: "p", leafId: "l", cwd: "/repo" },
      worktree: { path: `/repo.worktrees/${branch}` },
      mux: { kind: "tmux" },
    }),
  );
  if (!created.ok) throw new Error(created.message);
  return id;
}

/** A separate process holding `id`'s action lock for `action` until it is killed; resolves once it holds it. */
async function holderProcess(id: string, action: string): Promise<ChildProcess> {
  const script = join(tempRoot, "hold.mjs");
  await writeFile(
    script,
    [
      "const [storeUrl, dir, id, action] = process.argv.slice(2);",
      "const { ManifestStore } = await import(storeUrl);",
      "await new ManifestStore(dir).withActionLock(id, action, async () => {",
      '  process.stdout.write("held\\n");',
      "  await new Promise(() => setInterval(() => {}, 60_000));",
      "});",
    ].join("\n"),
  );
  const child = spawn(
    process.execPath,
    [
      "--experimental-strip-types",
      "--disable-warning=ExperimentalWarning",
      script,
      STORE_MODULE_URL,
      store.dir,
      id,
      action,
    ],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      if (chunk.includes("held")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`holder exited (${code}) before holding the lock`)));
  });
  return child;
}

async function killed(child: ChildProcess): Promise<number> {
  const pid = child.pid ?? 0;
  const exited = new Promise((resolve) => child.on("exit", resolve));
  child.kill("SIGKILL");
  await exited;
  return pid;
}

describe("withActionLock", () => {
  it("answers a second actor at once with busy, naming the holder's action, pid and start, and never runs its action", async () => {
    const id = await createHandoff();
    const holder = await holderProcess(id, "relaunch");
    try {
      let ran = false;
      const answer = await store.withActionLock(id, "remove", async () => {
        ran = true;
        return "removed";
      });
      expect(ran).toBe(false);
      expect(isActionBusy(answer)).toBe(true);
      if (!isActionBusy(answer)) throw new Error("not busy");
      expect(answer.holder).toMatchObject({ id, action: "relaunch", pid: holder.pid });
      expect(answer.message).toBe(
        `Handoff ${id} is busy: process ${holder.pid} is relaunching it (since ${answer.holder.since}); nothing was done, try again once it has finished.`,
      );
      expect(await store.actionHolder(id)).toEqual(answer.holder);
    } finally {
      await killed(holder);
    }
  });

  it("takes over the lock of a SIGKILLed holder, runs the action, and leaves no lock behind", async () => {
    const id = await createHandoff();
    const holder = await holderProcess(id, "handoff");
    const pid = await killed(holder);
    expect(existsSync(join(store.dir, `.${id}.action`))).toBe(true);
    expect(await store.actionHolder(id)).toBeUndefined();
    const leftovers = await store.leftovers();
    expect(leftovers.map((entry) => [entry.kind, entry.name, entry.abandoned])).toEqual([
      ["action_lock", `.${id}.action`, true],
    ]);
    expect(leftovers[0]?.reason).toMatch(
      new RegExp(`^the action lock of handoff ${id}: handoff by pid ${pid} since .+, which is gone$`),
    );

    const answer = await store.withActionLock(id, "relaunch", async () => {
      const during = JSON.parse(await readFile(join(store.dir, `.${id}.action`), "utf8")) as {
        pid: number;
        action: string;
      };
      return `ran as ${during.action} by ${during.pid}`;
    });
    expect(answer).toBe(`ran as relaunch by ${process.pid}`);
    expect((await readdir(store.dir)).sort()).toEqual([`${id}.json`]);
  });

  it("of eight takers racing for a dead holder's lock exactly one acts; the others are told who", async () => {
    const id = await createHandoff();
    await killed(await holderProcess(id, "relaunch"));
    let running = 0;
    let ran = 0;
    // The one that acts holds on until all the others have answered, so none can come after it.
    let answered = 0;
    let allAnswered: () => void = () => {};
    const othersDone = new Promise<void>((resolve) => (allAnswered = resolve));
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        store
          .withActionLock(id, "relaunch", async () => {
            running += 1;
            ran += 1;
            expect(running).toBe(1);
            await Promise.race([othersDone, new Promise((resolve) => setTimeout(resolve, 30_000))]);
            running -= 1;
            return "done";
          })
          .then((answer) => {
            if (isActionBusy(answer) && ++answered === 7) allAnswered();
            return answer;
          }),
      ),
    );
    expect(ran).toBe(1);
    expect(answers.filter((answer) => answer === "done")).toHaveLength(1);
    const busy = answers.filter(isActionBusy);
    expect(busy).toHaveLength(7);
    for (const answer of busy) expect(answer.holder).toMatchObject({ action: "relaunch", pid: process.pid });
    expect((await readdir(store.dir)).sort()).toEqual([`${id}.json`]);
  });

  it("is released when the action throws, and can be taken before the manifest exists", async () => {
    const id = store.newId("not-yet");
    await expect(store.withActionLock(id, "handoff", async () => Promise.reject(new Error("boom")))).rejects.toThrow(
      "boom",
    );
    expect(await store.withActionLock(id, "handoff", async () => "again")).toBe("again");
    expect(await readdir(store.dir)).toEqual([]);
  });
});

describe("leftovers and the sweep", () => {
  it("sweeps temp files of dead writers and too-old ones, and keeps live writers' temp files and unknown files", async () => {
    const id = await createHandoff();
    const dead = await deadPid();
    const deadTemp = `.${id}.json.${dead}.0123abcd.tmp`;
    const liveTemp = `.${id}.json.${process.pid}.89abcdef.tmp`;
    const oldTemp = `.${id}.json.${process.pid}.deadbeef.tmp`;
    for (const name of [deadTemp, liveTemp, oldTemp, "notes.txt", `${id}.post-create.sh`])
      await writeFile(join(store.dir, name), "{");
    const longAgo = new Date(Date.now() - TEMP_MAX_AGE_MS - 60_000);
    await utimes(join(store.dir, oldTemp), longAgo, longAgo);
    await mkdir(join(store.dir, ".store.lock"));
    await utimes(join(store.dir, ".store.lock"), longAgo, longAgo);
    await mkdir(join(store.dir, `${id}.json.lock`));

    const found = await store.leftovers();
    expect(Object.fromEntries(found.map((entry) => [entry.name, [entry.kind, entry.abandoned]]))).toEqual({
      [deadTemp]: ["temp", true],
      [oldTemp]: ["temp", true],
      [liveTemp]: ["temp", false],
      ".store.lock": ["lock", true],
      [`${id}.json.lock`]: ["lock", false],
      "notes.txt": ["unknown", false],
    });
    const reasonOf = (name: string) => found.find((entry) => entry.name === name)?.reason;
    expect(reasonOf(deadTemp)).toBe(`a temp file whose writer (pid ${dead}) is gone`);
    expect(reasonOf(liveTemp)).toBe(`a temp file being written by pid ${process.pid}`);

    const swept = await store.sweepLeftovers();
    expect(swept.map((entry) => entry.name).sort()).toEqual([deadTemp, oldTemp, ".store.lock"].sort());
    expect((await readdir(store.dir)).sort()).toEqual(
      [liveTemp, `${id}.json`, `${id}.json.lock`, `${id}.post-create.sh`, "notes.txt"].sort(),
    );
    // The manifest itself is untouched.
    expect((await store.read(id)).ok).toBe(true);
  });

  it("counts a handoff's launcher files as its own, and a dead launcher's note temp file as a temp file", async () => {
    const id = await createHandoff();
    const dead = await deadPid();
    const own = [
      ".launch.sh",
      ".launch.params",
      ".launch.window",
      ".launch.pid",
      ".launch.started",
      ".launch.refused",
    ].map((suffix) => `${id}${suffix}`);
    const noteTemp = `${id}.launch.started.${dead}.tmp`;
    for (const name of [...own, noteTemp]) await writeFile(join(store.dir, name), "x");
    expect((await store.leftovers()).map((entry) => [entry.name, entry.kind, entry.abandoned])).toEqual([
      [noteTemp, "temp", true],
    ]);
    expect((await store.sweepLeftovers()).map((entry) => entry.name)).toEqual([noteTemp]);
    expect((await readdir(store.dir)).sort()).toEqual([`${id}.json`, ...own].sort());
  });

  it("does not sweep the action lock of a live holder", async () => {
    const id = await createHandoff();
    const holder = await holderProcess(id, "remove");
    try {
      expect((await store.leftovers()).map((entry) => [entry.kind, entry.abandoned])).toEqual([["action_lock", false]]);
      expect(await store.sweepLeftovers()).toEqual([]);
      expect(existsSync(join(store.dir, `.${id}.action`))).toBe(true);
    } finally {
      await killed(holder);
    }
    expect((await store.sweepLeftovers()).map((entry) => entry.kind)).toEqual(["action_lock"]);
    expect(await readdir(store.dir)).toEqual([`${id}.json`]);
  });

  it("never takes over, nor sweeps, the lock of a holder on another machine sharing the directory", async () => {
    const id = await createHandoff();
    // A pid that is free here says nothing about a process on the machine that wrote the lock.
    const pid = await deadPid();
    const since = new Date().toISOString();
    const record = { id, action: "land", pid, start: "boot/1", host: "another-machine", since };
    const lockFile = join(store.dir, `.${id}.action`);
    await writeFile(lockFile, `${JSON.stringify(record)}\n`);
    let ran = false;
    const answer = await store.withActionLock(id, "remove", async () => {
      ran = true;
    });
    expect(ran).toBe(false);
    if (!isActionBusy(answer)) throw new Error("not busy");
    expect(answer.holder).toEqual(record);
    expect(answer.message).toBe(
      `Handoff ${id} is busy: process ${pid} is landing it (since ${since}); nothing was done, try again once it has finished. Process ${pid} runs on another machine (another-machine), where this one cannot check it, so it counts as alive. If that process has ended (or another-machine is this machine under an earlier name), delete ${lockFile} and try again.`,
    );
    expect((await store.leftovers()).map((entry) => [entry.kind, entry.abandoned])).toEqual([["action_lock", false]]);
    expect(await store.sweepLeftovers()).toEqual([]);
    expect(JSON.parse(await readFile(lockFile, "utf8"))).toEqual(record);
    // The way out the message names (a container's hostname changed, say) works as said.
    await rm(lockFile);
    await store.withActionLock(id, "remove", async () => {
      ran = true;
    });
    expect(ran).toBe(true);
  });
});
