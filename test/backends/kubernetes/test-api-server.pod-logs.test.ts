// The test API server's pod logs and the kubelet's Events, as a real cluster serves them: the log
// endpoint's parameters and refusals, lines streamed while following until the container ends, the
// workload's lines driven by its environment, and Pulling / Pulled / Created / Started Events.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  NS,
  podSpec,
  startTestCluster,
  type TestCluster,
  waitFor,
} from '../../helpers/kube-api-server/fixtures.js';

let t: TestCluster;
beforeEach(async () => {
  t = await startTestCluster();
});
afterEach(async () => {
  await t.server.close();
});

const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/;

async function get(path: string): Promise<{ status: number; text: string; body: Buffer }> {
  const res = await fetch(`${t.server.url}${path}`, { headers: { Authorization: 'Bearer test-token' } });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, text: body.toString('utf8'), body };
}

const logPath = (name: string, query = '') =>
  `/api/v1/namespaces/${NS}/pods/${name}/log${query ? `?${query}` : ''}`;

function workload(name: string, env: Record<string, string>, extra: Record<string, unknown> = {}) {
  const spec = podSpec();
  spec.containers[0].command = ['python', 'train.py'];
  spec.containers[0].env = Object.entries(env).map(([k, v]) => ({ name: k, value: v }));
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec: { ...spec, ...extra } };
}

const running = (name: string) =>
  waitFor(`${name} running`, () => t.server.get('Pod', NS, name)?.status?.phase === 'Running');

describe('pod logs', () => {
  it('serves the lines with timestamps, tailLines, sinceTime and limitBytes; refuses what a real server refuses', async () => {
    t.server.put(workload('w', { FAIRWAY_TEST_LOG_LINES: '3', FAIRWAY_TEST_LOG_TEXT: 'epoch {n}' }));
    await running('w');
    const plain = await get(logPath('w'));
    expect(plain.status).toBe(200);
    expect(plain.text).toBe('starting python train.py\nepoch 1\nepoch 2\nepoch 3\n');
    const stamped = (await get(logPath('w', 'timestamps=true'))).text.trimEnd().split('\n');
    const stamps = stamped.map((l) => l.slice(0, l.indexOf(' ')));
    for (const s of stamps) expect(s).toMatch(STAMP);
    // The three lines of one write share a timestamp; the start line was an earlier write.
    expect(new Set(stamps.slice(1)).size).toBe(1);
    expect(stamps[0]! < stamps[1]!).toBe(true);
    expect((await get(logPath('w', 'tailLines=2'))).text).toBe('epoch 2\nepoch 3\n');
    expect((await get(logPath('w', 'tailLines=0'))).text).toBe('');
    expect((await get(logPath('w', 'limitBytes=10'))).text).toBe('starting p');
    const future = new Date(Date.now() + 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
    expect((await get(logPath('w', `sinceTime=${future}`))).text).toBe('');
    const past = new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
    expect((await get(logPath('w', `sinceTime=${past}`))).text).toBe(plain.text);

    expect((await get(logPath('missing'))).status).toBe(404);
    const wrong = await get(logPath('w', 'container=sidecar'));
    expect(wrong.status).toBe(400);
    expect(JSON.parse(wrong.text).message).toBe('container sidecar is not valid for pod w');
    expect((await get(logPath('w', 'tailLines=-1'))).status).toBe(422);
    expect((await get(logPath('w', `sinceTime=${past}&sinceSeconds=5`))).status).toBe(422);
    expect((await get(logPath('w', 'sinceTime=yesterday'))).status).toBe(400);
  });

  it('says a container that has not started is waiting to start; an unscheduled pod has an empty log', async () => {
    t.server.put(workload('pulling', {}));
    const spec = workload('bad', {});
    spec.spec.containers[0].image = 'registry.example.com/does-not-exist:1';
    t.server.put(spec);
    await waitFor(
      'ErrImagePull',
      () => t.server.get('Pod', NS, 'bad')?.status?.containerStatuses?.[0]?.state?.waiting,
    );
    const waiting = await get(logPath('bad'));
    expect(waiting.status).toBe(400);
    expect(JSON.parse(waiting.text).message).toBe(
      'container "main" in pod "bad" is waiting to start: trying and failing to pull image',
    );
    const huge = workload('huge', {});
    huge.spec.containers[0].resources.limits['nvidia.com/gpu'] = '64';
    t.server.put(huge);
    await waitFor('unschedulable', () => t.server.get('Pod', NS, 'huge')?.status?.conditions?.length);
    expect(await get(logPath('huge'))).toMatchObject({ status: 200, text: '' });
  });

  it('streams new lines while following and ends when the container ends; keeps raw bytes; the log goes with the pod', async () => {
    t.server.put(
      workload('f', {
        FAIRWAY_TEST_LOG_EVERY_MS: '20',
        FAIRWAY_TEST_RUN_MS: '300',
        FAIRWAY_TEST_OUTCOME: 'fail',
      }),
    );
    await running('f');
    t.server.writeLog(NS, 'f', Buffer.from([0x62, 0x61, 0x64, 0xff, 0xfe, 0x0a]));
    const res = await fetch(`${t.server.url}${logPath('f', 'follow=true')}`, {
      headers: { Authorization: 'Bearer test-token' },
    });
    const body = Buffer.from(await res.arrayBuffer());
    const lines = body.toString('latin1').trimEnd().split('\n');
    expect(lines[0]).toBe('starting python train.py');
    expect(lines).toContain('bad\xff\xfe');
    expect(lines.filter((l) => l.startsWith('step ')).length).toBeGreaterThan(5);
    expect(lines.at(-1)).toBe('Error: the test workload failed (exit code 1)');
    expect(t.server.get('Pod', NS, 'f').status.phase).toBe('Failed');
    expect(t.server.openLogStreams).toBe(0);
    t.server.remove('Pod', NS, 'f');
    expect((await get(logPath('f'))).status).toBe(404);
  });

  it('writes "received SIGTERM" during the grace period; cutLogStreams drops open follows', async () => {
    const spec = workload('g', { FAIRWAY_TEST_LOG_EVERY_MS: '20', FAIRWAY_TEST_SIGTERM_MS: '200' });
    t.server.put(spec);
    await running('g');
    const chunks: string[] = [];
    const cut = fetch(`${t.server.url}${logPath('g', 'follow=true')}`, {
      headers: { Authorization: 'Bearer test-token' },
    }).then(async (res) => {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        chunks.push(Buffer.from(chunk).toString());
    });
    await waitFor('a follower', () => t.server.openLogStreams === 1);
    expect(t.server.cutLogStreams()).toBe(1);
    await expect(cut).rejects.toThrow();
    const rest = fetch(`${t.server.url}${logPath('g', 'follow=true')}`, {
      headers: { Authorization: 'Bearer test-token' },
    }).then((res) => res.text());
    await waitFor('a follower again', () => t.server.openLogStreams === 1);
    t.server.remove('Pod', NS, 'g');
    expect(await rest).toMatch(
      /^starting python train.py\n(step \d+\n)*received SIGTERM\n(step \d+\n)*exiting on SIGTERM\n$/,
    );
    await waitFor('gone', () => !t.server.get('Pod', NS, 'g'), 3000);
  });

  it('records the kubelet’s Pulling, Pulled, Created and Started Events for a pod that starts', async () => {
    t.server.put(workload('e', {}));
    await running('e');
    const reasons = t.server
      .objects('Event', NS)
      .filter((e) => e.involvedObject.name === 'e')
      .map((e) => [e.reason, e.message]);
    expect(reasons).toEqual(
      expect.arrayContaining([
        ['Scheduled', `Successfully assigned ${NS}/e to gpu-1`],
        ['Pulling', 'Pulling image "busybox:1.36"'],
        ['Pulled', expect.stringMatching(/^Successfully pulled image "busybox:1.36" in \d+ms/)],
        ['Created', 'Created container main'],
        ['Started', 'Started container main'],
      ]),
    );
    expect(t.server.invalid).toEqual([]);
  });
});
