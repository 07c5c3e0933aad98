import { spendingPolicySuite } from './spending-policy-suite.js';

spendingPolicySuite('postgres');
