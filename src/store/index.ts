export { createStore, type Store, type StoreDraft } from './store.ts';

export { createActivityLog, type ActivityLog, type SyncRecord } from './activity.ts';
export { bundleKey, type BundleEntry, type ConnectorEntry, type Snapshot } from './snapshot.ts';
export { createKeyedRings } from './rings.ts';
