// `@farebox/gateway/testing` (private, never built): the gateway's test stack,
// for the end-to-end suites (e2e/) that drive the gateway with another app
// (the CLI). The gateway's own tests import the kits directly.
export { startDevnetForSettlement, startStack, type KitUser, type Stack } from './settlement-kit.js';
export { testnetOnDevnet } from './testnet-kit.js';
export { createGate, startHttpProxy, type Gate, type HttpProxy, type ProxyHook } from './http-proxy-kit.js';
