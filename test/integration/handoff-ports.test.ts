/**
 * Issue 27's acceptance, end to end on real git, a private tmux server and the real store: two
 * handoffs started at once as two processes (the driver: the real transaction; the stand-in child
 * started by the real launcher), each asking for 2 ports in one repository, get four distinct free
 * ports; each child's own environment (read from /proc/<pid>/environ of the process the launcher
 * started) and a postCreate command's output (a file and the pane) name its own; a relaunch keeps
 * them; `pi-handoff env` prints them (evaluated by a real sh); `inspect` reports one taken by
 * someone else; the removal frees them, and the next handoff gets exactly those.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HandoffConfig } from "../../src/config/schema.ts";
import { shellQuote } from "../../src/child/launch-command.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { loopbackProbe } from "../../src/ports/probe.ts";
import { EnvReportSchema, InspectReportSchema } from "../../src/inventory/report-schema.ts";
import { killAndWait } from "../support/recovery-rig.ts";
import {
  createWorld,
  listInventory,
  runCli,
  runDriver,
  standInPiOnPath,
  type DriverRun,
  type World,
} from "../support/reliability.ts";
import { waitFor } from "../support/tmux.ts";

/** The variables the test looks at in an environment. */
const WATCHED = /^(PI_HANDOFF_PORTS?|DEV_URL|DB_PORT)=/;

function watched(entries: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    entries
      .filter((entry) => WATCHED.test(entry))
      .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
  );
}

/** The environment the process `pid` was started with, as the kernel holds it. */
function environOf(pid: number): Record<string, string> {
  return watched(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0"));
}

/** What a handoff holding `ports` must give everything run for it. */
function expectedFor(ports: readonly number[]): Record<string, string> {
  return {
    PI_HANDOFF_PORT: String(ports[0]),
    PI_HANDOFF_PORTS: ports.join(","),
    DEV_URL: `http://127.0.0.1:${ports[0]}/`,
    DB_PORT: String(ports[1]),
  };
}

describe("each handoff its own ports and environment", () => {
  let world: World;
  let cliEnv: Record<string, string>;
  let config: HandoffConfig;
  let range: [number, number];
  let barriers = 0;

  beforeAll(async () => {
    world = await createWorld({ prefix: "phw-ports-" });
    cliEnv = {
      ...world.env,
      PATH: `${standInPiOnPath(world.dir)}:${world.env.PATH ?? ""}`,
      PI_HANDOFF_CONFIRM_TIMEOUT_MS: "60000",
    };
    // A range of its own, below every ephemeral range, so parallel test files do not meet in it.
    const first = 21_000 + Math.floor(Math.random() * 8_000);
    range = [first, first + 11];
    config = {
      ports: { count: 2, range },
      env: { DEV_URL: "http://127.0.0.1:${PORT}/", DB_PORT: "${PORT_2}" },
      // Its output names what the command got, in the pane and in a file per handoff.
      postCreate: [
        `printf 'postCreate got %s %s %s\\n' "$PI_HANDOFF_PORTS" "$DEV_URL" "$DB_PORT" | tee ${shellQuote(world.dir)}/post-create-"$PI_HANDOFF_ID"`,
      ],
    };
  });
  afterAll(async () => {
    await world?.cleanup();
  });

  async function manifestOf(id: string): Promise<Manifest> {
    const read = await world.store.read(id);
    if (!read.ok) throw new Error(read.message);
    return read.manifest;
  }

  /** Handoffs as separate processes, released at the same moment by a barrier file. */
  async function together(branches: readonly string[]): Promise<Manifest[]> {
    const barrier = join(world.dir, `go-${barriers++}`);
    const pending = branches.map((branch) =>
      runDriver(world.driverConfig(branch, { barrier, confirmMs: 60_000, focus: false, config }), world.env, 120_000),
    );
    const ready = () => readdirSync(world.dir).filter((name) => name.startsWith(`${basename(barrier)}.ready-`)).length;
    await waitFor(() => ready() === branches.length, {
      timeoutMs: 60_000,
      description: "every driver to wait at the barrier",
    });
    writeFileSync(barrier, "");
    const runs: DriverRun[] = await Promise.all(pending);
    expect(runs.map((run) => run.result?.code ?? `${run.status} ${run.stderr}`)).toEqual(branches.map(() => "running"));
    return Promise.all(runs.map((run) => manifestOf(run.result?.id ?? "")));
  }

  it("two at once get four distinct free ports, given to postCreate and the child; relaunch, env, inspect and removal", async () => {
    const [a, b] = await together(["feat/api", "feat/web"]);
    if (a === undefined || b === undefined) throw new Error("two handoffs expected");

    // Four distinct ports of the range, each free to bind (nothing holds them yet), recorded with the variables.
    const all = [...(a.ports ?? []), ...(b.ports ?? [])];
    expect(all).toHaveLength(4);
    expect(new Set(all).size).toBe(4);
    for (const port of all) {
      expect(port).toBeGreaterThanOrEqual(range[0]);
      expect(port).toBeLessThanOrEqual(range[1]);
      expect(await loopbackProbe.check(port)).toEqual({ free: true });
    }
    for (const handoff of [a, b]) {
      const ports = handoff.ports ?? [];
      expect(handoff.env).toEqual({ DEV_URL: `http://127.0.0.1:${ports[0]}/`, DB_PORT: String(ports[1]) });
      // The child the launcher started has its own, in its real environment.
      expect(environOf(handoff.child.pid ?? 0)).toEqual(expectedFor(ports));
      // postCreate got them too: in its file, and on the pane for the user.
      const said = `postCreate got ${ports.join(",")} http://127.0.0.1:${ports[0]}/ ${ports[1]}`;
      expect(readFileSync(join(world.dir, `post-create-${handoff.id}`), "utf8")).toBe(`${said}\n`);
      const paneId = handoff.mux.kind === "tmux" ? handoff.mux.paneId : undefined;
      expect(await world.tmux.tmux(["capture-pane", "-p", "-J", "-S", "-", "-t", paneId ?? "?"])).toContain(said);
    }

    // list shows the ports.
    const listed = await runCli(["list"], cliEnv);
    expect(listed.stdout).toMatch(/\bPORTS\b/);
    expect(listed.stdout).toContain(` ${(a.ports ?? []).join(",")} `);

    // A relaunch gives the new child the same ones.
    await killAndWait(a.child.pid ?? 0);
    const relaunched = await runCli(["relaunch", a.id, "--no-focus"], cliEnv);
    expect(relaunched.status, relaunched.stderr).toBe(0);
    const afterRelaunch = await manifestOf(a.id);
    expect(afterRelaunch.child.pid).not.toBe(a.child.pid);
    expect(afterRelaunch.ports).toEqual(a.ports);
    expect(environOf(afterRelaunch.child.pid ?? 0)).toEqual(expectedFor(a.ports ?? []));

    // pi-handoff env prints them: evaluated by a real sh, a process started there has exactly them.
    const printed = await runCli(["env", "feat/api"], cliEnv);
    expect(printed.status, printed.stderr).toBe(0);
    const shell = spawnSync("/bin/sh", ["-c", 'eval "$1"; env -0', "sh", printed.stdout], {
      env: { PATH: cliEnv.PATH ?? "/usr/bin:/bin" },
      encoding: "utf8",
      timeout: 15_000,
    });
    expect(watched(shell.stdout.split("\0"))).toEqual(expectedFor(a.ports ?? []));
    const json = await runCli(["env", a.id, "--json"], cliEnv);
    expect(EnvReportSchema.parse(JSON.parse(json.stdout)).env).toEqual(expectedFor(a.ports ?? []));

    // One of b's ports taken by someone else (this test process): inspect says so, and changes nothing.
    const [bFirst = 0, bSecond = 0] = b.ports ?? [];
    const stranger: Server = await new Promise((resolve) => {
      const server = createServer().listen(bSecond, "127.0.0.1", () => resolve(server));
    });
    try {
      const before = readFileSync(world.store.pathFor(b.id), "utf8");
      const inspected = await runCli(["inspect", b.id, "--json"], cliEnv);
      expect(InspectReportSchema.parse(JSON.parse(inspected.stdout)).handoff.portChecks).toEqual([
        { code: "free", port: bFirst },
        { code: "taken", port: bSecond, holders: [{ pid: process.pid, name: expect.any(String) }] },
      ]);
      expect((await runCli(["inspect", b.id], cliEnv)).stdout).toContain(
        `  port:          ${bSecond} TAKEN by someone else (pid ${process.pid} `,
      );
      expect(readFileSync(world.store.pathFor(b.id), "utf8")).toBe(before);
    } finally {
      await new Promise((resolve) => stranger.close(resolve));
    }

    // Removal frees a's ports; the next handoff takes exactly those (lowest free first), never b's.
    await killAndWait(afterRelaunch.child.pid ?? 0);
    const removed = await runCli(["remove", a.id], cliEnv);
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.stdout).toContain(`released ports ${(a.ports ?? []).join(", ")}`);
    expect((await runCli(["env", a.id], cliEnv)).status).toBe(1);
    const [c] = await together(["feat/next"]);
    expect(c?.ports).toEqual(a.ports);
    expect(environOf(c?.child.pid ?? 0)).toEqual(expectedFor(a.ports ?? []));
    const inventory = await listInventory(cliEnv);
    expect(inventory.handoffs.map((handoff) => [handoff.branch, handoff.ports])).toEqual([
      ["feat/web", b.ports],
      ["feat/next", a.ports],
    ]);
  });
});
