#!/usr/bin/env node
// `farebox-gateway`: starts the gateway (PGlite or DATABASE_URL, the embedded
// devnet on the local network) and prints where everything is.
import { runGateway } from './run.js';

await runGateway();
