/**
 * The backend an end-to-end test runs the real Pi on, one rig per multiplexer: a private tmux
 * server, Herdr (the parent in a Herdr pane, HERDR_ENV=1, no $TMUX): the real Herdr in the
 * herdr-real project, the double elsewhere (`startHerdr`), or the real zellij (a session of its own,
 * its client in a private tmux pane). Each gives the
 * parent's pane, a way to run a shell line in it, and a handoff's child pane from its manifest, so a
 * scenario written once (test/support/return-trip.ts, test/support/handoff-scenario.ts) runs on
 * either; the raw tmux or Herdr handle stays on the rig for what only that backend can show.
 */
import { expect } from "vitest";
import type { Manifest, MuxKind, MuxLocation } from "../../src/manifest/schema.ts";
import type { HerdrLocation } from "../../src/manifest/locations.ts";
import type { TmuxLocation } from "../../src/manifest/locations.ts";
import type { ZellijLocation } from "../../src/manifest/locations.ts";
import type { TempRepo } from "./git-repo.ts";
import { startHerdr, type HerdrServer, type HerdrServerOptions } from "./herdr.ts";
import type { PiSandbox } from "./pi.ts";
import { startPrivateTmux, type PrivateTmux } from "./tmux.ts";
import { herdrPane, tmuxPane, type PaneDriver } from "./tui.ts";
import { startZellij, type ZellijSession } from "./zellij.ts";

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
  herdr: HerdrServer;
  /** The workspace the parent's pane is in (focused when the rig starts). */
  parentWorkspaceId: string;
  /** The manifest's Herdr location; throws for any other. */
  locate(manifest: Manifest): HerdrLocation;
}

export interface ZellijRig extends RigBase {
  kind: "zellij";
  zellij: ZellijSession;
  /** The manifest's zellij location; throws for any other. */
  locate(manifest: Manifest): ZellijLocation;
}

export type MuxRig = TmuxRig | HerdrRig | ZellijRig;

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

export async function startHerdrRig(
  sandbox: PiSandbox,
  repo: TempRepo,
  options: Omit<HerdrServerOptions, "env"> = {},
): Promise<HerdrRig> {
  const herdr = await startHerdr({ ...options, env: sandbox.env });
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

/** A zellij pane, as the helpers here drive it: `dump-screen`, `write-chars`, `write 13`. */
export function zellijPane(zellij: ZellijSession, pane: string): PaneDriver {
  return {
    name: pane,
    read: () => zellij.read(pane),
    type: (text) => zellij.type(pane, text),
    enter: () => zellij.enter(pane),
  };
}

export async function startZellijRig(sandbox: PiSandbox): Promise<ZellijRig> {
  const zellij = await startZellij({ env: sandbox.env });
  const parentPane = zellijPane(zellij, zellij.firstPaneId);
  const locate = locator("zellij", "zellij");
  return {
    kind: "zellij",
    zellij,
    parentPane,
    parentPaneId: zellij.firstPaneId,
    runInParentPane: async (line) => {
      await parentPane.type(line);
      await parentPane.enter();
    },
    locate,
    childPane: (manifest) => zellijPane(zellij, paneOf(locate(manifest))),
    stop: () => zellij.kill(),
  };
}
