import { describe, expect, it } from "vitest";
import { parseStat } from "../../src/process/procfs.ts";

describe("parseStat", () => {
  it("takes the fields after the last ')' when the command name holds spaces and parentheses", () => {
    const text = "4242 (a) (b c) S 17 4242 4242 34816 4242 4194304 120 0 0 0 1 0 0 0 20 0 1 0 99\n";
    expect(parseStat(text)).toEqual({
      pid: 4242,
      comm: "a) (b c",
      state: "S",
      ppid: 17,
      pgrp: 4242,
      session: 4242,
      ttyNr: 34816,
      tpgid: 4242,
    });
  });

  it("keeps a negative tpgid (no controlling terminal)", () => {
    expect(parseStat("7 (kthreadd) S 2 0 0 0 -1 0")?.tpgid).toBe(-1);
  });

  it("rejects text that is not a stat line", () => {
    expect(parseStat("")).toBeUndefined();
    expect(parseStat("12 (x) S 1 2")).toBeUndefined();
    expect(parseStat("12 x) S 1 2 3 4 5")).toBeUndefined();
  });
});

// The readers on real processes are tested through the port, beside the portable implementation
// (test/unit/process-facts.test.ts).
