#!/usr/bin/env node
// `pnpm farebox ...` from the checkout: the CLI (apps/cli), built on first use (launch.mjs).
import { launch } from './launch.mjs';

launch('@farebox/cli', 'apps/cli/dist/cli.js');
