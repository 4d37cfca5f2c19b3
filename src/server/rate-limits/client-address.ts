import type { RequestSource } from '../../../plugins/useRateLimits.js';

/**
 * The client's address: the socket's peer, or, behind `hops` trusted reverse proxies, the
 * X-Forwarded-For entry the outermost trusted proxy saw (as Express's `trust proxy` = N). The
 * entries left of it are whatever the client claimed and are never believed.
 */
export function clientIpOf(context: RequestSource, hops: number): string {
  const peer = context.req?.socket?.remoteAddress ?? 'unknown';
  if (hops <= 0) return normalizeIp(peer);
  const header =
    context.req?.headers['x-forwarded-for'] ?? context.request?.headers.get('x-forwarded-for') ?? '';
  const forwarded = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  const chain = [peer, ...forwarded.reverse()];
  return normalizeIp(chain[Math.min(hops, chain.length - 1)]!);
}

/** IPv4 clients of a dual-stack socket show as ::ffff:a.b.c.d; one client, one key. */
const normalizeIp = (ip: string) => ip.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1').toLowerCase();

/** clientIpOf behind this many trusted proxies: the `clientAddress` the rate-limit and concurrency plugins are given. */
export function clientAddressBehind(hops: number): (source: RequestSource) => string {
  return (source) => clientIpOf(source, hops);
}
