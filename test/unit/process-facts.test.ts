import { copyFile, mkdtemp, readdir, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { execa } from "execa";
import { afterEach, describe, expect, it } from "vitest";
import { processFacts, sameStart, type ProcessFacts } from "../../src/process/facts.ts";
import { portableFacts } from "../../src/process/portable.ts";
import { procfsFacts } from "../../src/process/procfs.ts";

const ROOT = join(import.meta.dirname, "..", "..");

describe("choosing the implementation", () => {
  it("takes procfs on Linux with /proc, portable when PI_HANDOFF_PROCESS_INFO=portable", () => {
    expect(processFacts({}).implementation).toBe("procfs");
    expect(processFacts({ PI_HANDOFF_PROCESS_INFO: "portable" }).implementation).toBe("portable");
  });
});

describe.each([
  ["procfs", procfsFacts],
  ["portable", portableFacts],
] as const)("the %s implementation on real processes", (_name, facts: ProcessFacts) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it("reads name, cwd, marker, parent, start and descendants, and nothing once the process is gone", async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "phw-facts-")));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const oddName = join(dir, "x) (y z");
    await copyFile("/bin/sleep", oddName);
    await execa("chmod", ["755", oddName]);
    const child = execa(oddName, ["300"], { cwd: dir, env: { PI_HANDOFF_ID: "h-1" }, reject: false });
    cleanups.push(async () => {
      child.kill("SIGKILL");
      await child;
    });
    const pid = child.pid ?? 0;

    const status = await facts.status(pid);
    expect(status).toMatchObject({ pid, ppid: process.pid, zombie: false, name: "x) (y z" });
    expect(await facts.describe([pid, 2 ** 30])).toEqual({
      processes: [{ pid, name: "x) (y z", cwd: dir, handoffId: "h-1" }],
    });
    expect(await facts.descendants(process.pid)).toContain(pid);
    expect(await facts.isAlive(pid)).toBe(true);
    const token = await facts.startToken(pid);
    expect(token).toBeDefined();
    expect(sameStart(token, await facts.startToken(pid))).toBe(true);
    const startedMs = (await facts.startTimeMs(pid)) ?? 0;
    // Whole seconds at worst (ps), so within a couple of seconds of now.
    expect(Math.abs(startedMs - Date.now())).toBeLessThan(60_000);
    // The same three answers in one question.
    expect(await facts.identify(pid)).toEqual({ alive: true, start: token, startedAtMs: startedMs });

    child.kill("SIGKILL");
    await child;
    expect(await facts.isAlive(pid)).toBe(false);
    expect(await facts.status(pid)).toBeUndefined();
    expect(await facts.startToken(pid)).toBeUndefined();
    expect(await facts.identify(pid)).toEqual({ alive: false });
    expect(await facts.describe([pid])).toEqual({ processes: [] });
  });

  it("sees the terminal's foreground group, which the tmux shell wait relies on", async () => {
    const socket = `phw-facts-${process.pid}-${_name}`;
    await execa("tmux", ["-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "20", "sh"]);
    cleanups.push(async () => {
      await execa("tmux", ["-L", socket, "kill-server"], { reject: false });
    });
    const panePid = Number((await execa("tmux", ["-L", socket, "list-panes", "-F", "#{pane_pid}"])).stdout.trim());
    let status = await facts.status(panePid);
    for (let i = 0; i < 50 && status?.tpgid !== panePid; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await facts.status(panePid);
    }
    expect(status).toMatchObject({ pid: panePid, pgid: panePid, tpgid: panePid });
  });

  it("names the processes listening on a TCP port, over IPv4 and IPv6, and none where nothing listens", async () => {
    const listen = async (host: string): Promise<{ pid: number; port: number }> => {
      const child = execa(
        process.execPath,
        [
          "-e",
          `const s = require("net").createServer().listen(0, ${JSON.stringify(host)}, () => console.log(s.address().port)); setInterval(() => {}, 1e5);`,
        ],
        { reject: false, buffer: false },
      );
      cleanups.push(async () => {
        child.kill("SIGKILL");
        await child;
      });
      const port = await new Promise<number>((resolve) =>
        child.stdout?.once("data", (chunk) => resolve(Number(String(chunk).trim()))),
      );
      return { pid: child.pid ?? 0, port };
    };
    const v4 = await listen("127.0.0.1");
    const v6 = await listen("::1");
    expect(await facts.listeners(v4.port)).toEqual({ pids: [v4.pid] });
    expect(await facts.listeners(v6.port)).toEqual({ pids: [v6.pid] });
    // A port just freed: no listener.
    const gone = await listen("127.0.0.1");
    const freed = cleanups.pop();
    await freed?.();
    expect(await facts.listeners(gone.port)).toEqual({ pids: [] });
  });

  it("tolerates pids that do not exist", async () => {
    expect(await facts.status(2 ** 30)).toBeUndefined();
    expect(await facts.descendants(2 ** 30)).toEqual([]);
    expect(await facts.isAlive(0)).toBe(false);
    expect(await facts.isAlive(-1)).toBe(false);
    expect(await facts.describe([])).toEqual({ processes: [] });
  });
});

describe("one reader of process facts", () => {
  /** The files of src/ and pi-extension/ outside src/process/ whose text matches `pattern`. */
  async function outsideProcessModule(pattern: RegExp): Promise<string[]> {
    const offenders: string[] = [];
    for (const top of ["src", "pi-extension"]) {
      for (const file of await listFiles(join(ROOT, top))) {
        const path = relative(ROOT, file);
        if (!path.startsWith("src/process/") && pattern.test(await readFile(file, "utf8"))) offenders.push(path);
      }
    }
    return offenders;
  }

  it("no module outside src/process/ mentions /proc", async () => {
    // `/proc` as a path, not the start of `/process` or `/procedure`.
    expect(await outsideProcessModule(/\/proc(?![A-Za-z])/)).toEqual([]);
  });

  it("no module outside src/process/ runs ps or lsof", async () => {
    // A command name followed by its argument array, as every runner here is called.
    expect(await outsideProcessModule(/["'](?:ps|lsof)["']\s*,\s*\[/)).toEqual([]);
  });
});

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) =>
      entry.isDirectory() ? listFiles(join(dir, entry.name)) : Promise.resolve([join(dir, entry.name)]),
    ),
  );
  return nested.flat();
}
