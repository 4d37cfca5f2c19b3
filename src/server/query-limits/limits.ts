/**
 * How much one request may ask of the server. The limits, their defaults and the
 * FAIRWAY_MAX_* / FAIRWAY_INTROSPECTION / FAIRWAY_FIELD_SUGGESTIONS variables live in
 * src/config/sections/limits.ts; `config.limits` holds them resolved (introspection and
 * suggestions off in production unless enabled). Applied by plugins/useQueryLimits.ts and
 * src/server/app.ts.
 */
export { DEFAULT_QUERY_LIMITS, type QueryLimits } from '../../config/index.js';
