// An isolation policy's form: a new policy (name and level) or a change of one (a built-in keeps its
// level). The API checks the coefficients (base within [min, max], shares 0..1) and says what is wrong.
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { Problem } from '../parts/problem.js';
import { Choice, inputValue, useAction } from './admin-shared.js';
import type { Policy } from './policies.js';

const SetPolicy = graphql(`
  mutation ConsoleSetIsolationPolicy($in: SetIsolationPolicyInput!) { setIsolationPolicy(input: $in) { name } }
`);

type Level = Policy['level'];
type Preemptibility = Policy['preemptible'];
type IdleAction = Policy['idle']['action'];
const LEVELS: Level[] = ['DEDICATED', 'GUARANTEED', 'ELASTIC', 'BEST_EFFORT'];
const PREEMPTIBILITIES: Preemptibility[] = ['NEVER', 'RECLAIM_ONLY', 'ANY'];
const ACTIONS: IdleAction[] = ['NOTIFY', 'RECLAIM_IF_BORROWING', 'RECLAIM'];

type Fields = Record<
  | 'lendMin'
  | 'lendBase'
  | 'lendMax'
  | 'borrowMin'
  | 'borrowBase'
  | 'borrowMax'
  | 'minRun'
  | 'grace'
  | 'utilization'
  | 'idleFor'
  | 'notRunning',
  string
>;

function initial(p: Policy | undefined): Fields {
  return {
    lendMin: String(p?.lend.min ?? 0),
    lendBase: String(p?.lend.base ?? 0.5),
    lendMax: String(p?.lend.max ?? 1),
    borrowMin: String(p?.borrow?.min ?? 0),
    borrowBase: String(p?.borrow?.base ?? 1),
    borrowMax: String(p?.borrow?.max ?? 2),
    minRun: String(p?.minRunBeforeReclaimSeconds ?? 600),
    grace: String(p?.reclaimGraceSeconds ?? 60),
    utilization: String(p?.idle.utilizationBelow ?? 0.05),
    idleFor: String(p?.idle.idleForSeconds ?? 1800),
    notRunning: String(p?.idle.notRunningForSeconds ?? 900),
  };
}

export function PolicyForm({ current, onDone }: { current?: Policy; onDone: () => void }) {
  const set = useAction(SetPolicy);
  const [name, setName] = useState('');
  const [description, setDescription] = useState(current?.description ?? '');
  const [level, setLevel] = useState<Level>(current?.level ?? 'ELASTIC');
  const [preemptible, setPreemptible] = useState<Preemptibility>(current?.preemptible ?? 'RECLAIM_ONLY');
  const [action, setAction] = useState<IdleAction>(current?.idle.action ?? 'NOTIFY');
  const [unlimited, setUnlimited] = useState(current ? current.borrow == null : false);
  const [f, setF] = useState<Fields>(() => initial(current));
  const num = (key: keyof Fields, label: string, step = 'any') => (
    <label>
      {label}{' '}
      <input
        type="number"
        step={step}
        required
        class="narrow"
        value={f[key]}
        onInput={(e) => setF({ ...f, [key]: inputValue(e) })}
      />
    </label>
  );
  const submit = async (e: Event) => {
    e.preventDefault();
    const n = (key: keyof Fields) => Number(f[key]);
    const ok = await set.run({
      in: {
        name: current?.name ?? name.trim(),
        description,
        level,
        lend: { min: n('lendMin'), base: n('lendBase'), max: n('lendMax') },
        borrow: unlimited ? null : { min: n('borrowMin'), base: n('borrowBase'), max: n('borrowMax') },
        minRunBeforeReclaimSeconds: n('minRun'),
        reclaimGraceSeconds: n('grace'),
        preemptible,
        idle: {
          utilizationBelow: n('utilization'),
          idleForSeconds: n('idleFor'),
          notRunningForSeconds: n('notRunning'),
          action,
        },
      },
    });
    if (!ok) return;
    if (!current) {
      setName('');
      setDescription('');
    }
    onDone();
  };
  return (
    <form
      class="inline-form"
      aria-label={current ? `Edit policy ${current.name}` : 'New isolation policy'}
      onSubmit={submit}
    >
      {!current && <strong>New isolation policy</strong>}
      {!current && (
        <label>
          Name <input required value={name} onInput={(e) => setName(inputValue(e))} />
        </label>
      )}
      <label>
        Description <input value={description} onInput={(e) => setDescription(inputValue(e))} />
      </label>
      {current?.builtIn ? null : <Choice label="Level" value={level} options={LEVELS} onChange={setLevel} />}
      <fieldset>
        <legend>Lends (share of unused nominal, 0–1)</legend>
        {num('lendMin', 'Lend min')}
        {num('lendBase', 'Lend base')}
        {num('lendMax', 'Lend max')}
      </fieldset>
      <fieldset>
        <legend>Borrows (multiple of nominal)</legend>
        <label>
          <input
            type="checkbox"
            checked={unlimited}
            onChange={(e) => setUnlimited((e.target as HTMLInputElement).checked)}
          />{' '}
          Unlimited
        </label>
        {!unlimited && num('borrowMin', 'Borrow min')}
        {!unlimited && num('borrowBase', 'Borrow base')}
        {!unlimited && num('borrowMax', 'Borrow max')}
      </fieldset>
      <fieldset>
        <legend>Reclaim and idle jobs</legend>
        {num('minRun', 'Minimum run before reclaim (s)', '1')}
        {num('grace', 'Reclaim grace (s)', '1')}
        <Choice
          label="Preemptible"
          value={preemptible}
          options={PREEMPTIBILITIES}
          onChange={setPreemptible}
        />
        {num('utilization', 'Idle below utilization (0–1)')}
        {num('idleFor', 'Idle for (s)', '1')}
        {num('notRunning', 'Not running after (s)', '1')}
        <Choice label="Idle action" value={action} options={ACTIONS} onChange={setAction} />
      </fieldset>
      <button type="submit" disabled={set.busy}>
        {current ? 'Save policy' : 'Add policy'}
      </button>
      <Problem error={set.problem} />
    </form>
  );
}
