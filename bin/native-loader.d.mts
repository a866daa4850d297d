// Types for native-loader.mjs (plain JavaScript, see there), for the TypeScript that imports it.
export function strippedCacheDir(): string | undefined;
export function canLoadTypeScript(): boolean;
export function installTypeScriptLoader(
  root: string,
  cacheDir: string | undefined,
  hostModules?: Record<string, object>,
): boolean;
