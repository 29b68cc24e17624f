// The console's URLs, built in one place: every segment is percent-encoded, so a name can never
// change the path, and the result is a SafeUrl the html template accepts in href and action.
import { safeHref, type Url } from './html.ts';

export const BASE = '/console';

/** `/console/<segments…>` with each segment encoded, plus an optional query. */
export function consoleUrl(segments: readonly string[], query?: Readonly<Record<string, string | undefined>>): Url {
  const path = [BASE, ...segments.map(encodeURIComponent)].join('/');
  const pairs = Object.entries(query ?? {}).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '');
  const search = pairs.length === 0 ? '' : `?${new URLSearchParams(pairs).toString()}`;
  const url = safeHref(segments.length === 0 ? `${BASE}/${search}` : `${path}${search}`);
  // Encoded segments and a query from URLSearchParams hold no character safeHref refuses.
  if (url === undefined) throw new Error(`not a console URL: ${path}`);
  return url;
}

export const tenantUrl = (tenant: string, ...rest: string[]): Url => consoleUrl(['t', tenant, ...rest]);
export const ruleUrl = (tenant: string, rule: string): Url => consoleUrl(['t', tenant, 'rules', rule]);
export const bundleUrl = (tenant: string, bundle: string): Url => consoleUrl(['t', tenant, 'bundles', bundle]);
export const connectorsUrl = (tenant: string): Url => consoleUrl(['t', tenant, 'connectors']);
export const directoryUrl = (tenant: string): Url => consoleUrl(['t', tenant, 'directory']);
