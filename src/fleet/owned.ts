// Which of the bundles a status report or a decision-log upload names are the connector's: the same
// rule for both, whether it runs on the event loop (status reports) or in the uploads thread
// (decision logs). A name the tenant does not serve is ignored (another OPA plugin's bundle, a
// partition); a bundle of another connector refuses the whole report, as a token opens only its own.

export type Owned =
  | { readonly ok: true; readonly ours: Set<string>; readonly ignored: Set<string> }
  | { readonly ok: false; readonly message: string };

/** The names `connector` serves (`connectorOf` says which connector serves a name in the tenant, if any). */
export function ownedBundles(names: Iterable<string>, connector: string, connectorOf: (bundle: string) => string | undefined): Owned {
  const ours = new Set<string>();
  const ignored = new Set<string>();
  for (const name of names) {
    const owner = connectorOf(name);
    if (owner === undefined) {
      ignored.add(name);
      continue;
    }
    if (owner !== connector) {
      return {
        ok: false,
        message: `connector ${connector} has no bundle ${name}: a report may name only bundles of the connector its token belongs to`,
      };
    }
    ours.add(name);
  }
  return { ok: true, ours, ignored };
}
