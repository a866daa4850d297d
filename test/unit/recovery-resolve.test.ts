/**
 * Naming a handoff: the exact id, a unique start of an id, or a branch (the live handoff of that
 * branch over removed records of it); several matches refused listing them; nothing guessed.
 */
import { describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import type { ListEntry } from "../../src/manifest/store.ts";
import { resolveHandoffName } from "../../src/inventory/resolve.ts";

function entry(id: string, branch: string, state: Manifest["state"]): ListEntry {
  // Only the fields resolution reads.
  return { ok: true, id, path: `/m/${id}.json`, manifest: { id, branch, state } as unknown as Manifest };
}

const store = {
  dir: "/agent/handoff-worktree/manifests",
  list: async (): Promise<ListEntry[]> => [
    entry("20260101-000000-feat-a-0001", "feat/a", "removed"),
    entry("20260102-000000-feat-a-0002", "feat/a", "running"),
    entry("20260103-000000-feat-b-0003", "feat/b", "removed"),
    entry("20260103-000000-feat-b-0004", "feat/b", "removed"),
    {
      ok: false,
      id: "20260104-000000-broken-0005",
      path: "/m/broken.json",
      error: "Manifest file /m/broken.json is not valid JSON.",
    },
  ],
};

describe("resolveHandoffName", () => {
  it.each([
    ["20260101-000000-feat-a-0001", "20260101-000000-feat-a-0001"],
    ["20260102", "20260102-000000-feat-a-0002"],
    // A branch names its live handoff, not the removed record of an earlier one.
    ["feat/a", "20260102-000000-feat-a-0002"],
    // An unreadable manifest can still be named (and then reports its error).
    ["20260104", "20260104-000000-broken-0005"],
  ])("%s names %s", async (name, id) => {
    expect(await resolveHandoffName(store, name)).toEqual({ ok: true, id });
  });

  it("refuses a name that matches several, listing them, and one that matches none", async () => {
    expect(await resolveHandoffName(store, "feat/b")).toEqual({
      ok: false,
      code: "ambiguous",
      message:
        '"feat/b" names 2 handoffs (20260103-000000-feat-b-0003 (feat/b, removed), 20260103-000000-feat-b-0004 (feat/b, removed)); give more of the id.',
    });
    expect(await resolveHandoffName(store, "2026010")).toMatchObject({
      ok: false,
      code: "ambiguous",
      message: expect.stringMatching(/^"2026010" names 5 handoffs /),
    });
    expect(await resolveHandoffName(store, "feat/c")).toEqual({
      ok: false,
      code: "not_found",
      message: 'There is no handoff with id or branch "feat/c" in /agent/handoff-worktree/manifests.',
    });
    expect(await resolveHandoffName(store, " ")).toMatchObject({ ok: false, code: "not_found" });
  });
});
