export { createStore, type Store, type StoreDraft } from './store.ts';
export type { ShadowEntry } from './shadow.ts';

export { createActivityLog, type ActivityLog, type SyncRecord } from './activity.ts';
export { bundleKey, type BundleEntry, type ConnectorEntry, type Snapshot, type TenantSnapshot } from './snapshot.ts';
export { createKeyedRings } from './rings.ts';
