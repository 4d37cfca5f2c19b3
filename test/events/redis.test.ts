// The Redis event target fires PUBLISH, SUBSCRIBE and UNSUBSCRIBE without awaiting them. A
// subscription that ends after its replica closed the connection must not leave an unhandled
// rejection behind (it stops a Node 20 process, and once failed the whole CI run).
import { afterEach, expect, it } from 'vitest';
import { createRedisEventTarget } from '../../src/events/redis.js';
import { describeNeeding, serviceUrl } from '../helpers/database.js';

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  unhandled.length = 0;
});

describeNeeding(['redis'], 'Redis event target', () => {
  it('carries an event from one target to another', async () => {
    const url = serviceUrl('redis')!;
    const [a, b] = await Promise.all([createRedisEventTarget(url), createRedisEventTarget(url)]);
    try {
      const topic = `fairway-test-${process.pid}-${Date.now()}`;
      const heard = new Promise<unknown>((resolve) =>
        b.eventTarget.addEventListener(topic, (event) => resolve((event as CustomEvent).detail)),
      );
      await new Promise((resolve) => setTimeout(resolve, 100)); // SUBSCRIBE reaches Redis
      a.eventTarget.dispatchEvent(new CustomEvent(topic, { detail: { kind: 'hello' } }));
      expect(await heard).toEqual({ kind: 'hello' });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('ends subscriptions and publishes after close without an unhandled rejection, and reports nothing while closing', async () => {
    process.on('unhandledRejection', onUnhandled);
    const reported: unknown[] = [];
    const target = await createRedisEventTarget(serviceUrl('redis')!, (error) => reported.push(error));
    const listener = () => {};
    target.eventTarget.addEventListener('fairway-test-closing', listener);
    await target.close();
    target.eventTarget.removeEventListener('fairway-test-closing', listener);
    target.eventTarget.addEventListener('fairway-test-closing-2', listener);
    target.eventTarget.dispatchEvent(new CustomEvent('fairway-test-closing', { detail: { kind: 'late' } }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(unhandled).toEqual([]);
    expect(reported).toEqual([]);
  });
});
