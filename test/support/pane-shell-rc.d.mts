export function paneShellRc(): string;
export function paneShellVars(options?: {
  shellDelayMs?: number;
  shellSwallowMs?: number;
  shellSwallowUntil?: string;
}): Record<string, string>;
