/**
 * The Deployment controller (pkg/controller/deployment), for apps/v1 Deployments:
 * - one ReplicaSet per pod template, `<deployment>-<pod-template-hash>` (the hash of the template, in the
 *   real encoding's alphabet but not its value), with the label pod-template-hash on itself, its selector and
 *   its template, the annotations deployment.kubernetes.io/revision / desired-replicas / max-replicas and an
 *   ownerReference to the Deployment (controller=true); orphans the selector matches are adopted;
 * - RollingUpdate: the new ReplicaSet grows while all of them hold at most replicas + maxSurge pods, the
 *   old ones shrink (unhealthy pods first) while at least replicas - maxUnavailable are available (ready for
 *   minReadySeconds), both rounded as the real controller does (surge up, unavailable down, 1 if both are
 *   0); Recreate: the old ones go to 0, the new one starts once no old pod runs; old ReplicaSets beyond
 *   revisionHistoryLimit are deleted once the rollout is complete; a replicas change alone (or while
 *   paused: no rollout) resizes the one active ReplicaSet, or shares the change among several in proportion;
 * - status and conditions: deployment-status.ts; ScalingReplicaSet Events.
 * Not modelled: collisionCount (a hash collision), rollbacks through annotations.
 */
import { canonical } from './apps.js';
import { type Cluster, controllerOf, listIn } from './cluster.js';
import {
  complete,
  conditionOf,
  DESIRED,
  equalIgnoreHash,
  MAX,
  maxSurge,
  maxUnavailable,
  REVISION,
  replicasOf,
  revisionOf,
  rolling,
  rolloutStatus,
  setCondition,
  sum,
  TEMPLATE_HASH,
  templateHash,
} from './deployment-status.js';
import { claim, ownerRef } from './replicaset-controller.js';
import { terminal } from './store.js';

const SOURCE = { component: 'deployment-controller' };
/** One sync of a Deployment: its ReplicaSets (kept current as they are written) and the status being made. */
interface Sync {
  d: any;
  sets: any[];
  pods: Map<string, any[]>;
  status: any;
  annotations: Record<string, string>;
  now: number;
  /** A scaling-only sync (paused, or a scaling event): the status without progress estimation. */
  statusOnly?: boolean;
}

export class DeploymentController {
  constructor(private readonly c: Cluster) {}

  pass(now: number): void {
    const deployments = this.c.store.list('Deployment');
    if (deployments.length === 0) return;
    const setsByNamespace = new Map<string, any[]>();
    for (const rs of this.c.store.list('ReplicaSet')) listIn(setsByNamespace, rs.metadata.namespace).push(rs);
    const pods = new Map<string, any[]>();
    for (const p of this.c.store.peekAll('Pod')) {
      const ref = controllerOf(p, 'ReplicaSet');
      if (ref) listIn(pods, ref.uid).push(p);
    }
    for (const d of deployments) {
      if (d.metadata.deletionTimestamp) continue;
      const candidates = (setsByNamespace.get(d.metadata.namespace) ?? []).filter((rs) => {
        const ref = (rs.metadata.ownerReferences ?? []).find((r: any) => r.controller);
        return !ref || (ref.kind === 'Deployment' && ref.uid === d.metadata.uid);
      });
      const sets = claim(this.c, d, candidates).sort(
        (a, b) =>
          String(a.metadata.creationTimestamp).localeCompare(b.metadata.creationTimestamp) ||
          String(a.metadata.name).localeCompare(b.metadata.name),
      );
      const s: Sync = {
        d,
        sets,
        pods,
        status: structuredClone(d.status ?? {}),
        annotations: { ...(d.metadata.annotations ?? {}) },
        now,
      };
      this.sync(s);
      this.writeStatus(s);
    }
  }

  private sync(s: Sync): void {
    const { d } = s;
    if (d.spec?.paused) {
      setCondition(s.status, 'Progressing', 'Unknown', 'DeploymentPaused', 'Deployment is paused', s.now);
      s.statusOnly = true;
      const newRS = this.newReplicaSet(s, false);
      this.scaleEvent(s, newRS);
      this.cleanup(
        s,
        s.sets.filter((rs) => rs.metadata.uid !== newRS?.metadata.uid),
        true,
      );
      return;
    }
    if (conditionOf(s.status, 'Progressing')?.reason === 'DeploymentPaused')
      setCondition(s.status, 'Progressing', 'Unknown', 'DeploymentResumed', 'Deployment is resumed', s.now);
    const newRS = this.newReplicaSet(s, false);
    // isScalingEvent: an active ReplicaSet was sized for another replicas.
    const scaling = s.sets.some((rs) => {
      const desired = rs.metadata.annotations?.[DESIRED];
      return replicasOf(rs) > 0 && desired !== undefined && Number(desired) !== replicasOf(d);
    });
    if (scaling) {
      s.statusOnly = true;
      this.scaleEvent(s, newRS);
    } else if (rolling(d)) this.rollingUpdate(s);
    else this.recreate(s);
  }

  /**
   * scale(): replicas changed without a rollout: the one active ReplicaSet (or the newest) takes the count;
   * several active ones (mid-rollout) share the change in proportion to their size (RollingUpdate only).
   */
  private scaleEvent(s: Sync, newRS: any | undefined): void {
    const { d } = s;
    const want = replicasOf(d);
    const active = s.sets.filter((rs) => replicasOf(rs) > 0);
    if (active.length <= 1) {
      const target = active[0] ?? newRS ?? s.sets[s.sets.length - 1];
      if (target) this.scale(s, target, want);
      return;
    }
    const latestNew = newRS && this.latest(s, newRS);
    const saturated =
      latestNew &&
      replicasOf(latestNew) === want &&
      Number(latestNew.metadata.annotations?.[DESIRED]) === want &&
      (latestNew.status?.availableReplicas ?? 0) === want;
    if (saturated) {
      for (const rs of active) if (rs.metadata.uid !== newRS.metadata.uid) this.scale(s, rs, 0);
      return;
    }
    if (!rolling(d)) return;
    const toAdd = (want > 0 ? want + maxSurge(d) : 0) - sum(active, replicasOf);
    const created = (rs: any) => Date.parse(rs.metadata.creationTimestamp) || 0;
    const ordered = active.sort(
      (a, b) =>
        replicasOf(b) - replicasOf(a) || (toAdd > 0 ? created(b) - created(a) : created(a) - created(b)),
    );
    let added = 0;
    const sizes = ordered.map((rs) => {
      if (toAdd === 0 || toAdd === added) return replicasOf(rs);
      // getReplicaSetFraction: its size at the new maximum, from the maximum it was sized for.
      const before = Number(rs.metadata.annotations?.[MAX]) || d.status?.replicas || 0;
      const fraction =
        want === 0 || !before
          ? -replicasOf(rs)
          : Math.round((replicasOf(rs) * (want + maxSurge(d))) / before) - replicasOf(rs);
      const share = toAdd > 0 ? Math.min(fraction, toAdd - added) : Math.max(fraction, toAdd - added);
      added += share;
      return replicasOf(rs) + share;
    });
    sizes[0] = Math.max(0, sizes[0]! + toAdd - added); // the leftovers to the largest
    ordered.forEach((rs, i) => this.scale(s, rs, sizes[i]!));
  }

  private rollingUpdate(s: Sync): void {
    const newRS = this.newReplicaSet(s, true);
    if (!newRS) return;
    if (this.reconcileNew(s, newRS) || this.reconcileOld(s, newRS)) return;
    this.cleanup(
      s,
      s.sets.filter((rs) => rs.metadata.uid !== newRS.metadata.uid),
    );
  }

  /** reconcileNewReplicaSet: down to replicas, or up as far as maxSurge lets it. */
  private reconcileNew(s: Sync, newRS: any): boolean {
    const want = replicasOf(s.d);
    const current = replicasOf(this.latest(s, newRS));
    if (current > want) return this.scale(s, newRS, want);
    const room = want + maxSurge(s.d) - sum(s.sets, replicasOf);
    return current < want && room > 0 && this.scale(s, newRS, current + Math.min(room, want - current));
  }

  /** reconcileOldReplicaSets: the old ReplicaSets shrink while enough pods stay available. */
  private reconcileOld(s: Sync, newRS: any): boolean {
    const old = () => s.sets.filter((rs) => rs.metadata.uid !== newRS.metadata.uid);
    if (sum(old(), replicasOf) === 0) return false;
    const minAvailable = replicasOf(s.d) - maxUnavailable(s.d);
    const latest = this.latest(s, newRS);
    const newUnavailable = replicasOf(latest) - (latest.status?.availableReplicas ?? 0);
    const maxScaledDown = sum(s.sets, replicasOf) - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return false;
    let scaled = 0;
    // cleanupUnhealthyReplicas: what is not available goes first, oldest ReplicaSet first.
    for (const rs of old()) {
      if (scaled >= maxScaledDown) break;
      const unhealthy = replicasOf(rs) - (rs.status?.availableReplicas ?? 0);
      if (replicasOf(rs) === 0 || unhealthy <= 0) continue;
      const by = Math.min(maxScaledDown - scaled, unhealthy);
      this.scale(s, rs, replicasOf(rs) - by);
      scaled += by;
    }
    // scaleDownOldReplicaSetsForRollingUpdate: then available pods, down to minAvailable.
    const room = sum(s.sets, (rs) => rs.status?.availableReplicas ?? 0) - minAvailable;
    let more = 0;
    for (const rs of old()) {
      if (more >= room) break;
      if (replicasOf(rs) === 0) continue;
      const by = Math.min(replicasOf(rs), room - more);
      this.scale(s, rs, replicasOf(rs) - by);
      more += by;
    }
    return scaled + more > 0;
  }

  private recreate(s: Sync): void {
    const { d } = s;
    let newRS = this.newReplicaSet(s, false);
    const old = s.sets.filter((rs) => rs.metadata.uid !== newRS?.metadata.uid);
    const active = old.filter((rs) => replicasOf(rs) > 0);
    if (active.length > 0) {
      for (const rs of active) this.scale(s, rs, 0);
      return;
    }
    const running = old.some((rs) => (s.pods.get(rs.metadata.uid) ?? []).some((p) => !terminal(p)));
    if (running) return;
    newRS ??= this.newReplicaSet(s, true);
    if (!newRS) return;
    this.scale(s, this.latest(s, newRS), replicasOf(d));
    this.cleanup(s, old);
  }

  private latest(s: Sync, rs: any): any {
    return s.sets.find((x) => x.metadata.uid === rs.metadata.uid) ?? rs;
  }

  /** getNewReplicaSet: the ReplicaSet of the current template (revision synced), created when asked. */
  private newReplicaSet(s: Sync, create: boolean): any | undefined {
    const { d, now } = s;
    const found = s.sets.find((rs) => equalIgnoreHash(rs.spec?.template, d.spec?.template));
    const maxOld = Math.max(0, ...s.sets.filter((rs) => rs !== found).map(revisionOf));
    const revision = String(maxOld + 1);
    if (found) {
      let rs = found;
      const minReady = d.spec?.minReadySeconds ?? 0;
      const stale = revisionOf(found) < maxOld + 1 || !found.metadata.annotations?.[DESIRED];
      if (stale || (found.spec?.minReadySeconds ?? 0) !== minReady) {
        const annotations = { ...this.replicaAnnotations(d), ...found.metadata.annotations };
        if (revisionOf(found) < maxOld + 1) annotations[REVISION] = revision;
        const spec = { ...found.spec, minReadySeconds: minReady };
        if (!minReady) delete spec.minReadySeconds;
        rs = this.update(s, { ...found, metadata: { ...found.metadata, annotations }, spec });
      }
      s.annotations[REVISION] = rs.metadata.annotations?.[REVISION] ?? revision;
      if (!conditionOf(s.status, 'Progressing'))
        setCondition(
          s.status,
          'Progressing',
          'True',
          'FoundNewReplicaSet',
          `Found new replica set "${rs.metadata.name}"`,
          now,
        );
      return rs;
    }
    if (!create) return undefined;
    const hash = templateHash(d.spec.template);
    const template = structuredClone(d.spec.template);
    template.metadata = {
      ...template.metadata,
      labels: { ...template.metadata?.labels, [TEMPLATE_HASH]: hash },
    };
    const selector = structuredClone(d.spec.selector);
    selector.matchLabels = { ...selector.matchLabels, [TEMPLATE_HASH]: hash };
    const all = sum(s.sets, replicasOf);
    const replicas = rolling(d)
      ? Math.max(0, Math.min(replicasOf(d) + maxSurge(d) - all, replicasOf(d)))
      : replicasOf(d);
    const {
      [REVISION]: _r,
      'kubectl.kubernetes.io/last-applied-configuration': _l,
      ...copied
    } = s.annotations;
    const rs = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${d.metadata.name}-${hash}`,
        namespace: d.metadata.namespace,
        labels: template.metadata.labels,
        annotations: { ...copied, ...this.replicaAnnotations(d), [REVISION]: revision },
        ownerReferences: [ownerRef(d)],
      },
      spec: {
        replicas,
        ...(d.spec.minReadySeconds ? { minReadySeconds: d.spec.minReadySeconds } : {}),
        selector,
        template,
      },
    };
    const created = this.c.write(() => this.c.store.create(rs, 'system'));
    if (!created) return undefined;
    s.sets.push(created);
    s.annotations[REVISION] = revision;
    if (replicas > 0)
      this.c.events.record(
        d,
        'Normal',
        'ScalingReplicaSet',
        `Scaled up replica set ${rs.metadata.name} from 0 to ${replicas}`,
        SOURCE,
      );
    setCondition(
      s.status,
      'Progressing',
      'True',
      'NewReplicaSetCreated',
      `Created new replica set "${rs.metadata.name}"`,
      now,
    );
    return created;
  }

  private replicaAnnotations(d: any): Record<string, string> {
    return { [DESIRED]: String(replicasOf(d)), [MAX]: String(replicasOf(d) + maxSurge(d)) };
  }

  private update(s: Sync, next: any): any {
    const stored = this.c.write(() => this.c.store.replace(next, 'system'));
    if (!stored) return next;
    s.sets = s.sets.map((rs) => (rs.metadata.uid === stored.metadata.uid ? stored : rs));
    return stored;
  }

  /** scaleReplicaSetAndRecordEvent: whether the count changed. */
  private scale(s: Sync, rs: any, replicas: number): boolean {
    const current = this.latest(s, rs);
    const from = replicasOf(current);
    const annotations = { ...current.metadata.annotations, ...this.replicaAnnotations(s.d) };
    if (from === replicas && canonical(annotations) === canonical(current.metadata.annotations ?? {}))
      return false;
    this.update(s, {
      ...current,
      metadata: { ...current.metadata, annotations },
      spec: { ...current.spec, replicas },
    });
    if (from !== replicas)
      this.c.events.record(
        s.d,
        'Normal',
        'ScalingReplicaSet',
        `Scaled ${replicas > from ? 'up' : 'down'} replica set ${current.metadata.name} from ${from} to ${replicas}`,
        SOURCE,
      );
    return from !== replicas;
  }

  /** cleanupDeployment: old ReplicaSets beyond revisionHistoryLimit, once complete (or paused) and empty. */
  private cleanup(s: Sync, old: any[], paused = false): void {
    const limit = s.d.spec?.revisionHistoryLimit;
    if (limit === undefined || (!paused && !complete(s.d, s.d.status ?? {}))) return;
    const alive = old
      .filter((rs) => !rs.metadata.deletionTimestamp)
      .sort((a, b) => revisionOf(a) - revisionOf(b));
    for (const rs of alive.slice(0, Math.max(0, alive.length - limit))) {
      const current = this.latest(s, rs);
      if ((current.status?.replicas ?? 0) !== 0 || replicasOf(current) !== 0) continue;
      if ((current.metadata.generation ?? 1) > (current.status?.observedGeneration ?? 0)) continue;
      this.c.write(() =>
        this.c.store.delete('ReplicaSet', current.metadata.namespace, current.metadata.name),
      );
    }
  }

  private writeStatus(s: Sync): void {
    const { d } = s;
    const sets = s.sets.filter((rs) =>
      this.c.store.peek('ReplicaSet', rs.metadata.namespace, rs.metadata.name),
    );
    const due = (at: number) => this.c.due(at, s.now);
    const status = rolloutStatus(d, sets, s.status.conditions, !s.statusOnly, due, s.now);
    const metadata = { ...d.metadata, annotations: s.annotations };
    if (Object.keys(s.annotations).length === 0) delete metadata.annotations;
    const next = { ...d, metadata, status };
    if (JSON.stringify(next) !== JSON.stringify(d)) this.c.write(() => this.c.store.replace(next, 'system'));
  }
}
