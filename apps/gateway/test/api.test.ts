import { describe } from 'vitest';
import { apiSuite } from './api-suite.js';

describe('gateway /v1 on PGlite', () => apiSuite('pglite'));
