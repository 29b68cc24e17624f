export { createStore, RETIRED_TOKENS_KEPT, type BundleListener, type Run, type Store, type StoreDraft } from './store.ts';
export { createActivityLog, type ActivityLog, type SyncEvent, type SyncRecord } from './activity.ts';
export { bundleKey, type ApiKeyEntry, type BundleEntry, type ConnectorEntry, type Snapshot, type TenantSnapshot } from './snapshot.ts';
