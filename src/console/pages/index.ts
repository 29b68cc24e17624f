// Every console route, page by page.
import type { ConsoleRoute } from '../routes.ts';
import { OVERVIEW_ROUTES } from './overview.ts';
import { RULE_ROUTES } from './rule.ts';

export const ROUTES: readonly ConsoleRoute[] = [...OVERVIEW_ROUTES, ...RULE_ROUTES];
