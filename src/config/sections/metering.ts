import { z } from 'zod';
import { section } from '../section.js';

/** The price book's currency: one per installation (FAIRWAY_CURRENCY). */
export const DEFAULT_CURRENCY = 'USD';
/** Running jobs' usage is written to the ledger this often. */
export const DEFAULT_METERING_INTERVAL_MS = 60_000;
/** The demo writes usage every 15 s, so its GPU-hours and cost show within the first minute. */
export const DEMO_METERING_INTERVAL_MS = 15_000;

export interface MeteringConfig {
  /** How often the leader writes running jobs' usage to the ledger. */
  intervalMs: number;
  /** The price book's currency, ISO 4217. */
  currency: string;
}

export const meteringSection = section({
  key: 'metering',
  title: 'Metering and cost',
  description:
    "Running jobs' usage is written to the ledger by the leader and priced with the price book; budgets are evaluated after each write.",
  variables: {
    FAIRWAY_METERING_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(100, 'must be at least 100')
      .max(3_600_000, 'must be at most an hour')
      .optional()
      .describe(
        "Milliseconds between writes of running jobs' usage to the ledger; a hard budget acts within one interval.",
      )
      .meta({
        defaultText: `\`${DEFAULT_METERING_INTERVAL_MS}\` (with the demo on: \`${DEMO_METERING_INTERVAL_MS}\`)`,
      }),
    FAIRWAY_CURRENCY: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO 4217 code such as USD')
      .default(DEFAULT_CURRENCY)
      .describe("The price book's currency: costs, budgets, the CSV export.")
      .meta({ typeText: 'ISO 4217 code (3 capital letters)' }),
  },
  resolve: (v, ctx): MeteringConfig => ({
    intervalMs:
      v.FAIRWAY_METERING_INTERVAL_MS ?? (ctx.demo ? DEMO_METERING_INTERVAL_MS : DEFAULT_METERING_INTERVAL_MS),
    currency: v.FAIRWAY_CURRENCY,
  }),
});
