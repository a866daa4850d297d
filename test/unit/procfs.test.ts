import { describe, expect, it } from "vitest";
import { listeningInodes, parseStat } from "../../src/process/procfs.ts";

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

describe("listeningInodes", () => {
  it("takes the listening sockets on the port only, from an IPv4 and an IPv6 table", () => {
    const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
    const v4 =
      header +
      "   0: 0100007F:4E20 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5551 1 0 100 0 0 10 0\n" +
      // The same port, connected (01): not a listener.
      "   1: 0100007F:4E20 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 5552 1 0 20 4 30 10 -1\n" +
      "   2: 00000000:4E21 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5553 1 0 100 0 0 10 0\n";
    const v6 =
      header +
      "   0: 00000000000000000000000001000000:4E20 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 6661 1 0 100 0 0 10 0\n";
    expect(listeningInodes(v4, 20000)).toEqual(["5551"]);
    expect(listeningInodes(v6, 20000)).toEqual(["6661"]);
    expect(listeningInodes(v4, 20002)).toEqual([]);
    expect(listeningInodes("", 20000)).toEqual([]);
  });
});

// The readers on real processes are tested through the port, beside the portable implementation
// (test/unit/process-facts.test.ts).
