import { oauthSuite } from './oauth-suite.js';

oauthSuite('pglite');
