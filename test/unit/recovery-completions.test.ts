/**
 * `/handoffs` completion: the commands first, then the handoff a command takes (by branch, or by
 * id when the typed text starts one), newest first, never removed ones.
 */
import { describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import type { ListEntry } from "../../src/manifest/store.ts";
import { completeRecoveryArgs } from "../../src/cli/completions.ts";
import { handoffNames } from "../../src/cli/shell-completion.ts";

function entry(id: string, branch: string, state: Manifest["state"]): ListEntry {
  // Only the fields completion reads.
  return { ok: true, id, path: `/m/${id}.json`, manifest: { id, branch, state } as unknown as Manifest };
}

const store = {
  list: async (): Promise<ListEntry[]> => [
    entry("20260101-000000-feat-a-0001", "feat/a", "running"),
    entry("20260102-000000-feat-b-0002", "feat/b", "launch_unconfirmed"),
    entry("20260103-000000-old-0003", "feat/old", "removed"),
    {
      ok: false,
      id: "20260104-000000-broken-0004",
      path: "/m/broken.json",
      error: "Manifest file /m/broken.json is not valid JSON.",
    },
  ],
};

describe("completeRecoveryArgs", () => {
  it("offers the commands, with what each does", async () => {
    expect((await completeRecoveryArgs("", store))?.map((item) => item.value)).toEqual([
      "list ",
      "inspect ",
      "env ",
      "focus ",
      "relaunch ",
      "remove ",
      "prune ",
      "land ",
      "forecast ",
      "rebase ",
      "tree ",
    ]);
    expect(await completeRecoveryArgs("re", store)).toEqual([
      { value: "relaunch ", label: "relaunch", description: "start its Pi again" },
      { value: "remove ", label: "remove", description: "close its window and delete its worktree (asks first)" },
      {
        value: "rebase ",
        label: "rebase",
        description: "re-make its commits on the tip of the branch it lands into, and tell its Pi",
      },
    ]);
  });

  it("offers the handoffs a command takes: by branch, by id, newest first, not removed ones", async () => {
    expect(await completeRecoveryArgs("focus feat/", store)).toEqual([
      { value: "focus feat/b ", label: "feat/b", description: "20260102-000000-feat-b-0002 (launch_unconfirmed)" },
      { value: "focus feat/a ", label: "feat/a", description: "20260101-000000-feat-a-0001 (running)" },
    ]);
    expect(await completeRecoveryArgs("remove 20260101", store)).toEqual([
      {
        value: "remove 20260101-000000-feat-a-0001 ",
        label: "20260101-000000-feat-a-0001",
        description: "feat/a (running)",
      },
    ]);
  });

  it("offers nothing for a word typed out whole, so Enter runs the command", async () => {
    expect(await completeRecoveryArgs("list", store)).toBeNull();
    expect(await completeRecoveryArgs("remove feat/a", store)).toBeNull();
    expect(await completeRecoveryArgs("inspect 20260102-000000-feat-b-0002", store)).toBeNull();
    // A removed handoff's branch is not a complete name: nothing of it is offered anyway.
    expect(await completeRecoveryArgs("remove feat/old", store)).toBeNull();
    expect((await completeRecoveryArgs("remove feat/", store))?.map((item) => item.label)).toEqual([
      "feat/b",
      "feat/a",
    ]);
  });

  it("offers nothing where nothing fits", async () => {
    expect(await completeRecoveryArgs("list ", store)).toBeNull();
    expect(await completeRecoveryArgs("focus feat/a ", store)).toBeNull();
    expect(await completeRecoveryArgs("remove --", store)).toBeNull();
    expect(await completeRecoveryArgs("zz", store)).toBeNull();
    expect(
      await completeRecoveryArgs("focus ", { list: async () => Promise.reject(new Error("unreadable")) }),
    ).toBeNull();
  });
});

describe("the names a shell's completion offers", () => {
  it("offers a branch that starts with - by its id alone, which the command line cannot take for options", () => {
    expect(
      handoffNames([
        entry("20261207-010101-dash-aaaa", "-lead", "running"),
        entry("20261207-020202-plain-bbbb", "feat/plain", "running"),
        entry("20261207-030303-gone-cccc", "feat/gone", "removed"),
      ]),
    ).toEqual(["feat/plain", "20261207-020202-plain-bbbb", "20261207-010101-dash-aaaa"]);
  });
});
