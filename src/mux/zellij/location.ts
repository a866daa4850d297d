/**
 * Where a handoff's zellij tab is: the socket directory its CLI finds sessions in
 * (`ZELLIJ_SOCKET_DIR`, else zellij's own default), the session's name, the tab's stable id and its
 * terminal pane (`terminal_<n>`), as `zellij action list-tabs/list-panes` print them.
 */
import type { z } from "zod";
import { locationSchema } from "../location.ts";

export const ZellijLocationSchema = locationSchema("zellij", "socketDir", "sessionName", "tabId", "paneId");
export type ZellijLocation = z.infer<typeof ZellijLocationSchema>;
