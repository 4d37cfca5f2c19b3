import { createRedisEventTarget as createTarget } from '@graphql-yoga/redis-event-target';
import { Redis } from 'ioredis';

/**
 * Events through Redis pub/sub, so a subscriber on one replica hears what another replica
 * did. Two connections: a subscribed Redis connection cannot publish.
 *
 * Both connect before anyone subscribes: with ioredis 5 a SUBSCRIBE sent while the
 * subscriber's ready check is still in flight puts the connection in subscriber mode first,
 * the ready check then fails, and the subscription is silently lost (ioredis#2037). The
 * subscriber also skips the ready check altogether, which only matters while loading.
 */
export async function createRedisEventTarget(url: string) {
  const publishClient = new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: true });
  const subscribeClient = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: true, enableReadyCheck: false });
  await Promise.all([publishClient.connect(), subscribeClient.connect()]);
  const eventTarget = createTarget({ publishClient, subscribeClient });
  return {
    eventTarget,
    async close() {
      await Promise.allSettled([publishClient.quit(), subscribeClient.quit()]);
    },
  };
}
