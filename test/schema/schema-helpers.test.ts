import { encodeGlobalID } from '@pothos/plugin-relay';
import { describe, expect, it } from 'vitest';
import type { GraphQLContext } from '../../schema/context.js';
import { reloadingSubscription } from '../../schema/reloading-subscription.js';
import { tenantConnection } from '../../schema/tenancy/tenant-connection.js';
import { FairwayError } from '../../src/shared/client-errors.js';

const ctx = {} as GraphQLContext;
const TENANT = '0190a0a0-0000-7000-8000-000000000001';

async function* from<T>(...values: T[]) {
  yield* values;
}

describe('reloadingSubscription', () => {
  it('opens the source synchronously when the check is synchronous', () => {
    const source = from(1);
    const field = reloadingSubscription({
      watch: (args: { id: string }) => args.id,
      source: () => source,
      reload: (event: number) => event,
    });
    expect(field.subscribe(null, { id: 'x' }, ctx)).toBe(source);
  });

  it('waits for an asynchronous check, and a refused check opens nothing', async () => {
    const opened: string[] = [];
    const field = reloadingSubscription({
      watch: async (args: { id: string }) => {
        if (args.id === 'foreign') throw new FairwayError('NOT_FOUND', 'Job not found');
        return args.id;
      },
      source: (id) => {
        opened.push(id);
        return from(id);
      },
      reload: (event: string, args) => `${event}/${args.id}`,
    });
    await field.subscribe(null, { id: 'mine' }, ctx);
    await expect(field.subscribe(null, { id: 'foreign' }, ctx)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(opened).toEqual(['mine']);
    expect(await field.resolve('e', { id: 'mine' }, ctx)).toBe('e/mine');
  });
});

describe('tenantConnection', () => {
  it('reads a page of the tenant of a row, or of a tenantId argument', async () => {
    const seen: string[] = [];
    const reader = (tenantId: string) => async () => {
      seen.push(tenantId);
      return [{ id: TENANT }];
    };
    const fromRow = await tenantConnection({ first: 1 }, { id: TENANT }, reader);
    const fromArgument = await tenantConnection(
      { first: 1 },
      { globalId: encodeGlobalID('Tenant', TENANT) },
      reader,
    );
    expect(seen).toEqual([TENANT, TENANT]);
    expect(fromRow.edges.map((e) => e?.node.id)).toEqual([TENANT]);
    expect(fromArgument.edges.length).toBe(1);
  });

  it('checks a tenantId argument before the cursor, and the reader before the cursor', async () => {
    const never = () => async () => [];
    await expect(
      tenantConnection({ after: 'bad' }, { globalId: encodeGlobalID('Queue', TENANT) }, never),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const refusing = () => {
      throw new FairwayError('BAD_USER_INPUT', 'filter');
    };
    await expect(tenantConnection({ after: 'bad' }, { id: TENANT }, refusing)).rejects.toMatchObject({
      message: 'filter',
    });
    await expect(tenantConnection({ after: 'bad' }, { id: TENANT }, never)).rejects.toMatchObject({
      message: expect.stringContaining('is not a cursor'),
    });
  });
});
