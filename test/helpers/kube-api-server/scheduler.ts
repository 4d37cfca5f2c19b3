/**
 * The scheduler: binds each pending pod (higher priority first, then older) to a node it fits
 * (scheduling.ts), picking by `scoring`: the first by name, or kube-scheduler's NodeResourcesFit
 * LeastAllocated (spreads, the real default) / MostAllocated (packs). Pods being deleted still hold
 * their node's resources. A pod with schedulingGates waits (PodScheduled=False SchedulingGated); one that
 * fits nowhere is Unschedulable (with a FailedScheduling Event) and, with `preemption` on, gets its
 * nominated node by evicting lower-priority pods there (DisruptionTarget PreemptionByScheduler).
 */
import { type Cluster, listIn, setCondition } from './cluster.js';
import {
  nodeScore,
  preemptionCandidate,
  priorityOf,
  unfitReason,
  unschedulableMessage,
} from './scheduling.js';
import { terminal } from './store.js';

const SOURCE = { component: 'default-scheduler' };

export class Scheduler {
  constructor(
    private readonly c: Cluster,
    private readonly onBound: (uid: string, now: number) => void,
  ) {}

  pass(now: number): void {
    const nodes = this.c.store.list('Node');
    const pods = this.c.store.list('Pod');
    const bound = new Map<string, any[]>();
    for (const p of pods) if (p.spec?.nodeName && !terminal(p)) listIn(bound, p.spec.nodeName).push(p);
    const pending = pods
      .filter((p) => !p.spec?.nodeName && !terminal(p) && !p.metadata.deletionTimestamp)
      .sort(
        (a, b) =>
          priorityOf(b) - priorityOf(a) ||
          String(a.metadata.creationTimestamp).localeCompare(b.metadata.creationTimestamp) ||
          String(a.metadata.name).localeCompare(b.metadata.name),
      );
    for (const pod of pending) this.place(pod, nodes, bound, now);
  }

  private place(pod: any, nodes: any[], bound: Map<string, any[]>, now: number): void {
    const status = structuredClone(pod.status ?? {});
    if ((pod.spec?.schedulingGates ?? []).length > 0) {
      setCondition(
        status,
        'PodScheduled',
        'False',
        'SchedulingGated',
        'Scheduling is blocked due to non-empty scheduling gates',
        now,
      );
      this.writeStatus(pod, status);
      return;
    }
    const reasons = new Map<string, number>();
    const feasible = nodes.filter((n) => {
      const why = unfitReason(pod, n, bound.get(n.metadata.name) ?? []);
      if (why) reasons.set(why, (reasons.get(why) ?? 0) + 1);
      return why === undefined;
    });
    const node = this.pick(pod, feasible, bound);
    if (node) {
      const message = `Successfully assigned ${pod.metadata.namespace}/${pod.metadata.name} to ${node.metadata.name}`;
      setCondition(status, 'PodScheduled', 'True', '', '', now);
      delete status.nominatedNodeName;
      const next = { ...pod, spec: { ...pod.spec, nodeName: node.metadata.name }, status };
      const stored = this.c.write(() => this.c.store.replace(next, 'system'));
      if (stored) {
        listIn(bound, node.metadata.name).push(stored);
        this.onBound(pod.metadata.uid, now);
        this.c.events.record(stored, 'Normal', 'Scheduled', message, SOURCE);
      }
      return;
    }
    let message = unschedulableMessage(reasons, nodes.length);
    const preemption = this.c.options.preemption ? this.preempt(pod, status, nodes, bound, now) : undefined;
    if (preemption) message = `${message} ${preemption}`;
    const before = (pod.status?.conditions ?? []).find((c: any) => c.type === 'PodScheduled');
    setCondition(status, 'PodScheduled', 'False', 'Unschedulable', message, now);
    if (before?.message !== message)
      this.c.events.record(pod, 'Warning', 'FailedScheduling', message, SOURCE);
    this.writeStatus(pod, status);
  }

  private writeStatus(pod: any, status: any): void {
    if (JSON.stringify(status) !== JSON.stringify(pod.status))
      this.c.write(() => this.c.store.replace({ ...pod, status }, 'system'));
  }

  private pick(pod: any, feasible: any[], bound: Map<string, any[]>): any | undefined {
    const nominated = feasible.find((n) => n.metadata.name === pod.status?.nominatedNodeName);
    if (nominated) return nominated;
    const strategy = this.c.options.scoring;
    if (strategy === 'first-fit' || feasible.length < 2) return feasible[0];
    const scored = feasible.map((n) => ({
      n,
      score: nodeScore(pod, n, bound.get(n.metadata.name) ?? [], strategy),
    }));
    scored.sort((a, b) => b.score - a.score || String(a.n.metadata.name).localeCompare(b.n.metadata.name));
    return scored[0]!.n;
  }

  /**
   * DefaultPreemption: evicts the victims on the chosen node and nominates it. Returns the `preemption:`
   * part of the FailedScheduling message when it cannot help, undefined when it did.
   */
  private preempt(
    pod: any,
    status: any,
    nodes: any[],
    bound: Map<string, any[]>,
    now: number,
  ): string | undefined {
    if (pod.spec?.preemptionPolicy === 'Never')
      return 'preemption: not eligible due to preemptionPolicy=Never.';
    const nominated = status.nominatedNodeName;
    const terminatingThere = (bound.get(nominated) ?? []).some(
      (p) => p.metadata.deletionTimestamp && priorityOf(p) < priorityOf(pod),
    );
    if (nominated && terminatingThere) return undefined; // its victims are still going: wait for them
    const choice = preemptionCandidate(pod, nodes, bound);
    if (!choice) {
      const reasons = new Map<string, number>();
      for (const n of nodes) {
        const why = unfitReason(pod, n, []);
        const key =
          why && !why.startsWith('Insufficient')
            ? 'Preemption is not helpful for scheduling'
            : 'No preemption victims found for incoming pod';
        reasons.set(key, (reasons.get(key) ?? 0) + 1);
      }
      return `preemption: ${unschedulableMessage(reasons, nodes.length)}`;
    }
    const nodeName = choice.node.metadata.name;
    const schedulerName = pod.spec?.schedulerName ?? 'default-scheduler';
    for (const stale of choice.victims) {
      const { namespace, name } = stale.metadata;
      const victim = this.c.store.get('Pod', namespace, name);
      if (!victim) continue;
      const vs = structuredClone(victim.status ?? {});
      const why = `${schedulerName}: preempting to accommodate a higher priority pod`;
      setCondition(vs, 'DisruptionTarget', 'True', 'PreemptionByScheduler', why, now);
      this.c.write(() => this.c.store.replace({ ...victim, status: vs }, 'system'));
      this.c.write(() => this.c.store.delete('Pod', namespace, name));
      const message = `Preempted by pod ${pod.metadata.uid} on node ${nodeName}`;
      this.c.events.record(victim, 'Normal', 'Preempted', message, SOURCE);
    }
    status.nominatedNodeName = nodeName;
    return undefined;
  }
}
