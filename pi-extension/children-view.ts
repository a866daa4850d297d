/**
 * The parent's view of its handoffs: the watch (src/watch/watch.ts) with its statuses, the
 * forecast's mark, and the widget's text (src/inventory/format.ts). Loaded by parent-watch.ts at its
 * first look, after Pi drew its screen: these modules are most of the package, and a Pi that never
 * shows a child (the child of a handoff itself, while it acknowledges) need not load them to start.
 *
 * Invariant: decides nothing; wires the domain's watch to this Pi's environment.
 */
import { gitCallMs } from "../src/config/waits.ts";
import { GitCli } from "../src/git/git.ts";
import { LandGit } from "../src/git/land.ts";
import { ChildStates } from "../src/child/child-state.ts";
import type { Manifest } from "../src/manifest/schema.ts";
import type { ManifestStore } from "../src/manifest/store.ts";
import { agentStatuses } from "../src/mux/registry.ts";
import { ForecastCache, forecastHandoffs, type Forecast } from "../src/forecast/forecast.ts";
import { formatChildrenWidget } from "../src/inventory/format.ts";
import { QueueProgressLine } from "../src/queue/queue-progress.ts";
import { HandoffWatch, type OwnHandoff, type ParentIdentity } from "../src/watch/watch.ts";
import { SessionTails } from "../src/session/tail.ts";
import { SessionUsageCache } from "../src/session/usage.ts";
import { RunCostReader } from "../src/tree/run-costs.ts";
import { SubtreeTotalLine } from "../src/tree/tree.ts";

/** Per git call of the widget's forecast: it runs in the background, a slow repository must not pile up. */
const FORECAST_GIT_TIMEOUT_MS = 15_000;

export interface ChildrenView {
  watch: HandoffWatch;
  /** The widget's lines for the handoffs shown, their ages as of `now`. */
  format: (own: readonly OwnHandoff[], now: number) => string[];
}

export function watchChildren(input: {
  store: ManifestStore;
  agentDir: string;
  parent: ParentIdentity;
  onChange: (own: readonly OwnHandoff[]) => void;
}): ChildrenView {
  // The line with the subtree's total (issue 45): computed in the background, at most every 10 s.
  let shown: readonly OwnHandoff[] = [];
  const parentFile = input.parent.sessionFile;
  const total =
    parentFile === undefined
      ? undefined
      : new SubtreeTotalLine({
          store: input.store,
          usage: new SessionUsageCache(undefined),
          runs: () => new RunCostReader(process.env),
          session: { file: parentFile },
          onChange: () => input.onChange(shown),
        });
  // The line of a merge queue of this repository while it runs (issue 44): from its journal, no git.
  const queue = new QueueProgressLine({ agentDir: input.agentDir, onChange: () => input.onChange(shown) });
  const watch = new HandoffWatch({
    deps: {
      store: input.store,
      now: () => new Date(),
      agentDir: input.agentDir,
      agentStatuses: agentStatuses(process.env),
      tails: new SessionTails(),
      childStates: new ChildStates(input.agentDir),
      // The widget's conflict/behind mark: git only when a tip moved (the cache).
      forecast: watchForecast(process.env),
    },
    parent: input.parent,
    onChange: input.onChange,
  });
  return {
    watch,
    format: (own, now) => {
      shown = own;
      const line = total?.line(now);
      const queued = queue.line(new Set(own.map((handoff) => handoff.id)), now);
      return [
        ...formatChildrenWidget(own, now),
        ...(queued === undefined ? [] : [queued]),
        ...(line === undefined ? [] : [line]),
      ];
    },
  };
}

/** The forecast the widget shows, with git's per-call bounds and a cache kept for the session. */
function watchForecast(env: NodeJS.ProcessEnv): (manifests: readonly Manifest[]) => Promise<Forecast> {
  const cache = new ForecastCache();
  const timeoutMs = gitCallMs(env, FORECAST_GIT_TIMEOUT_MS);
  const deps = { git: new GitCli({ env, timeoutMs }), landGit: new LandGit({ env, timeoutMs }) };
  return (manifests) => forecastHandoffs(deps, manifests, cache);
}
