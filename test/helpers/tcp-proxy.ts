import net from 'node:net';

/**
 * How the proxy treats traffic:
 * - `pass`: forwards both ways, like a healthy network.
 * - `cut`: the database refuses: new connections are refused (nothing listens on the port)
 *   and open ones are closed, as when PostgreSQL is stopped or restarted.
 * - `black-hole`: packets dropped without an answer: new connections are accepted and held,
 *   open ones stop forwarding; nothing errors, nothing answers. Back to `pass`, what was held
 *   flows again (as TCP retransmission would deliver it) to whoever is still listening.
 */
export type ProxyMode = 'pass' | 'cut' | 'black-hole';

export interface TcpProxy {
  /** The port the proxy listens on (127.0.0.1); stays the same across `cut`. */
  readonly port: number;
  readonly mode: ProxyMode;
  /**
   * `abandonHeld` (leaving `black-hole` for `pass`): connections held during the black-hole
   * stay black-holed for good, while new ones pass, as when a stateful firewall or NAT lost
   * their flows. The client must notice and replace them itself.
   */
  setMode(mode: ProxyMode, options?: { abandonHeld?: boolean }): Promise<void>;
  /** Connections opened through the proxy so far, and those still open. */
  stats(): { accepted: number; open: number };
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket | null;
  piped: boolean;
  /** Held for good (see `abandonHeld`). */
  abandoned: boolean;
}

/** A TCP proxy on 127.0.0.1 to `target` (PostgreSQL by default) whose network can be cut or black-holed. */
export async function startTcpProxy(
  target: { host: string; port: number } = { host: '127.0.0.1', port: 5432 },
): Promise<TcpProxy> {
  let mode: ProxyMode = 'pass';
  let accepted = 0;
  const pairs = new Set<Pair>();

  const destroy = (pair: Pair) => {
    pairs.delete(pair);
    pair.client.destroy();
    pair.upstream?.destroy();
  };

  const connectUpstream = (pair: Pair) => {
    const upstream = net.connect(target.port, target.host);
    pair.upstream = upstream;
    upstream.on('error', () => destroy(pair));
    upstream.on('close', () => destroy(pair));
    pipe(pair);
  };

  const pipe = (pair: Pair) => {
    if (pair.piped || !pair.upstream) return;
    pair.piped = true;
    pair.client.pipe(pair.upstream);
    pair.upstream.pipe(pair.client);
    pair.client.resume();
    pair.upstream.resume();
  };

  /** Stops moving bytes either way; the kernel buffers what arrives, as a dropped path would. */
  const hold = (pair: Pair) => {
    if (pair.piped && pair.upstream) {
      pair.client.unpipe(pair.upstream);
      pair.upstream.unpipe(pair.client);
    }
    pair.piped = false;
    pair.client.pause();
    pair.upstream?.pause();
  };

  const onConnection = (client: net.Socket) => {
    accepted++;
    const pair: Pair = { client, upstream: null, piped: false, abandoned: false };
    pairs.add(pair);
    client.on('error', () => destroy(pair));
    client.on('close', () => destroy(pair));
    if (mode === 'pass') connectUpstream(pair);
    else client.pause(); // black-hole: accepted, never answered
  };

  let server = net.createServer(onConnection);
  await listen(server, 0);
  const port = (server.address() as net.AddressInfo).port;

  return {
    port,
    get mode() {
      return mode;
    },
    async setMode(next: ProxyMode, options: { abandonHeld?: boolean } = {}) {
      if (next === mode) return;
      const previous = mode;
      mode = next;
      if (next === 'cut') {
        for (const pair of [...pairs]) destroy(pair);
        await closeServer(server);
        return;
      }
      if (previous === 'cut') {
        server = net.createServer(onConnection);
        await listen(server, port);
      }
      for (const pair of [...pairs]) {
        if (pair.abandoned) continue;
        if (next === 'black-hole') hold(pair);
        else if (previous === 'black-hole' && options.abandonHeld) pair.abandoned = true;
        else if (!pair.upstream) connectUpstream(pair);
        else pipe(pair);
      }
    },
    stats: () => ({ accepted, open: pairs.size }),
    async close() {
      for (const pair of [...pairs]) destroy(pair);
      if (mode !== 'cut') await closeServer(server);
      mode = 'cut';
    },
  };
}

function listen(server: net.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
