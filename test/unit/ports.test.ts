/**
 * Choosing a handoff's ports: lowest free first, never one a live handoff holds (removed ones hold
 * none), bounded by a deadline; and through the real store, concurrent creators never share a port.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newManifest } from "../../src/manifest/factory.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import type { PortProbe } from "../../src/ports/probe.ts";
import { choosePorts, portsHeldBy } from "../../src/ports/reserve.ts";

const SHA = "0123456789abcdef0123456789abcdef01234567";
const alwaysFree: PortProbe = { check: async () => ({ free: true }) };

function manifest(store: ManifestStore, branch: string, extra: Partial<Manifest> = {}): Manifest {
  return {
    ...newManifest({
      id: store.newId(branch),
      now: new Date("2025-03-04T05:06:07.000Z"),
      branch,
      base: { ref: "main", sha: SHA },
      repo: { root: "/repo", commonDir: "/repo/.git" },
      parent: { sessionFile: "/s/p.jsonl", sessionId: "p", leafId: "l", cwd: "/repo" },
      worktree: { path: `/wt/${branch}` },
      mux: { kind: "tmux" },
    }),
    ...extra,
  };
}

const RECOVERY = { recoveryCommand: "pi-handoff" };

describe("choosePorts", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "phw-ports-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("counts the ports of every live handoff, of any repository, and none of a removed one", () => {
    const store = new ManifestStore(dir);
    expect(
      portsHeldBy([
        manifest(store, "a", { ports: [4100, 4101] }),
        manifest(store, "b", { ports: [5000], repo: { root: "/other", commonDir: "/other/.git" }, state: "failed" }),
        manifest(store, "c", { ports: [4102], state: "removed" }),
        manifest(store, "d"),
      ]),
    ).toEqual(new Set([4100, 4101, 5000]));
  });

  it("gives up at its deadline, saying how far it got", async () => {
    let now = 0;
    const slow: PortProbe = {
      check: async () => {
        now += 400;
        return { free: true };
      },
    };
    expect(
      await choosePorts({ count: 5, range: [4100, 4199] }, new Set(), slow, {
        recoveryCommand: "/opt/phw/bin/pi-handoff.mjs",
        deadlineMs: 1_000,
        nowMs: () => now,
      }),
    ).toEqual({
      ok: false,
      code: "ports_unavailable",
      found: [4100, 4101, 4102],
      message:
        'Only 3 of the 5 ports asked for are free in 4100-4199 (gave up after 1 s of bind tests (3 ports tried)); remove handoffs you no longer need (/opt/phw/bin/pi-handoff.mjs list), or widen "ports" in the settings.',
    });
  });

  it("names the held ports when the range is full of other handoffs' ports", async () => {
    expect(
      await choosePorts({ count: 1, range: [4100, 4101] }, new Set([4100, 4101, 9999]), alwaysFree, RECOVERY),
    ).toMatchObject({
      ok: false,
      message: expect.stringContaining("(2 held by other handoffs)"),
    });
  });

  it("never gives one port to two of many handoffs created at once through the store", async () => {
    const store = new ManifestStore(dir);
    const creations = Array.from({ length: 10 }, (_, index) => manifest(store, `feat/${index}`)).map((candidate) =>
      store.create(candidate, {
        reserve: async (others) => {
          // A bind test that yields, so the creators interleave wherever the lock lets them.
          const probe: PortProbe = {
            check: () => new Promise((resolve) => setTimeout(() => resolve({ free: true }), 1)),
          };
          const chosen = await choosePorts({ count: 2, range: [4100, 4199] }, portsHeldBy(others), probe, RECOVERY);
          return chosen.ok ? { ok: true, manifest: { ...candidate, ports: chosen.ports } } : chosen;
        },
      }),
    );
    const results = await Promise.all(creations);
    const ports = results.flatMap((result) => (result.ok ? (result.manifest.ports ?? []) : []));
    expect(results.every((result) => result.ok)).toBe(true);
    // The lowest twenty, each once: every creator saw the ports of those before it.
    expect([...ports].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, index) => 4100 + index));
    const stored = (await store.list()).flatMap((entry) => (entry.ok ? (entry.manifest.ports ?? []) : []));
    expect(stored.sort((a, b) => a - b)).toEqual([...ports].sort((a, b) => a - b));
  });

  it("writes nothing when the reservation refuses, and reads an old manifest without ports", async () => {
    const store = new ManifestStore(dir);
    const old = manifest(store, "old");
    expect(await store.create(old)).toMatchObject({ ok: true });
    expect((await store.read(old.id)).ok && (await store.read(old.id))).toMatchObject({ manifest: { id: old.id } });
    const refused = await store.create(manifest(store, "new"), {
      reserve: async () => ({ ok: false, message: "No ports." }),
    });
    expect(refused).toEqual({ ok: false, code: "unavailable", message: "No ports." });
    expect((await store.list()).map((entry) => entry.id)).toEqual([old.id]);
  });
});
