import { createRedisEventTarget as createTarget } from '@graphql-yoga/redis-event-target';
import { Redis } from 'ioredis';

/**
 * Events through Redis pub/sub, so a subscriber on one replica hears what another replica
 * did. Two connections: a subscribed Redis connection cannot publish.
 */
export function createRedisEventTarget(url: string) {
  const publishClient = new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: false });
  const subscribeClient = new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: false });
  const eventTarget = createTarget({ publishClient, subscribeClient });
  return {
    eventTarget,
    async close() {
      await Promise.allSettled([publishClient.quit(), subscribeClient.quit()]);
    },
  };
}
