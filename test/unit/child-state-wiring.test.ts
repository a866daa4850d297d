/**
 * The child's state wiring (pi-extension/child-state.ts) loads the terminal's reporter beside the
 * session's start, not on its way: what happens before the reporter is there is told to the
 * terminal once it is (here Herdr's own Pi integration, which listens for dialogs on a channel).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChildStateWiring } from "../../pi-extension/child-state.ts";
import { ChildStatePublisher } from "../../src/child/child-state.ts";

type Handler = (event: Record<string, unknown>) => Promise<void>;

const HERDR_PANE = { HERDR_ENV: "1", HERDR_PANE_ID: "p_1", HERDR_SOCKET_PATH: "/nonexistent/herdr.sock" };

let dir: string;
let saved: Record<string, string | undefined>;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "phw-wiring-"));
  // Herdr's own Pi integration, installed: its reporter only relays dialogs (no Herdr call).
  mkdirSync(join(dir, "extensions"));
  writeFileSync(join(dir, "extensions", "herdr-agent-state.ts"), "// HERDR_INTEGRATION_ID=pi\n");
  saved = Object.fromEntries(Object.keys(HERDR_PANE).map((name) => [name, process.env[name]]));
  Object.assign(process.env, HERDR_PANE);
});

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  rmSync(dir, { recursive: true, force: true });
});

function rig() {
  const handlers = new Map<string, Handler>();
  const emitted: [string, unknown][] = [];
  const pi = {
    on: (event: string, handler: Handler) => handlers.set(event, handler),
    events: { emit: (channel: string, payload: unknown) => emitted.push([channel, payload]) },
  } as unknown as ExtensionAPI;
  const ctx = {
    mode: "tui",
    sessionManager: { getSessionFile: () => join(dir, "session.jsonl"), getBranch: () => [] },
    isIdle: () => true,
  } as unknown as ExtensionContext;
  const wiring = new ChildStateWiring(new ChildStatePublisher({ agentDir: dir, onError: () => {} }), dir);
  wiring.register(pi);
  const fire = (event: string, payload: Record<string, unknown> = {}) => handlers.get(event)?.(payload);
  return { wiring, ctx, emitted, fire };
}

describe("ChildStateWiring", () => {
  it("tells the terminal of a dialog opened before its reporter was loaded, once it is", async () => {
    const { wiring, ctx, emitted, fire } = rig();
    wiring.begin(ctx, "startup");
    await fire("ui_prompt_start", { kind: "confirm", title: "Allow the edit?" });
    expect(emitted).toEqual([]);
    await wiring.terminalLoaded();
    expect(emitted).toEqual([["herdr:blocked", { active: true, label: "Allow the edit?" }]]);
    await fire("ui_prompt_end");
    expect(emitted.at(-1)).toEqual(["herdr:blocked", { active: false }]);
  });

  it("says nothing of a dialog that closed before the reporter was there", async () => {
    const { wiring, ctx, emitted, fire } = rig();
    wiring.begin(ctx, "startup");
    await fire("ui_prompt_start", { kind: "confirm", title: "Allow the edit?" });
    await fire("ui_prompt_end");
    await wiring.terminalLoaded();
    expect(emitted).toEqual([]);
    await fire("ui_prompt_start", { kind: "select" });
    expect(emitted).toEqual([["herdr:blocked", { active: true, label: "waiting for input" }]]);
  });
});
