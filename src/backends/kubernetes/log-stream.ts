// One request for a pod's log (GET …/pods/{name}/log), made with the kubeconfig's credentials and TLS
// (client-node's applyToHTTPSOptions: tokens, client certificates, exec plugins, proxies). client-node's
// own Log class pipes into a stream and cannot tell a cut connection from the end of the log, which a
// follow must tell apart; this reads the response itself and parses it into lines (log-lines.ts).
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { LineParser, type LogLine } from './log-lines.js';

/** Which container's log: the pod's first (main) container, by name. */
export interface PodLogTarget {
  namespace: string;
  pod: string;
  container: string;
  /** The pod object's uid: a new pod of the same name is another log. */
  uid: string;
}

export interface LogQuery {
  follow?: boolean;
  /** RFC 3339, second precision: lines stamped at or after it. */
  sinceTime?: string;
  tailLines?: number;
}

/** The API answered the log request with an error status (404: the pod is gone; 400: not started…). */
export class PodLogError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Idle follow connections are probed, so one a firewall dropped fails instead of waiting forever. */
const KEEPALIVE_MS = 30_000;
const MAX_ERROR_BODY = 65_536;

async function open(
  kc: KubeConfig,
  target: PodLogTarget,
  query: LogQuery,
  signal: AbortSignal,
  answerWithinMs: number,
): Promise<IncomingMessage> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const path = `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/pods/${encodeURIComponent(target.pod)}/log`;
  // The server URL may carry a path (a proxy in front of the API server): appended, not replaced.
  const url = new URL(`${cluster.server.replace(/\/+$/, '')}${path}`);
  url.searchParams.set('container', target.container);
  url.searchParams.set('timestamps', 'true');
  if (query.follow) url.searchParams.set('follow', 'true');
  if (query.sinceTime) url.searchParams.set('sinceTime', query.sinceTime);
  if (query.tailLines !== undefined) url.searchParams.set('tailLines', String(query.tailLines));
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const request = (url.protocol === 'https:' ? https.request : http.request)(url, {
    ...options,
    method: 'GET',
    signal,
  });
  return new Promise<IncomingMessage>((resolve, reject) => {
    const timer = setTimeout(
      () => request.destroy(new Error(`the Kubernetes API did not answer within ${answerWithinMs} ms`)),
      answerWithinMs,
    );
    timer.unref();
    request.on('socket', (socket) => socket.setKeepAlive(true, KEEPALIVE_MS));
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.on('response', (response) => {
      clearTimeout(timer);
      if (response.statusCode === 200) return resolve(response);
      void errorOf(response).then(reject, reject);
    });
    request.end();
  });
}

async function errorOf(response: IncomingMessage): Promise<PodLogError> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    if (size < MAX_ERROR_BODY) chunks.push(chunk);
    size += chunk.length;
  }
  const body = Buffer.concat(chunks).toString('utf8');
  let message = body.slice(0, 300);
  try {
    message = (JSON.parse(body) as { message?: string }).message ?? message;
  } catch {
    // not a Status: its text is the message
  }
  return new PodLogError(response.statusCode ?? 0, message);
}

/**
 * Streams the log into `onLines` as lines arrive, until the response ends (resolves) or fails
 * (rejects: a cut connection, an abort, an error status as PodLogError). `onLines` returning false
 * stops reading (resolves). `onOpen` is told when the API has answered 200.
 */
export async function streamPodLog(
  kc: KubeConfig,
  target: PodLogTarget,
  query: LogQuery,
  options: {
    signal: AbortSignal;
    answerWithinMs: number;
    onOpen?: () => void;
    onLines: (lines: LogLine[]) => boolean | undefined;
  },
): Promise<void> {
  const response = await open(kc, target, query, options.signal, options.answerWithinMs);
  options.onOpen?.();
  const parser = new LineParser();
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      const lines = parser.push(chunk);
      if (lines.length && options.onLines(lines) === false) return;
    }
  } finally {
    response.destroy();
  }
  // Ended cleanly: a last line without a newline is whole (after a cut it would be sent again).
  const last = parser.end();
  if (last.length) options.onLines(last);
}
