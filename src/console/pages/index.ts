// Every console route, page by page.
import type { ConsoleRoute } from '../routes.ts';
import { CONNECTOR_ROUTES } from './connectors.ts';
import { OVERVIEW_ROUTES } from './overview.ts';

export const ROUTES: readonly ConsoleRoute[] = [...OVERVIEW_ROUTES, ...CONNECTOR_ROUTES];
