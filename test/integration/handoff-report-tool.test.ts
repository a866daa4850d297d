/**
 * The child's `handoff_report` tool and `/handoff-report` command (pi-extension/handoff-report.ts)
 * on a real repository and handoff store: the tool is registered only in a handoff child, writes
 * one report with the branch's commits (oldest first), and refuses outside a handoff child; the
 * command without text in print mode sends nothing.
 */
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { afterEach, describe, expect, it } from "vitest";
import { registerHandoffReport, REPORT_TOOL } from "../../pi-extension/handoff-report.ts";
import { rmSync } from "node:fs";
import { sendChildReport } from "../../src/adoption/reports.ts";
import { ChildReportStore } from "../../src/manifest/child-reports.ts";
import { HANDOFF_MESSAGE_TYPE } from "../../src/session/handoff-message.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";

let rig: LandRig | undefined;
afterEach(() => rig?.cleanup());

type Handler = (event: unknown, ctx: ExtensionContext) => Promise<void>;
interface Registered {
  tools: Map<string, { execute: (...args: unknown[]) => Promise<{ content: { text: string }[]; isError?: boolean }> }>;
  commands: Map<string, { handler: (args: string, ctx: ExtensionCommandContext) => Promise<void> }>;
  on: Map<string, Handler>;
}

function fakePi(): { pi: ExtensionAPI; registered: Registered } {
  const registered: Registered = { tools: new Map(), commands: new Map(), on: new Map() };
  const pi = {
    registerTool: (tool: { name: string }) => registered.tools.set(tool.name, tool as never),
    registerCommand: (name: string, command: unknown) => registered.commands.set(name, command as never),
    on: (event: string, handler: Handler) => registered.on.set(event, handler),
  } as unknown as ExtensionAPI;
  return { pi, registered };
}

function childContext(r: LandRig | undefined, hasUI = false): ExtensionContext {
  const branch =
    r === undefined
      ? []
      : [
          {
            type: "custom_message",
            customType: HANDOFF_MESSAGE_TYPE,
            details: {
              handoffId: r.id,
              manifestPath: r.store.pathFor(r.id),
              branch: r.branch,
              baseRef: "main",
              baseSha: r.repo.run(["rev-parse", "main"]),
              worktreePath: r.worktree,
              mainCheckout: r.repo.root,
              parentSessionFile: r.parentSessionFile,
              hasTask: false,
              taskOmittedChars: 0,
              redactions: {},
            },
          },
        ];
  return { hasUI, sessionManager: { getBranch: () => branch } } as unknown as ExtensionContext;
}

describe("handoff_report", () => {
  it("is registered in a handoff child only, and writes one report with the branch's commits", async () => {
    const r = (rig = await createLandRig());
    const first = r.commitInWorktree("a.txt", "a\n", "add a");
    const second = r.commitInWorktree("b.txt", "b\n", "add b");
    // The extension reads its agent dir (and git its config) from the process environment: point both into the rig.
    const saved = {
      PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR,
      HOME: process.env.HOME,
      XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME,
    };
    Object.assign(process.env, {
      PI_CODING_AGENT_DIR: r.agentDir,
      HOME: r.repo.home,
      XDG_CONFIG_HOME: `${r.repo.home}/.config`,
    });
    try {
      const { pi, registered } = fakePi();
      registerHandoffReport(pi);
      expect([...registered.commands.keys()]).toEqual(["handoff-report"]);
      await registered.on.get("session_start")?.({}, childContext(undefined));
      expect(registered.tools.size).toBe(0);
      await registered.on.get("session_start")?.({}, childContext(r));
      const tool = registered.tools.get(REPORT_TOOL);
      if (tool === undefined) throw new Error("the tool was not registered in the child");
      const result = await tool.execute(
        "call-1",
        { done: "added a and b", left: "docs" },
        undefined,
        undefined,
        childContext(r),
      );
      expect(result.content[0]?.text).toBe(
        "Report sent to the parent session (2 commits on feat/land); it is delivered there at its next idle point.",
      );
      const { reports } = await ChildReportStore.forAgentDir(r.agentDir).list(r.id);
      expect(
        reports.map((report) => [
          report.kind,
          report.text,
          report.left,
          report.commits.map((c) => c.sha),
          report.parentSessionFile,
        ]),
      ).toEqual([["report", "added a and b", "docs", [first, second], r.parentSessionFile]]);

      // Outside a handoff child: refused, nothing written.
      const refused = await tool.execute("call-2", { done: "x" }, undefined, undefined, childContext(undefined));
      expect(refused).toMatchObject({
        isError: true,
        content: [
          {
            text: "This session is not a handoff child (it has no handoff message), so it has no parent to report to.",
          },
        ],
      });
      // The command without text in print mode sends nothing.
      const exitCode = process.exitCode;
      const stderr = process.stderr.write;
      let written = "";
      process.stderr.write = ((text: string) => ((written += text), true)) as typeof process.stderr.write;
      try {
        await registered.commands.get("handoff-report")?.handler("  ", childContext(r) as ExtensionCommandContext);
      } finally {
        process.stderr.write = stderr;
        process.exitCode = exitCode;
      }
      expect(written).toBe(
        "Nothing was sent: give the report's text (/handoff-report <what was done, what is left>).\n",
      );
      expect((await ChildReportStore.forAgentDir(r.agentDir).list(r.id)).reports).toHaveLength(1);
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it("says that git failed, not that the report could not be written, when the commits cannot be read", async () => {
    const r = (rig = await createLandRig());
    rmSync(r.worktree, { recursive: true, force: true });
    const outcome = await sendChildReport(
      { ...r.deps(), reports: ChildReportStore.forAgentDir(r.agentDir) },
      { handoffId: r.id, text: "done" },
    );
    expect(outcome).toMatchObject({ ok: false, code: "failed" });
    expect(outcome.message).toMatch(/^The branch's commits could not be read, so no report was sent: ./);
    expect((await ChildReportStore.forAgentDir(r.agentDir).list(r.id)).reports).toEqual([]);
  });
});
