// Imported first by yaml-job.ts, before any zod schema is built: zod's fast path compiles validators with
// `new Function`, which the console's CSP (script-src 'self') refuses, and even the probe for it is reported
// as a violation. Jitless, zod validates the same way without it.
import { config } from 'zod';

config({ jitless: true });
