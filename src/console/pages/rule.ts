// A rule's page with its Verify Panel (docs/console.md, "Rule and Verify Panel"): GET shows the
// rule and a tab (?tab=translation, the default, ?tab=playground or ?tab=replay); POST …/regenerate is
// an admin action; POST …/playground decides a request and POST …/replay replays recent decisions with
// an edited condition, both open to every viewer of the tenant and saving nothing (app.ts checks the
// CSRF token of all three, and that only an admin acts).
import type { ConsoleRoute, PageAnswer, PageRequest } from '../routes.ts';
import { firstExample, playgroundTab, tryPlayground } from './rule-playground.ts';
import { currentCondition, replayTab, tryReplay } from './rule-replay.ts';
import { regenerate, translationTab } from './rule-translation.ts';
import { loadRule, rulePage } from './rule-view.ts';

function rulePageOf(req: PageRequest): PageAnswer {
  const view = loadRule(req);
  if ('kind' in view) return view;
  const tab = req.query.get('tab') ?? 'translation';
  if (tab === 'playground') return rulePage(req, view, 'playground', playgroundTab(req, view, { text: firstExample(view) }));
  if (tab === 'replay') return rulePage(req, view, 'replay', replayTab(req, view, { text: currentCondition(view) }));
  if (tab !== 'translation') {
    return {
      kind: 'problem',
      status: 404,
      title: 'Not found',
      message: 'The Verify Panel has a translation, a playground and a replay tab.',
    };
  }
  return rulePage(req, view, 'translation', translationTab(req, view));
}

export const RULE_ROUTES: readonly ConsoleRoute[] = [
  { method: 'GET', path: '/t/:tenant/rules/:rule', handle: rulePageOf },
  { method: 'POST', path: '/t/:tenant/rules/:rule/regenerate', action: true, handle: regenerate },
  { method: 'POST', path: '/t/:tenant/rules/:rule/playground', handle: tryPlayground },
  { method: 'POST', path: '/t/:tenant/rules/:rule/replay', handle: tryReplay },
];
