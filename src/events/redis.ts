import { createRedisEventTarget as createTarget } from '@graphql-yoga/redis-event-target';
import { Redis } from 'ioredis';

type CreateTargetArgs = Parameters<typeof createTarget>[0];

/**
 * Events through Redis pub/sub, so a subscriber on one replica hears what another replica
 * did. Two connections: a subscribed Redis connection cannot publish.
 *
 * Both connect before anyone subscribes: with ioredis 5 a SUBSCRIBE sent while the
 * subscriber's ready check is still in flight puts the connection in subscriber mode first,
 * the ready check then fails, and the subscription is silently lost (ioredis#2037). The
 * subscriber also skips the ready check altogether, which only matters while loading.
 *
 * The event target fires PUBLISH, SUBSCRIBE and UNSUBSCRIBE without awaiting them. A
 * command refused because Redis is away or the connection was already closed (a
 * subscription ending while the replica shuts down) would be an unhandled rejection,
 * which stops a Node 20 process; here each failure is reported instead.
 */
export async function createRedisEventTarget(url: string, reportError: (error: unknown) => void = () => {}) {
  const publishClient = new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: true });
  const subscribeClient = new Redis(url, {
    maxRetriesPerRequest: null,
    lazyConnect: true,
    enableReadyCheck: false,
  });
  await Promise.all([publishClient.connect(), subscribeClient.connect()]);
  let closing = false;
  const report = (error: unknown) => {
    if (!closing) reportError(error);
  };
  // Without an 'error' listener ioredis prints every failed reconnect attempt; report the
  // first of an outage instead, and again only after the connection was ready once more.
  for (const client of [publishClient, subscribeClient]) {
    let down = false;
    client.on('error', (error: unknown) => {
      if (!down) report(error);
      down = true;
    });
    client.on('ready', () => (down = false));
  }
  const publisher = {
    publish: (channel: string, message: string) => publishClient.publish(channel, message).catch(report),
  };
  const subscriber = {
    on: (event: 'message', listener: (channel: string, message: string) => void) =>
      subscribeClient.on(event, listener),
    subscribe: (channel: string) => subscribeClient.subscribe(channel).catch(report),
    unsubscribe: (channel: string) => subscribeClient.unsubscribe(channel).catch(report),
  };
  const eventTarget = createTarget({
    publishClient: publisher as unknown as CreateTargetArgs['publishClient'],
    subscribeClient: subscriber as unknown as CreateTargetArgs['subscribeClient'],
  });
  return {
    eventTarget,
    async close() {
      closing = true;
      await Promise.allSettled([publishClient.quit(), subscribeClient.quit()]);
    },
  };
}
