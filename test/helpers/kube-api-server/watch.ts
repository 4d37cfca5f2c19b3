/**
 * Watch streams: chunked JSON lines `{"type":…,"object":…}` as the real API server writes them.
 *
 * From a resourceVersion N the stream replays every kept event after N, then follows live changes;
 * N older than the kept history → one ERROR event carrying a 410 Expired Status, then the end.
 * Without a resourceVersion (or '0') it starts with a synthetic ADDED for every current object,
 * like a real server; @kubernetes/client-node lists first and always passes the list's version.
 * A filtered watch turns a MODIFIED that moves an object into (out of) its selector into ADDED (DELETED).
 * With allowWatchBookmarks=true it also sends a BOOKMARK every `bookmarkIntervalMs`: an object of the
 * watched kind carrying only metadata.resourceVersion (every change up to it has been sent).
 */
import type { ServerResponse } from 'node:http';
import { groupVersion, type ResourceType, statusBody } from './resources.js';
import type { Matcher } from './selectors.js';
import type { Store, StoreEvent } from './store.js';

export interface WatchRequest {
  type: ResourceType;
  namespace?: string;
  matches: Matcher;
  resourceVersion?: string;
  timeoutSeconds?: number;
  /** Send BOOKMARK events this often (allowWatchBookmarks=true). */
  bookmarkIntervalMs?: number;
  /** How the objects are served (events.k8s.io/v1 Events are stored as core v1 ones). */
  convert?: (obj: any) => any;
}

interface OpenWatch {
  response: ServerResponse;
  /** graceful: finish the chunked response; otherwise destroy the socket. */
  end(graceful?: boolean): void;
}

export class Watches {
  private readonly open = new Set<OpenWatch>();

  constructor(private readonly store: Store) {}

  get count(): number {
    return this.open.size;
  }

  start(response: ServerResponse, request: WatchRequest): void {
    response.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
    response.flushHeaders();
    const convert = (o: any) => (request.convert && o?.kind !== 'Status' ? request.convert(o) : o);
    const write = (type: string, object: unknown) =>
      response.write(`${JSON.stringify({ type, object: convert(object) })}\n`);
    const kind = request.type.storedAs ?? request.type.kind;
    const inScope = (e: StoreEvent) =>
      e.kind === kind && (!request.namespace || e.object.metadata.namespace === request.namespace);
    const send = (e: StoreEvent) => {
      if (!inScope(e)) return;
      const now = request.matches(e.object);
      if (e.type !== 'MODIFIED') {
        if (now) write(e.type, e.object);
        return;
      }
      const before = e.previous ? request.matches(e.previous) : now;
      if (now && before) write('MODIFIED', e.object);
      else if (now) write('ADDED', e.object);
      else if (before) write('DELETED', e.object);
    };

    const rv = request.resourceVersion;
    if (rv && !/^\d+$/.test(rv)) {
      response.end(
        `${JSON.stringify({ type: 'ERROR', object: statusBody(400, 'BadRequest', `invalid resource version: ${rv}`) })}\n`,
      );
      return;
    }
    if (!rv || rv === '0') {
      for (const obj of this.store.list(kind, request.namespace))
        if (request.matches(obj)) write('ADDED', obj);
    } else {
      const replay = this.store.eventsAfter(Number(rv));
      if (!replay) {
        write(
          'ERROR',
          statusBody(410, 'Expired', `too old resource version: ${rv} (${this.store.resourceVersion})`),
        );
        response.end();
        return;
      }
      replay.forEach(send);
    }

    const unsubscribe = this.store.subscribe(send);
    const timer = request.timeoutSeconds
      ? setTimeout(() => watch.end(), request.timeoutSeconds * 1000).unref()
      : undefined;
    const bookmarks = request.bookmarkIntervalMs
      ? setInterval(() => {
          const object = {
            kind: request.type.kind,
            apiVersion: groupVersion(request.type),
            metadata: { resourceVersion: this.store.resourceVersion },
          };
          response.write(`${JSON.stringify({ type: 'BOOKMARK', object })}\n`);
        }, request.bookmarkIntervalMs).unref()
      : undefined;
    const watch: OpenWatch = {
      response,
      end: (graceful = true) => {
        unsubscribe();
        if (timer) clearTimeout(timer);
        if (bookmarks) clearInterval(bookmarks);
        this.open.delete(watch);
        if (!graceful) response.socket?.destroy();
        else if (!response.writableEnded) response.end();
      },
    };
    this.open.add(watch);
    response.on('close', () => watch.end());
  }

  /** Ends every open watch with a 410 Expired ERROR event (the caller then forgets the history). */
  expireAll(): void {
    for (const watch of [...this.open]) {
      watch.response.write(
        `${JSON.stringify({ type: 'ERROR', object: statusBody(410, 'Expired', 'The resourceVersion for the provided watch is too old.') })}\n`,
      );
      watch.end();
    }
  }

  /** Cuts every open watch connection without a word, as a network failure would. */
  dropAll(): void {
    for (const watch of [...this.open]) watch.end(false);
  }
}
