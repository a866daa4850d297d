import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  createPortableFacts,
  environmentFlag,
  parseEnvironMarkers,
  parseLsofCwds,
  parseLsofPids,
  parsePsRows,
  type CommandAnswer,
  type CommandRunner,
} from "../../src/process/portable.ts";
import { sameStart } from "../../src/process/facts.ts";
import { acquireSessionLease, readSessionLease } from "../../src/child/lease.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";

const fixture = (name: string): Promise<string> =>
  readFile(join(import.meta.dirname, "..", "fixtures", "ps", name), "utf8");

describe("parsePsRows", () => {
  it("reads procps output captured on Linux, with zombies and names holding spaces and parentheses", async () => {
    const rows = parsePsRows(await fixture("procps-status.txt"));
    expect(rows).toEqual([
      {
        pid: 1,
        ppid: 0,
        pgid: 0,
        tpgid: -1,
        zombie: false,
        name: "process_api",
        startedAtSeconds: Date.UTC(2026, 11, 1, 7, 14, 49) / 1000,
      },
      {
        pid: 16698,
        ppid: 16697,
        pgid: 16698,
        tpgid: 16730,
        zombie: false,
        name: "bash",
        startedAtSeconds: Date.UTC(2026, 11, 1, 7, 24, 52) / 1000,
      },
      {
        pid: 16730,
        ppid: 16698,
        pgid: 16730,
        tpgid: 16730,
        zombie: false,
        name: "sleep",
        startedAtSeconds: Date.UTC(2026, 11, 1, 7, 24, 53) / 1000,
      },
      {
        pid: 16788,
        ppid: 16743,
        pgid: 16693,
        tpgid: -1,
        zombie: true,
        name: "python3",
        startedAtSeconds: Date.UTC(2026, 11, 1, 7, 24, 53) / 1000,
      },
      {
        pid: 16801,
        ppid: 16698,
        pgid: 16801,
        tpgid: 16730,
        zombie: false,
        name: "x) (y z",
        startedAtSeconds: Date.UTC(2026, 0, 14, 23, 5, 9) / 1000,
      },
    ]);
  });

  it("reads macOS output as its man page documents it: state flags after the letter, comm as the first argument", async () => {
    const rows = parsePsRows(await fixture("macos-status.txt"));
    expect(rows.map((row) => [row.pid, row.ppid, row.pgid, row.tpgid, row.zombie, row.name])).toEqual([
      [1, 0, 1, 0, false, "launchd"],
      [612, 611, 612, 640, false, "-zsh"],
      [640, 612, 640, 640, false, "pi"],
      [655, 640, 640, 640, false, "node"],
      [701, 612, 701, 640, true, "<defunct>"],
      [702, 612, 702, 640, false, "My App"],
    ]);
    expect(rows[2]?.startedAtSeconds).toBe(Date.UTC(2026, 11, 1, 7, 24, 53) / 1000);
  });

  it("skips headers, blank lines and lines cut short (a process that vanished mid-print)", () => {
    const text =
      "  PID  PPID\n\n  12    1    12    -1 S Tue Dec  1 07:14:49\n  13    1    13    -1 S Tue Xyz  1 07:14:49 2026 a\n  14    1    14    -1 S Tue Dec  1 07:14:49 2026 b\n";
    expect(parsePsRows(text).map((row) => row.pid)).toEqual([14]);
  });
});

describe("parseEnvironMarkers", () => {
  it("finds the marker after the arguments in procps `ps e` output, the last one winning", async () => {
    const markers = parseEnvironMarkers(await fixture("procps-environ.txt"), "PI_HANDOFF_ID");
    expect([...markers]).toEqual([
      [16730, "h-abc-1"],
      [16732, "h-real-2"],
    ]);
  });

  it("finds the marker in macOS `ps -E` output", async () => {
    expect([...parseEnvironMarkers(await fixture("macos-environ.txt"), "PI_HANDOFF_ID")]).toEqual([[640, "h-mac-1"]]);
  });

  it("does not take a longer variable name or an empty value for the marker", () => {
    expect([
      ...parseEnvironMarkers("5 pi XPI_HANDOFF_ID=no PI_HANDOFF_ID_OLD=no PI_HANDOFF_ID=\n", "PI_HANDOFF_ID"),
    ]).toEqual([]);
  });
});

describe("parseLsofCwds", () => {
  it("maps each p<pid> to its n<path>, paths with spaces intact", async () => {
    expect([...parseLsofCwds(await fixture("lsof-cwd.txt"))]).toEqual([
      [16698, "/work/repo"],
      [16730, "/work/repo wt/with space"],
    ]);
  });
});

describe("parseLsofPids", () => {
  it("takes each p<pid> once (a process listening on IPv4 and IPv6 is two entries), nothing else", () => {
    expect(parseLsofPids("p4242\nf21\np4242\nf22\np77\nf3\n")).toEqual([4242, 77]);
    expect(parseLsofPids("")).toEqual([]);
  });
});

describe("environmentFlag", () => {
  it("uses -E on macOS, the BSD-style e with procps, -e on the other BSDs", () => {
    expect(environmentFlag("darwin")).toBe("-E");
    expect(environmentFlag("linux")).toBe("e");
    expect(environmentFlag("freebsd")).toBe("-e");
  });
});

/** A runner answering from canned output, recording what was asked. */
function cannedRunner(answers: (file: string, args: readonly string[]) => CommandAnswer): {
  run: CommandRunner;
  calls: string[];
} {
  const calls: string[] = [];
  return {
    calls,
    run: async (file, args) => {
      calls.push(`${file} ${args.join(" ")}`);
      return answers(file, args);
    },
  };
}

describe("the portable facts on canned output", () => {
  it("answers a lease holder's identity (alive, start token, start time) from one ps", async () => {
    const line = `${String(process.pid).padStart(7)}       1 ${String(process.pid).padStart(7)} ${String(process.pid).padStart(7)} S+   Tue Dec  1 07:24:53 2026 node`;
    const { run, calls } = cannedRunner(() => ({ ok: true, stdout: line }));
    const facts = createPortableFacts({ run, platform: "linux" });
    const agentDir = makeTempDir("portable-lease-");
    try {
      const sessionFile = join(agentDir, "s.jsonl");
      expect((await acquireSessionLease({ agentDir, sessionFile, facts })).ok).toBe(true);
      calls.length = 0;
      expect(await readSessionLease(agentDir, sessionFile, { facts })).toMatchObject({
        state: "live",
        pid: process.pid,
      });
      expect(calls).toEqual([`ps -ww -o pid=,ppid=,pgid=,tpgid=,state=,lstart=,comm= -p ${process.pid}`]);
    } finally {
      removeTempDir(agentDir);
    }
  });

  const status = [
    "  640   612   640   640 S+   Tue Dec  1 07:24:53 2026 pi",
    "  641   612   641   640 S+   Tue Dec  1 07:24:54 2026 pi",
    "  701   612   701   640 Z    Tue Dec  1 07:25:01 2026 <defunct>",
  ].join("\n");

  it("describes what is still there when processes vanish between the ps and lsof reads", async () => {
    const { run, calls } = cannedRunner((file, args) => {
      if (file === "ps" && args.includes("-A")) return { ok: true, stdout: status };
      // 641 exited after the table was read: neither its environment nor its cwd is printed.
      if (file === "ps" && args[0] === "-E")
        return { ok: true, stdout: "  640 pi PI_HANDOFF_ID=h-mac-1 HOME=/Users/me\n" };
      if (file === "lsof") return { ok: true, stdout: "p640\nfcwd\nn/\n" };
      return { ok: true, stdout: status };
    });
    const facts = createPortableFacts({ run, platform: "darwin" });
    const found = await facts.findByName("pi");
    expect(found).toEqual({
      processes: [
        { pid: 640, name: "pi", cwd: "/", handoffId: "h-mac-1" },
        { pid: 641, name: "pi" },
      ],
    });
    // The listing's rows are described as they are: ps is not asked for them a second time.
    expect(calls).toEqual([
      "ps -A -ww -o pid=,ppid=,pgid=,tpgid=,state=,lstart=,comm=",
      "ps -E -ww -o pid=,command= -p 640,641",
      "lsof -w -a -d cwd -p 640,641 -Fn",
    ]);
  });

  it("leaves out a pid that is gone by the time it is described, and zombies", async () => {
    const { run } = cannedRunner(() => ({
      ok: true,
      stdout: "  701   612   701   640 Z    Tue Dec  1 07:25:01 2026 <defunct>\n",
    }));
    const facts = createPortableFacts({ run, platform: "darwin" });
    expect(await facts.describe([700, 701])).toEqual({ processes: [] });
    expect(await facts.status(700)).toBeUndefined();
    expect(await facts.status(701)).toEqual({
      pid: 701,
      ppid: 612,
      pgid: 701,
      tpgid: 640,
      zombie: true,
      name: "<defunct>",
    });
  });

  it("says so when lsof is missing, instead of reporting processes without a cwd as the whole truth", async () => {
    const { run } = cannedRunner((file) =>
      file === "lsof" ? { ok: false, code: "missing", message: "lsof is not installed" } : { ok: true, stdout: status },
    );
    const found = await createPortableFacts({ run, platform: "linux" }).findByName("pi");
    expect(found.processes.map((p) => p.pid)).toEqual([640, 641]);
    expect(found.problem).toBe("Process working directories could not be read (lsof is not installed).");
  });

  it("says so when ps times out, and finds nothing rather than claiming no process runs", async () => {
    const { run } = cannedRunner(() => ({ ok: false, code: "timeout", message: "ps did not answer within 5 s" }));
    const facts = createPortableFacts({ run, platform: "linux" });
    expect(await facts.findByName("pi")).toEqual({
      processes: [],
      problem: "Running processes could not be looked for: ps did not answer within 5 s.",
    });
    expect(await facts.startToken(process.pid)).toBeUndefined();
    expect(await facts.descendants(612)).toEqual([]);
  });

  it("builds the start token from lstart, comparable only with its own kind, and asks no ps about a pid that is gone", async () => {
    const pid = process.pid;
    const { run, calls } = cannedRunner(() => ({
      ok: true,
      stdout: `${String(pid).padStart(7)}   612 ${String(pid).padStart(7)}   640 S+   Tue Dec  1 07:24:53 2026 pi\n`,
    }));
    const facts = createPortableFacts({ run, platform: "darwin" });
    const token = await facts.startToken(pid);
    expect(token).toBe(`ps:${Date.UTC(2026, 11, 1, 7, 24, 53) / 1000}`);
    expect(await facts.startTimeMs(pid)).toBe(Date.UTC(2026, 11, 1, 7, 24, 53));
    expect(await facts.identify(pid)).toEqual({
      alive: true,
      start: token,
      startedAtMs: Date.UTC(2026, 11, 1, 7, 24, 53),
    });
    calls.length = 0;
    const gone = 2 ** 22 + 12_345;
    expect([
      await facts.startToken(gone),
      await facts.startTimeMs(gone),
      await facts.isAlive(gone),
      await facts.identify(gone),
    ]).toEqual([undefined, undefined, false, { alive: false }]);
    expect(calls).toEqual([]);
    expect(sameStart(token, `ps:${Date.UTC(2026, 11, 1, 7, 24, 53) / 1000}`)).toBe(true);
    expect(sameStart(token, "ps:1")).toBe(false);
    expect(sameStart(token, "0b8e-boot-id/12345")).toBeUndefined();
    expect(sameStart(token, undefined)).toBeUndefined();
  });
});
