import type { EntityManager } from '@mikro-orm/core';

/** A column's value as read, converted as the ORM converts it (job-rows.ts, job-rows-partial.ts). */
export type Raw = Record<string, unknown>;
export type Platform = ReturnType<EntityManager['getPlatform']>;

export const ref = (id: unknown): { id: string } | null => (id == null ? null : { id: String(id) });
export const num = (value: unknown): number | null => (value == null ? null : Number(value));

export function date(platform: Platform, value: unknown): Date | null {
  if (value == null) return null;
  if (value instanceof Date) return value;
  const parsed = platform.parseDate(value as string);
  return parsed instanceof Date ? parsed : new Date(value as string);
}

export const json = <T>(platform: Platform, value: unknown): T | null =>
  value == null ? null : (platform.convertJsonToJSValue(value) as T);
