export { createStore, type Store, type StoreDraft } from './store.ts';
export { RETIRED_TOKENS_KEPT } from './credentials.ts';
export type { BundleListener, Run } from './state.ts';
export { createActivityLog, type ActivityLog, type SyncEvent, type SyncRecord } from './activity.ts';
export { bundleKey, type ApiKeyEntry, type BundleEntry, type ConnectorEntry, type Snapshot, type TenantSnapshot } from './snapshot.ts';
