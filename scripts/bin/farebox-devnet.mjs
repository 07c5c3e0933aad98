#!/usr/bin/env node
// `pnpm farebox-devnet ...` from the checkout: the local Stellar network (packages/devnet), built on first use (launch.mjs).
import { launch } from './launch.mjs';

launch('@farebox/devnet', 'packages/devnet/dist/cli.js');
