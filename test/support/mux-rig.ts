/**
 * The backend an end-to-end test runs the real Pi on, one rig per multiplexer: a private tmux
 * server, or the Herdr double (the parent in a Herdr pane, HERDR_ENV=1, no $TMUX). Both give the
 * parent's pane, a way to run a shell line in it, and a handoff's child pane from its manifest, so a
 * scenario written once (test/support/return-trip.ts, test/support/handoff-scenario.ts) runs on
 * either; the raw tmux or Herdr handle stays on the rig for what only that backend can show.
 */
import { expect } from "vitest";
import type { HerdrLocation, Manifest, MuxKind, MuxLocation, TmuxLocation } from "../../src/manifest/schema.ts";
import type { TempRepo } from "./git-repo.ts";
import { startHerdrDouble, type HerdrDouble, type HerdrDoubleOptions } from "./herdr.ts";
import type { PiSandbox } from "./pi.ts";
import { startPrivateTmux, type PrivateTmux } from "./tmux.ts";
import { herdrPane, tmuxPane, type PaneDriver } from "./tui.ts";

interface RigBase {
  /** The pane the parent Pi runs in. */
  parentPane: PaneDriver;
  /** The parent pane's id, as the backend names it. */
  parentPaneId: string;
  /** Runs a shell line in the parent's pane. */
  runInParentPane(line: string): Promise<void>;
  /** The pane of a handoff's child, from its manifest. */
  childPane(manifest: Manifest): PaneDriver;
  stop(): Promise<void>;
}

export interface TmuxRig extends RigBase {
  kind: "tmux";
  tmux: PrivateTmux;
  /** The manifest's tmux location; throws for any other. */
  locate(manifest: Manifest): TmuxLocation;
}

export interface HerdrRig extends RigBase {
  kind: "herdr";
  herdr: HerdrDouble;
  /** The workspace the parent's pane is in (focused when the rig starts). */
  parentWorkspaceId: string;
  /** The manifest's Herdr location; throws for any other. */
  locate(manifest: Manifest): HerdrLocation;
}

export type MuxRig = TmuxRig | HerdrRig;

/** Reads a manifest's location as `kind`'s; throws for any other. */
function locator<K extends MuxKind>(kind: K, name: string): (manifest: Manifest) => Extract<MuxLocation, { kind: K }> {
  return (manifest) => {
    if (manifest.mux.kind !== kind) throw new Error(`expected a ${name} location, got ${manifest.mux.kind}`);
    return manifest.mux as Extract<MuxLocation, { kind: K }>;
  };
}

function paneOf(location: MuxLocation): string {
  if (location.paneId === undefined) throw new Error(`The manifest records no ${location.kind} pane.`);
  return location.paneId;
}

export async function startTmuxRig(sandbox: PiSandbox): Promise<TmuxRig> {
  const tmux = await startPrivateTmux({ env: sandbox.env });
  const parentPane = tmuxPane(tmux, tmux.firstPaneId);
  const locate = locator("tmux", "tmux");
  return {
    kind: "tmux",
    tmux,
    parentPane,
    parentPaneId: tmux.firstPaneId,
    runInParentPane: async (line) => {
      await parentPane.type(line);
      await parentPane.enter();
    },
    locate,
    childPane: (manifest) => tmuxPane(tmux, paneOf(locate(manifest))),
    stop: () => tmux.kill(),
  };
}

export async function startHerdrRig(sandbox: PiSandbox, repo: TempRepo, options: Omit<HerdrDoubleOptions, "env"> = {}): Promise<HerdrRig> {
  const herdr = await startHerdrDouble({ ...options, env: sandbox.env });
  const parent = await herdr.openWorkspace(repo.root, "parent");
  const locate = locator("herdr", "Herdr");
  return {
    kind: "herdr",
    herdr,
    parentPane: herdrPane(herdr, parent.paneId),
    parentPaneId: parent.paneId,
    parentWorkspaceId: parent.workspaceId,
    runInParentPane: async (line) => {
      // `pane run` types the line and answers nothing on success.
      expect(await herdr.herdr(["pane", "run", parent.paneId, line])).toEqual({ exitCode: 0, stdout: "", stderr: "" });
    },
    locate,
    childPane: (manifest) => herdrPane(herdr, paneOf(locate(manifest))),
    stop: () => herdr.kill(),
  };
}
