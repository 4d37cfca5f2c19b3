#!/usr/bin/env node
// The `fairway` command (package.json "bin"): runs the TypeScript CLI in src/cli/fairway.ts
// through tsx (a runtime dependency), so there is no build step.
import { register } from 'tsx/esm/api';

register();
const { runAsProgram } = await import('../src/cli/fairway.ts');
await runAsProgram(process.argv.slice(2));
