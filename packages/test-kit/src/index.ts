export { eventually, type EventuallyOptions } from './eventually.js';
