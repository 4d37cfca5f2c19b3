// Submit: a form, or the YAML of the job file `fairway submit -f` reads (the CLI's own format module:
// the same fields, line-numbered errors, names resolved and idempotency key derived the same way),
// previewed with previewJob before it is sent: fits now or waits, borrows, would preempt how many, the
// estimated GPU-hours and cost. Switching to YAML writes the form's job as a job file; switching back fills
// the form when the file fits it. Viewers are not offered it (and the API refuses them anyway).
import { useClient, useMutation, useQuery } from '@urql/preact';
import { useRef, useState } from 'preact/hooks';
import { useLocation } from 'wouter-preact';
import type { Viewer } from '../app.js';
import { graphql, type VariablesOf } from '../graphql.js';
import { hours, money } from '../parts/format.js';
import { NamedOptions } from '../parts/options.js';
import type { FileProblem, JobFile } from '../parts/yaml-job.js';
import './submit.css';

const PreviewJob = graphql(`
  mutation ConsolePreview($input: SubmitJobInput!) {
    previewJob(input: $input) {
      admissible borrowed mode message reason estimatedGpuHours estimatedCost
      wouldPreempt { jobId reason }
      placement { node pods flavor }
    }
  }
`);
const Queues = graphql(
  `query ConsoleSubmitQueues($slug: String!) { tenant(slug: $slug) { id queues { id name } } }`,
);
/** What the CLI's Targets asks: the names a job file may give (queue names, project slugs) and their IDs. */
const Targets = graphql(`
  query ConsoleSubmitTargets {
    queues { id name tenant { id slug } }
    viewer { memberships { tenant { id slug projects(first: 100) { edges { node { id slug } } } } } }
  }
`);
const SubmitJob = graphql(
  `mutation ConsoleSubmit($input: SubmitJobInput!) { submitJob(input: $input) { id state } }`,
);
type SubmitInput = VariablesOf<typeof SubmitJob>['input'];
type YamlJob = typeof import('../parts/yaml-job.js');

let yamlModule: Promise<YamlJob> | null = null;
/** The YAML parser and the job-file format, fetched with the YAML tab. */
const loadYaml = () => {
  yamlModule ??= import('../parts/yaml-job.js').catch((error) => {
    yamlModule = null;
    throw error;
  });
  return yamlModule;
};

const DEFAULT_FORM = {
  name: '',
  image: 'nvcr.io/nvidia/pytorch:24.05-py3',
  gpus: '1',
  pods: '1',
  hours: '1',
  priorityClass: 'training',
};
type Form = typeof DEFAULT_FORM;
/** The fields of a job file the form shows. */
const FORM_KEYS = new Set(['name', 'tenant', 'queue', 'queueId', 'priorityClass', 'expectedDurationSeconds']);

export function SubmitPage({ viewer }: { viewer: Viewer }) {
  const client = useClient();
  const [, navigate] = useLocation();
  const [, submit] = useMutation(SubmitJob);
  const [mode, setMode] = useState<'form' | 'yaml'>('form');
  const slug = viewer.memberships[0]?.tenant.slug ?? '';
  const [{ data: queueData }] = useQuery({ query: Queues, variables: { slug }, pause: !slug });
  const queues = queueData?.tenant.queues ?? [];
  const [queueId, setQueueId] = useState<string>('');
  const [form, setForm] = useState<Form>(DEFAULT_FORM);
  const [yaml, setYaml] = useState('');
  /** The form as the YAML tab last left it: unchanged since, switching back keeps the YAML as typed. */
  const formAtSwitch = useRef<string | null>(null);
  const [preview, setPreview] = useState<{
    input: SubmitInput;
    result: NonNullable<Awaited<ReturnType<typeof runPreview>>>;
  } | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [yamlProblems, setYamlProblems] = useState<{ syntax: boolean; problems: FileProblem[] } | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const tabs = useRef<(HTMLButtonElement | null)[]>([]);
  if (viewer.memberships[0]?.role === 'VIEWER') return <p>Viewers cannot submit jobs.</p>;

  const currentQueue = () => queues.find((q) => q.id === (queueId || queues[0]?.id));
  const formSnapshot = () => JSON.stringify([form, queueId]);

  /** The form's job as a job file (queue by name, as people write them). */
  const formJob = (): Record<string, unknown> => {
    const queue = currentQueue();
    return {
      name: form.name,
      ...(viewer.memberships.length > 1 && slug ? { tenant: slug } : {}),
      ...(queue ? { queue: queue.name } : {}),
      ...(form.priorityClass ? { priorityClass: form.priorityClass } : {}),
      ...(form.hours ? { expectedDurationSeconds: Number(form.hours) * 3600 } : {}),
      podSets: [{ count: Number(form.pods), gpusPerPod: Number(form.gpus) }],
      ...(form.image ? { container: { image: form.image } } : {}),
    };
  };

  /** The form's fields from a job file, or what the form cannot show. */
  const fitForm = (job: JobFile): { form: Form; queueId: string } | { missing: string[] } => {
    const missing = Object.keys(job).filter((k) => !FORM_KEYS.has(k) && k !== 'podSets' && k !== 'container');
    if (job.tenant && job.tenant !== slug) missing.push(`tenant ${job.tenant}`);
    const [podSet, ...more] = job.podSets;
    if (more.length) missing.push(`${job.podSets.length} pod sets`);
    for (const k of Object.keys(podSet ?? {}))
      if (k !== 'count' && k !== 'gpusPerPod') missing.push(`podSets[0].${k}`);
    for (const k of Object.keys(job.container ?? {})) if (k !== 'image') missing.push(`container.${k}`);
    const queue = job.queueId
      ? queues.find((q) => q.id === job.queueId)
      : job.queue
        ? queues.find((q) => q.name === job.queue)
        : queues[0];
    if ((job.queue || job.queueId) && !queue) missing.push(`queue ${job.queue ?? job.queueId}`);
    if (missing.length) return { missing };
    return {
      queueId: queue?.id ?? '',
      form: {
        name: job.name,
        image: job.container?.image ?? '',
        gpus: String(podSet?.gpusPerPod ?? 0),
        pods: String(podSet?.count ?? 1),
        hours: job.expectedDurationSeconds ? String(job.expectedDurationSeconds / 3600) : '',
        priorityClass: job.priorityClass ?? '',
      },
    };
  };

  const switchTo = async (next: 'form' | 'yaml') => {
    if (next === mode || busy) return;
    setPreview(null);
    setProblem(null);
    setNote(null);
    setBusy(true);
    try {
      const mod = await loadYaml();
      if (next === 'yaml') {
        setYamlProblems(null);
        if (formAtSwitch.current !== formSnapshot() || !yaml) setYaml(mod.writeJob(formJob()));
      } else {
        // The form as this switch leaves it: unchanged when back to YAML, the YAML stays as typed.
        let left = formSnapshot();
        const read = mod.readJob(yaml);
        const fit = read.ok ? fitForm(read.job) : null;
        if (!read.ok)
          setNote(
            `The form was left as it was: the YAML ${read.syntax ? 'does not parse' : 'is not a valid job'} (${read.problems
              .map(problemText)
              .join('; ')}). The YAML tab keeps your text.`,
          );
        else if (fit && 'missing' in fit)
          setNote(
            `The form was left as it was: it cannot show ${fit.missing.join(', ')}. The YAML tab keeps your text; submit from there to send all of it.`,
          );
        else if (fit) {
          setForm(fit.form);
          setQueueId(fit.queueId);
          left = JSON.stringify([fit.form, fit.queueId]);
        }
        formAtSwitch.current = left;
      }
      setMode(next);
    } catch (error) {
      setProblem(
        `The YAML editor could not be loaded: ${error instanceof Error ? error.message : String(error)}`,
      );
    } finally {
      setBusy(false);
    }
  };

  /** The YAML tab's job as the submit input, as `fairway submit -f` would send it; null when it has problems. */
  const yamlInput = async (): Promise<SubmitInput | null> => {
    const mod = await loadYaml();
    const read = mod.readJob(yaml);
    if (!read.ok) {
      setYamlProblems({ syntax: read.syntax, problems: read.problems });
      return null;
    }
    setYamlProblems(null);
    const job = read.job;
    let targets: import('../parts/yaml-job.js').TargetList | null = null;
    if (mod.namesTargets(job)) {
      const r = await client.query(Targets, {}, { requestPolicy: 'network-only' }).toPromise();
      if (r.error) throw new Error(r.error.graphQLErrors[0]?.message ?? r.error.message);
      targets = r.data!;
    }
    const ids = mod.targetIdsOf(job, targets);
    const input: SubmitInput = mod.jobFileInput(job, ids, job.idempotencyKey ?? (await mod.derivedKey(job)));
    return input;
  };

  const formInput = (): SubmitInput => ({
    name: form.name,
    queueId: queueId || queues[0]?.id || null,
    priorityClass: form.priorityClass,
    podSets: [{ count: Number(form.pods), gpusPerPod: Number(form.gpus) }],
    expectedDurationSeconds: Number(form.hours) * 3600,
    container: { image: form.image },
  });
  async function runPreview(i: SubmitInput) {
    const r = await client.mutation(PreviewJob, { input: i }).toPromise();
    if (r.error) throw new Error(r.error.graphQLErrors[0]?.message ?? r.error.message);
    return r.data!.previewJob;
  }
  const onPreview = async (event: Event) => {
    event.preventDefault();
    setProblem(null);
    setPreview(null);
    try {
      const i = mode === 'yaml' ? await yamlInput() : formInput();
      if (!i) return;
      setPreview({ input: i, result: await runPreview(i) });
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
    }
  };
  const onSubmit = async () => {
    if (!preview) return;
    const r = await submit({ input: preview.input });
    if (r.error) return setProblem(r.error.graphQLErrors[0]?.message ?? r.error.message);
    navigate(`/jobs/${encodeURIComponent(r.data!.submitJob.id)}`);
  };
  const field = (key: keyof Form, label: string, type = 'text') => (
    <label>
      {label}
      <input
        type={type}
        value={form[key]}
        required={key === 'name'}
        onInput={(e) => {
          setPreview(null);
          setForm({ ...form, [key]: (e.target as HTMLInputElement).value });
        }}
      />
    </label>
  );
  const onTabKey = (event: KeyboardEvent) => {
    if (!['ArrowLeft', 'ArrowRight', 'Home', 'End'].includes(event.key)) return;
    event.preventDefault();
    const next = mode === 'form' ? 'yaml' : 'form';
    tabs.current[next === 'form' ? 0 : 1]?.focus();
    void switchTo(next);
  };
  const p = preview?.result;
  return (
    <section>
      <h1>Submit a job</h1>
      <div role="tablist" class="submit-tabs" aria-label="How to describe the job">
        <button
          type="button"
          role="tab"
          id="submit-tab-form"
          aria-controls="submit-panel"
          aria-selected={mode === 'form'}
          tabIndex={mode === 'form' ? 0 : -1}
          ref={(el) => void (tabs.current[0] = el)}
          onKeyDown={onTabKey}
          onClick={() => void switchTo('form')}
        >
          Form
        </button>
        <button
          type="button"
          role="tab"
          id="submit-tab-yaml"
          aria-controls="submit-panel"
          aria-selected={mode === 'yaml'}
          tabIndex={mode === 'yaml' ? 0 : -1}
          ref={(el) => void (tabs.current[1] = el)}
          onKeyDown={onTabKey}
          onClick={() => void switchTo('yaml')}
        >
          YAML
        </button>
      </div>
      {note && (
        <p role="status" class="submit-note">
          {note}
        </p>
      )}
      <form
        onSubmit={onPreview}
        class={mode === 'yaml' ? 'submit submit-yaml' : 'submit'}
        id="submit-panel"
        role="tabpanel"
        aria-labelledby={mode === 'form' ? 'submit-tab-form' : 'submit-tab-yaml'}
      >
        {mode === 'form' ? (
          <>
            {field('name', 'Name')}
            <label>
              Queue
              <select
                value={queueId || queues[0]?.id || ''}
                onChange={(e) => {
                  setPreview(null);
                  setQueueId((e.target as HTMLSelectElement).value);
                }}
              >
                <NamedOptions items={queues} />
              </select>
            </label>
            {field('image', 'Image')}
            {field('gpus', 'GPUs per pod', 'number')}
            {field('pods', 'Pods', 'number')}
            {field('hours', 'Expected hours', 'number')}
            {field('priorityClass', 'Priority class')}
          </>
        ) : (
          <>
            <label>
              Job (YAML)
              <textarea
                class="yaml"
                rows={18}
                value={yaml}
                spellcheck={false}
                aria-describedby="yaml-help"
                aria-invalid={yamlProblems ? true : undefined}
                onInput={(e) => {
                  setPreview(null);
                  setYaml((e.target as HTMLTextAreaElement).value);
                }}
              />
            </label>
            <p id="yaml-help" class="submit-hint">
              The job file <code>fairway submit -f</code> reads (see examples/job.yaml): name, queue (a name)
              or queueId, project, priorityClass, expectedDurationSeconds, checkpoint, podSets, container… The
              same file gives the same job, from here or from the CLI.
            </p>
            {yamlProblems && (
              <div role="alert" class="yaml-problems">
                <p>{yamlProblems.syntax ? 'The YAML does not parse:' : 'The YAML is not a valid job:'}</p>
                <ul>
                  {yamlProblems.problems.map((x, i) => (
                    <li key={i}>{problemText(x)}</li>
                  ))}
                </ul>
              </div>
            )}
          </>
        )}
        <button type="submit" disabled={busy}>
          Preview
        </button>
      </form>
      {problem && <p role="alert">{problem}</p>}
      {p && (
        <section class="preview" aria-label="Preview">
          <h2>Preview</h2>
          <p>
            {p.admissible
              ? p.borrowed
                ? 'Fits now, borrowing idle quota.'
                : 'Fits now within quota.'
              : `Waits: ${p.message ?? p.reason ?? ''}`}
          </p>
          <p>Would preempt {p.wouldPreempt.length} job(s).</p>
          <p>
            Estimated {hours(p.estimatedGpuHours)} GPU-hours, {money(p.estimatedCost)}.
          </p>
          <button type="button" onClick={() => void onSubmit()}>
            Submit
          </button>
        </section>
      )}
    </section>
  );
}

/** "Line 4, column 1: Sequence item without - indicator" (the parser's own position moved to the front). */
function problemText(p: FileProblem): string {
  const at = / at line \d+, column (\d+):?$/.exec(p.message);
  return at
    ? `Line ${p.line}, column ${at[1]}: ${p.message.slice(0, at.index)}`
    : `Line ${p.line}: ${p.message}`;
}
