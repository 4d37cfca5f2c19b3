/**
 * The HorizontalPodAutoscaler controller (pkg/controller/podautoscaler), for autoscaling/v2 HPAs whose
 * scaleTargetRef is a Deployment or ReplicaSet, every `hpaSyncMs` (the real one's --horizontal-pod-autoscaler-sync-period,
 * 15 s): a target with replicas below minReplicas or above maxReplicas is set to the bound through its
 * scale subresource (SuccessfulRescale Event, lastScaleTime); a target at 0 is left alone (ScalingActive
 * False ScalingDisabled); in between no metrics are read (there is no metrics API) and the count is kept.
 * Status: currentReplicas, desiredReplicas, lastScaleTime; conditions AbleToScale, ScalingActive,
 * ScalingLimited. It overwrites whatever another writer set at its next sync, as a real one does.
 */
import { type Cluster, setCondition } from './cluster.js';
import { resourceName, typeByKind } from './resources.js';
import { SCALABLE, setReplicas } from './scale.js';
import { kubeTime } from './store.js';

const SOURCE = { component: 'horizontal-pod-autoscaler' };
const MANAGER = 'kube-controller-manager';

export class HpaController {
  /** When each HPA (by uid) was last synced. */
  private readonly syncedAt = new Map<string, number>();

  constructor(private readonly c: Cluster) {}

  pass(now: number): void {
    const hpas = this.c.store.list('HorizontalPodAutoscaler');
    const live = new Set(hpas.map((h) => h.metadata.uid));
    for (const uid of this.syncedAt.keys()) if (!live.has(uid)) this.syncedAt.delete(uid);
    const every = this.c.options.hpaSyncMs;
    for (const hpa of hpas) {
      if (hpa.metadata.deletionTimestamp) continue;
      const last = this.syncedAt.get(hpa.metadata.uid);
      if (last !== undefined && !this.c.due(last + every, now)) continue;
      this.syncedAt.set(hpa.metadata.uid, now);
      this.c.due(now + every, now);
      this.sync(hpa, now);
    }
  }

  private sync(hpa: any, now: number): void {
    const spec = hpa.spec ?? {};
    const status = structuredClone(hpa.status ?? {});
    const ref = spec.scaleTargetRef ?? {};
    const group = String(ref.apiVersion ?? '').split('/')[0];
    const t = SCALABLE.has(ref.kind) && group === 'apps' ? typeByKind(ref.kind) : undefined;
    const target = t ? this.c.store.get(ref.kind, hpa.metadata.namespace, ref.name) : undefined;
    if (!t || !target) {
      const why = t
        ? `${resourceName(t)} "${ref.name}" not found`
        : `no matches for kind "${ref.kind}" in group "${group}"`;
      this.c.events.record(hpa, 'Warning', 'FailedGetScale', why, SOURCE);
      setCondition(
        status,
        'AbleToScale',
        'False',
        'FailedGetScale',
        `the HPA controller was unable to get the target's current scale: ${why}`,
        now,
      );
      this.writeStatus(hpa, status);
      return;
    }
    setCondition(
      status,
      'AbleToScale',
      'True',
      'SucceededGetScale',
      "the HPA controller was able to get the target's current scale",
      now,
    );
    const current: number = target.spec?.replicas ?? 0;
    const min: number = spec.minReplicas ?? 1;
    const max: number = spec.maxReplicas;
    let desired = current;
    let reason = '';
    if (current === 0 && min !== 0) {
      desired = 0;
      setCondition(
        status,
        'ScalingActive',
        'False',
        'ScalingDisabled',
        'scaling is disabled since the replica count of the target is zero',
        now,
      );
    } else if (current > max) {
      desired = max;
      reason = 'Current number of replicas above Spec.MaxReplicas';
    } else if (current < min) {
      desired = min;
      reason = 'Current number of replicas below Spec.MinReplicas';
    } else {
      setCondition(
        status,
        'ScalingActive',
        'True',
        'ValidMetricFound',
        'the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)',
        now,
      );
      setCondition(
        status,
        'ScalingLimited',
        'False',
        'DesiredWithinRange',
        'the desired count is within the acceptable range',
        now,
      );
    }
    const rescale = desired !== current;
    if (rescale) {
      const scaled = this.c.write(() =>
        setReplicas(this.c.store, ref.kind, hpa.metadata.namespace, ref.name, desired, MANAGER),
      );
      if (!scaled) {
        setCondition(
          status,
          'AbleToScale',
          'False',
          'FailedUpdateScale',
          'the HPA controller was unable to update the target scale',
          now,
        );
        this.writeStatus(hpa, { ...status, currentReplicas: current });
        return;
      }
      setCondition(
        status,
        'AbleToScale',
        'True',
        'SucceededRescale',
        `the HPA controller was able to update the target scale to ${desired}`,
        now,
      );
      this.c.events.record(
        hpa,
        'Normal',
        'SuccessfulRescale',
        `New size: ${desired}; reason: ${reason}`,
        SOURCE,
      );
      status.lastScaleTime = kubeTime(now);
    }
    status.currentReplicas = current;
    status.desiredReplicas = desired;
    if (!status.currentReplicas) delete status.currentReplicas;
    this.writeStatus(hpa, status);
  }

  private writeStatus(hpa: any, status: any): void {
    const ordered = {
      ...(status.observedGeneration !== undefined ? { observedGeneration: status.observedGeneration } : {}),
      ...(status.lastScaleTime ? { lastScaleTime: status.lastScaleTime } : {}),
      ...(status.currentReplicas ? { currentReplicas: status.currentReplicas } : {}),
      desiredReplicas: status.desiredReplicas ?? 0,
      ...(status.conditions?.length ? { conditions: status.conditions } : {}),
    };
    if (JSON.stringify(ordered) !== JSON.stringify(hpa.status ?? {}))
      this.c.write(() => this.c.store.replace({ ...hpa, status: ordered }, 'system'));
  }
}
