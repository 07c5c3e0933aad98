export { eventually, type EventuallyOptions } from './eventually.js';
export { testClock, type TestClock } from './clock.js';
