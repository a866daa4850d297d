/**
 * Where a handoff's Herdr workspace is: the server's socket (`$HERDR_SOCKET_PATH`), the workspace,
 * its tab and the root pane, as Herdr prints their ids (any id Herdr prints: protocol.ts).
 */
import type { z } from "zod";
import { locationSchema } from "../location.ts";

export const HerdrLocationSchema = locationSchema("herdr", "socketPath", "workspaceId", "tabId", "paneId");
export type HerdrLocation = z.infer<typeof HerdrLocationSchema>;
