export { eventually, type EventuallyOptions } from './eventually.js';
export { testClock, type TestClock } from './clock.js';
export { start, binOf, ensureBuilt, type RunResult, type Running } from './bin.js';
export { ensureWorkspaceBuilt, workspaceClosure } from './build.js';
export { testTls, createTestTls, trustTestTls, httpsProxy, type TestTls, type HttpsProxy } from './tls.js';
export { closedPort } from './ports.js';
export { startReceiver, type ReceivedWebhook, type WebhookReceiver } from './webhook-receiver.js';
export { jsonRequest, type JsonAnswer, type JsonRequestInit } from './json-request.js';
