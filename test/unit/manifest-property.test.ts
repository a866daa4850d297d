/**
 * Property tests for the manifest format: any valid manifest survives the store's round trip
 * unchanged, and any malformed file comes back as a typed `invalid`, never a crash.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import {
  HANDOFF_STATES,
  HANDOFF_STEPS,
  ManifestSchema,
  MANIFEST_VERSION,
  type Manifest,
} from "../../src/manifest/schema.ts";
import { ManifestStore, serializeManifest } from "../../src/manifest/store.ts";

const dir = mkdtempSync(join(tmpdir(), "manifest-prop-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const iso = fc
  .date({ min: new Date("2020-01-01T00:00:00Z"), max: new Date("2035-01-01T00:00:00Z"), noInvalidDate: true })
  .map((d) => d.toISOString());
const text = fc.string({ unit: "grapheme", maxLength: 60 });
const path = fc
  .array(fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 5 })
  .map((parts) => `/${parts.join("/")}`);
const sha = fc.stringMatching(/^[0-9a-f]{40}$/);
const id = fc.stringMatching(/^[a-z0-9][a-z0-9-]{2,40}$/);
const state = fc.constantFrom(...HANDOFF_STATES);
const step = fc.constantFrom(...HANDOFF_STEPS);

const tmuxLocation = fc.record(
  { kind: fc.constant("tmux" as const), socketPath: path, sessionId: text, windowId: text, paneId: text },
  { requiredKeys: ["kind"] },
);
const herdrLocation = fc.record(
  { kind: fc.constant("herdr" as const), socketPath: path, workspaceId: text, tabId: text, paneId: text },
  { requiredKeys: ["kind"] },
);

const manifestArbitrary: fc.Arbitrary<Manifest> = fc
  .record(
    {
      id,
      createdAt: iso,
      updatedAt: iso,
      state,
      history: fc.array(fc.record({ state, at: iso, note: text }, { requiredKeys: ["state", "at"] }), {
        minLength: 1,
        maxLength: 8,
      }),
      branch: text.filter((s) => s.length > 0),
      base: fc.record({ ref: text, sha }),
      repo: fc.record({ root: path, commonDir: path }),
      parent: fc.record({ sessionFile: path, sessionId: text, leafId: fc.option(text, { nil: null }), cwd: path }),
      worktree: fc.record({ path }),
      mux: fc.oneof(tmuxLocation, herdrLocation),
      child: fc.record(
        {
          sessionFile: path,
          sessionId: text,
          pid: fc.integer({ min: 1, max: 4_000_000 }),
          ackAt: iso,
          confirmedBy: fc.constantFrom("ack" as const, "probe" as const),
          command: text,
        },
        { requiredKeys: [] },
      ),
      task: text,
      focus: fc.oneof(fc.record({ at: iso }), fc.record({ error: text, at: iso })),
      error: fc.record({ step, message: text, at: iso }),
    },
    {
      requiredKeys: [
        "id",
        "createdAt",
        "updatedAt",
        "state",
        "history",
        "branch",
        "base",
        "repo",
        "parent",
        "worktree",
        "mux",
        "child",
      ],
    },
  )
  .map((fields) => ({ version: MANIFEST_VERSION, ...fields }) as Manifest)
  // Only what the schema itself accepts is a valid manifest.
  .filter((m) => ManifestSchema.safeParse(m).success);

describe("manifest format properties", () => {
  it("any valid manifest round-trips through its file form unchanged", () => {
    fc.assert(
      fc.property(manifestArbitrary, (manifest) => {
        const decoded = ManifestSchema.parse(JSON.parse(serializeManifest(manifest)));
        expect(decoded).toEqual(manifest);
      }),
      { numRuns: 300 },
    );
  });

  it("any valid manifest written to the store reads back equal", async () => {
    const store = new ManifestStore(join(dir, "roundtrip"));
    await fc.assert(
      fc.asyncProperty(manifestArbitrary, async (manifest) => {
        const unique = { ...manifest, id: `${manifest.id.slice(0, 30)}-${Math.random().toString(16).slice(2, 10)}` };
        const created = await store.create(unique);
        expect(created.ok).toBe(true);
        const read = await store.read(unique.id);
        expect(read).toEqual({ ok: true, manifest: unique });
      }),
      { numRuns: 60 },
    );
  });

  it("any malformed file is reported as invalid, never thrown", async () => {
    const store = new ManifestStore(join(dir, "malformed"));
    mkdirSync(store.dir, { recursive: true });
    const target = store.pathFor("malformed-one");
    const junk = fc.oneof(
      fc.string(),
      fc.json(),
      manifestArbitrary.chain((m) =>
        fc
          .constantFrom<(x: Manifest) => unknown>(
            (x) => ({ ...x, version: 2 }),
            (x) => ({ ...x, state: "exploded" }),
            (x) => ({ ...x, history: [] }),
            (x) => ({ ...x, base: { ref: "main", sha: "not-a-sha" } }),
            (x) => ({ ...x, surprise: true }),
            (x) => JSON.stringify(x).slice(0, 40),
          )
          .map((mutate) => JSON.stringify(mutate(m))),
      ),
    );
    await fc.assert(
      fc.asyncProperty(junk, async (content) => {
        writeFileSync(target, typeof content === "string" ? content : JSON.stringify(content));
        const read = await store.read("malformed-one");
        expect(read.ok).toBe(false);
        if (!read.ok) {
          expect(read.code).toBe("invalid");
          expect(read.message).toMatch(/\.$/);
        }
      }),
      { numRuns: 300 },
    );
  });
});
