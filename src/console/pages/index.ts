// Every console route, page by page.
import type { ConsoleRoute } from '../routes.ts';
import { BUNDLE_ROUTES } from './bundle.ts';
import { CONNECTOR_ROUTES } from './connectors.ts';
import { DIRECTORY_ROUTES } from './directory.ts';
import { OVERVIEW_ROUTES } from './overview.ts';
import { RULE_ROUTES } from './rule.ts';

export const ROUTES: readonly ConsoleRoute[] = [
  ...OVERVIEW_ROUTES,
  ...CONNECTOR_ROUTES,
  ...BUNDLE_ROUTES,
  ...RULE_ROUTES,
  ...DIRECTORY_ROUTES,
];
