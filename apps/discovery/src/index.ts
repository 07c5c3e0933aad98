export { createDiscoveryService } from './service.js';
export type { DiscoveryService, DiscoveryServiceOptions, DiscoveryHealth } from './service.js';
export { createDiscoveryHandler, agentView, SEARCH_LIMIT, PAGE_LIMIT, MAX_QUERY_LENGTH } from './http.js';
export type { DiscoveryHttpOptions, AgentView } from './http.js';
export { startDiscovery, loadDiscoveryConfig } from './server.js';
export type { DiscoveryConfig, StartDiscoveryOptions, RunningDiscovery } from './server.js';
export { StateDir, SnapshotCursorStore } from './state.js';
export type { DiscoveryState } from './state.js';
