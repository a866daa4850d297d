/**
 * zellij's client can say a live session is not there (its one status round trip with the server
 * lost on a loaded machine), which the real zellij cannot be made to show on demand: a stand-in
 * executable says so a given number of times, then answers.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ZellijClient } from "../../src/mux/zellij/client.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A `zellij` that fails with zellij's own words `misses` times, then prints `ok`; it counts its runs. */
function standIn(misses: number, words = "There is no active session!"): { bin: string; runs: () => number } {
  const dir = mkdtempSync(join(tmpdir(), "phw-zellij-client-"));
  dirs.push(dir);
  const count = join(dir, "count");
  writeFileSync(count, "0");
  const bin = join(dir, "zellij");
  writeFileSync(
    bin,
    [
      "#!/bin/sh",
      `n=$(cat '${count}'); n=$((n + 1)); echo "$n" > '${count}'`,
      `if [ "$n" -le ${misses} ]; then echo "${words}" >&2; exit 1; fi`,
      "echo ok",
    ].join("\n"),
  );
  chmodSync(bin, 0o755);
  return { bin, runs: () => Number(readFileSync(count, "utf8").trim()) };
}

describe("ZellijClient.call and a session zellij misses for a moment", () => {
  it("asks again, and the action runs once, when the session is there on the second look", async () => {
    const zellij = standIn(1);
    const client = new ZellijClient({ bin: zellij.bin, env: { PATH: "/usr/bin:/bin" }, timeoutMs: 10_000 });
    expect(await client.call("tests", undefined, ["go-to-tab", "1"])).toEqual({ ok: true, stdout: "ok" });
    expect(zellij.runs()).toBe(2);
  });

  it("says in one sentence that the session is not there after three looks", async () => {
    const zellij = standIn(10);
    const client = new ZellijClient({ bin: zellij.bin, env: { PATH: "/usr/bin:/bin" }, timeoutMs: 10_000 });
    expect(await client.call("tests", undefined, ["go-to-tab", "1"])).toEqual({
      ok: false,
      code: "session_not_found",
      message: "zellij has no session named tests.",
    });
    expect(zellij.runs()).toBe(3);
  });

  it("takes zellij's other words for a session it cannot reach too, and nothing else for one", async () => {
    const named = standIn(10, "Session 'tests' not found. The following sessions are active:");
    const client = new ZellijClient({ bin: named.bin, env: { PATH: "/usr/bin:/bin" }, timeoutMs: 10_000 });
    expect(await client.call("tests", undefined, ["go-to-tab", "1"])).toMatchObject({ code: "session_not_found" });
    const tab = standIn(10, "Tab with id 7 not found");
    const other = new ZellijClient({ bin: tab.bin, env: { PATH: "/usr/bin:/bin" }, timeoutMs: 10_000 });
    expect(await other.call("tests", undefined, ["go-to-tab", "7"])).toEqual({
      ok: false,
      code: "zellij_failed",
      message: "zellij go-to-tab failed: Tab with id 7 not found.",
    });
    expect(tab.runs()).toBe(1);
  });
});
