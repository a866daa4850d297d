/**
 * The Herdr output decoder: which stream, which envelope, what is tolerated and what is rejected.
 */
import { describe, expect, it } from "vitest";
import {
  decodeHerdrOutput,
  isHerdrId,
  PaneInfoResultSchema,
  PaneProcessInfoSchema,
  WorkspaceInfoResultSchema,
} from "../../src/mux/herdr/protocol.ts";

const workspace = {
  active_tab_id: "w2:t1",
  agent_status: "unknown",
  focused: true,
  label: "feat",
  number: 2,
  pane_count: 1,
  tab_count: 1,
  workspace_id: "w2",
};
const focusLine = JSON.stringify({ id: "cli:workspace:focus", result: { type: "workspace_info", workspace } });

describe("decodeHerdrOutput", () => {
  it("decodes a success from stdout, tolerating keys it does not know", () => {
    const extra = JSON.stringify({
      id: "cli:workspace:focus",
      result: { type: "workspace_info", workspace: { ...workspace, tokens: { a: "b" } }, later: 1 },
    });
    expect(decodeHerdrOutput({ stdout: `${extra}\n`, stderr: "" }, WorkspaceInfoResultSchema)).toEqual({
      kind: "result",
      result: { type: "workspace_info", workspace },
    });
  });

  it("finds the JSON line after a warning line", () => {
    expect(
      decodeHerdrOutput({ stdout: `warning: config has issues\n${focusLine}\n`, stderr: "" }, WorkspaceInfoResultSchema)
        .kind,
    ).toBe("result");
  });

  it("decodes an error envelope from stderr, or in-band from stdout", () => {
    const error = JSON.stringify({
      error: { code: "workspace_not_found", message: "workspace w9 not found" },
      id: "cli:workspace:focus",
    });
    const expected = { kind: "error", code: "workspace_not_found", message: "workspace w9 not found" };
    expect(decodeHerdrOutput({ stdout: "", stderr: `${error}\n` }, WorkspaceInfoResultSchema)).toEqual(expected);
    expect(decodeHerdrOutput({ stdout: `${error}\n`, stderr: "" }, WorkspaceInfoResultSchema)).toEqual(expected);
  });

  it("rejects a missing required key, a null optional, a wrong result type and an id that could be an option", () => {
    const { workspace_id: _dropped, ...withoutId } = workspace;
    const missing = JSON.stringify({ id: "x", result: { type: "workspace_info", workspace: withoutId } });
    expect(decodeHerdrOutput({ stdout: missing, stderr: "" }, WorkspaceInfoResultSchema)).toEqual({
      kind: "malformed",
      detail:
        "unexpected workspace_info result (workspace.workspace_id: Invalid input: expected string, received undefined)",
    });
    const nulled = JSON.stringify({
      id: "x",
      result: { type: "workspace_info", workspace: { ...workspace, worktree: null } },
    });
    expect(decodeHerdrOutput({ stdout: nulled, stderr: "" }, WorkspaceInfoResultSchema).kind).toBe("malformed");
    const otherType = JSON.stringify({ id: "x", result: { type: "pane_info", pane: {} } });
    expect(decodeHerdrOutput({ stdout: otherType, stderr: "" }, WorkspaceInfoResultSchema).kind).toBe("malformed");
    const optionLike = JSON.stringify({
      id: "x",
      result: { type: "workspace_info", workspace: { ...workspace, workspace_id: "--force" } },
    });
    expect(decodeHerdrOutput({ stdout: optionLike, stderr: "" }, WorkspaceInfoResultSchema).kind).toBe("malformed");
  });

  it("calls truncated JSON malformed and no output at all silent", () => {
    expect(
      decodeHerdrOutput(
        { stdout: '{"id":"cli:workspace:focus","result":{"type":"works\n', stderr: "" },
        WorkspaceInfoResultSchema,
      ),
    ).toEqual({
      kind: "malformed",
      detail: 'output is not JSON: "{\\"id\\":\\"cli:workspace:focus\\",\\"result\\":{\\"type\\":\\"works"',
    });
    expect(decodeHerdrOutput({ stdout: "", stderr: "" }, WorkspaceInfoResultSchema)).toEqual({ kind: "silent" });
  });

  it("reads an omitted foreground_processes as an empty list (Herdr skips empty lists)", () => {
    const line = JSON.stringify({
      id: "cli:pane:process_info",
      result: { type: "pane_process_info", process_info: { pane_id: "w1R:p2" } },
    });
    expect(decodeHerdrOutput({ stdout: line, stderr: "" }, PaneProcessInfoSchema)).toEqual({
      kind: "result",
      result: { type: "pane_process_info", process_info: { pane_id: "w1R:p2", foreground_processes: [] } },
    });
  });
});

describe("Herdr ids", () => {
  it("accepts every id Herdr prints, today's and the hex ids of 0.6.10 and earlier (kept by restores)", () => {
    for (const id of [
      "w1",
      "w1R",
      "w1R:t2",
      "w1R:p0",
      "w18b2c4d5e6f7a1",
      "w18b2c4d5e6f7a1:1",
      "w18b2c4d5e6f7a1-3",
      "w_1",
      "3",
    ]) {
      expect(isHerdrId(id)).toBe(true);
    }
  });

  it("refuses only what could be read as an option or break an argument", () => {
    for (const id of [
      "",
      "-w1",
      "--help",
      "w1 :p1",
      " w1",
      "w1\t",
      "w1\n",
      "w1\u0000",
      "w1\u007f",
      "w1\u0085",
      "x".repeat(257),
    ]) {
      expect(isHerdrId(id)).toBe(false);
    }
  });

  it("decodes a pane with a legacy id and the agent session Herdr keeps for it", () => {
    const pane = {
      agent: "pi",
      agent_session: { agent: "pi", kind: "path", source: "herdr:pi", value: "/s/child.jsonl" },
      agent_status: "idle",
      focused: false,
      pane_id: "w18b2c4d5e6f7a1-1",
      revision: 0,
      tab_id: "w18b2c4d5e6f7a1:1",
      terminal_id: "term_1",
      workspace_id: "w18b2c4d5e6f7a1",
    };
    const decoded = decodeHerdrOutput(
      { stdout: JSON.stringify({ id: "cli:pane:get", result: { type: "pane_info", pane } }), stderr: "" },
      PaneInfoResultSchema,
    );
    expect(decoded).toEqual({ kind: "result", result: { type: "pane_info", pane } });
    const optionLike = { ...pane, pane_id: "--help" };
    const refused = decodeHerdrOutput(
      { stdout: JSON.stringify({ id: "cli:pane:get", result: { type: "pane_info", pane: optionLike } }), stderr: "" },
      PaneInfoResultSchema,
    );
    expect(refused.kind).toBe("malformed");
  });
});
