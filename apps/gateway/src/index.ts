export { createHost } from './host.js';
export type { Host, HostOptions } from './host.js';
export { SESSION_COOKIE, CSRF_COOKIE } from '@farebox/gateway-http';
export { startGateway } from './server.js';
export type { StartGatewayOptions, RunningGateway } from './server.js';
export { serveDashboard, dashboardDir, DASHBOARD_CSP, RESERVED_PREFIXES } from './dashboard.js';
export { configFromEnv, gatewayOptionsFromEnv, loadConfig, networkFromEnv } from './config.js';
export type { Env, GatewayHostConfig } from './config.js';
