// The cluster source: the only user of @kubernetes/client-node. What the rest of the service may use.
export { type AgentSharing, createAgentSharing } from './sharing.ts';
export { clientsFor, createClients, type CustomKind, type KubeClients, PLURALS, statusOf } from './client.ts';
export { createObjectPatcher } from './patch.ts';
export { createLeaderElector, type LeaderElector } from './leader.ts';
export { createKubeSource, type KubeSource } from './source.ts';
export { openTlsSecret, type TlsSecret } from './tls.ts';
export { createWebhookCa, webhookApi, type WebhookCa } from './webhook.ts';
export { adminKeyHashes } from './admins.ts';
export { createSigningKeySecret, type SigningKeySecret } from './signing-key.ts';
export { createOpaConfigMaps, type OpaConfigMaps, type WantedConfigMaps } from './opa-configmaps.ts';
