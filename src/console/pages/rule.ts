// A rule's page with its Verify Panel (docs/console.md, "Rule and Verify Panel"): GET shows the
// rule and a tab (?tab=translation, the default, or ?tab=playground); POST …/regenerate is an admin
// action; POST …/playground decides a request and is open to every viewer of the tenant (app.ts
// checks the CSRF token of both, and that only an admin acts).
import type { ConsoleRoute, PageAnswer, PageRequest } from '../routes.ts';
import { firstExample, playgroundTab, tryPlayground } from './rule-playground.ts';
import { regenerate, translationTab } from './rule-translation.ts';
import { loadRule, rulePage } from './rule-view.ts';

function rulePageOf(req: PageRequest): PageAnswer {
  const view = loadRule(req);
  if ('kind' in view) return view;
  const tab = req.query.get('tab') ?? 'translation';
  if (tab === 'playground') return rulePage(req, view, 'playground', playgroundTab(req, view, { text: firstExample(view) }));
  if (tab !== 'translation') {
    return { kind: 'problem', status: 404, title: 'Not found', message: 'The Verify Panel has a translation tab and a playground tab.' };
  }
  return rulePage(req, view, 'translation', translationTab(req, view));
}

export const RULE_ROUTES: readonly ConsoleRoute[] = [
  { method: 'GET', path: '/t/:tenant/rules/:rule', handle: rulePageOf },
  { method: 'POST', path: '/t/:tenant/rules/:rule/regenerate', action: true, handle: regenerate },
  { method: 'POST', path: '/t/:tenant/rules/:rule/playground', handle: tryPlayground },
];
