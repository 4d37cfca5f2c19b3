/**
 * Validation of every object the test API server stores: the kubernetes-models JSON schemas
 * (types, formats, required fields, quantities) plus a strict unknown-field check.
 *
 * Why the second check: kubernetes-models' schemas do not set `additionalProperties: false`, so a
 * misspelt field (`spec.template.spec.container`) passes them. A real API server drops such a
 * field (fieldValidation=Warn) or refuses it (Strict, kubectl's default); either way the field
 * silently does nothing, which is exactly the bug a test should catch. We refuse it, like Strict.
 * The field lists come from @kubernetes/client-node's generated models (attributeTypeMap).
 */
import * as k8s from '@kubernetes/client-node';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1';
import { Deployment, ReplicaSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { Lease } from 'kubernetes-models/coordination.k8s.io/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PriorityClass } from 'kubernetes-models/scheduling.k8s.io/v1';
import {
  Event,
  LimitRange,
  Namespace,
  Node,
  Pod,
  ResourceQuota,
  Service,
  ServiceAccount,
} from 'kubernetes-models/v1';

interface Validatable {
  validate(): void;
}
type ModelConstructor = new (data: any) => Validatable;

const MODELS: Record<string, { model: ModelConstructor; clientType: string }> = {
  Namespace: { model: Namespace, clientType: 'V1Namespace' },
  Pod: { model: Pod, clientType: 'V1Pod' },
  Node: { model: Node, clientType: 'V1Node' },
  ResourceQuota: { model: ResourceQuota, clientType: 'V1ResourceQuota' },
  LimitRange: { model: LimitRange, clientType: 'V1LimitRange' },
  ServiceAccount: { model: ServiceAccount, clientType: 'V1ServiceAccount' },
  Job: { model: Job, clientType: 'V1Job' },
  Deployment: { model: Deployment, clientType: 'V1Deployment' },
  ReplicaSet: { model: ReplicaSet, clientType: 'V1ReplicaSet' },
  HorizontalPodAutoscaler: { model: HorizontalPodAutoscaler, clientType: 'V2HorizontalPodAutoscaler' },
  NetworkPolicy: { model: NetworkPolicy, clientType: 'V1NetworkPolicy' },
  PriorityClass: { model: PriorityClass, clientType: 'V1PriorityClass' },
  Service: { model: Service, clientType: 'V1Service' },
  Event: { model: Event, clientType: 'CoreV1Event' },
  Lease: { model: Lease, clientType: 'V1Lease' },
  CustomResourceDefinition: { model: CustomResourceDefinition, clientType: 'V1CustomResourceDefinition' },
};

interface AttributeType {
  baseName: string;
  type: string;
}
const clientModels = k8s as unknown as Record<
  string,
  { getAttributeTypeMap?: () => AttributeType[] } | undefined
>;

/** Paths of fields the client-node model of `typeName` does not know, e.g. `spec.template.spec.container`. */
function unknownFields(value: unknown, typeName: string, path: string, out: string[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(typeName);
  if (array) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, array[1]!, `${path}[${i}]`, out));
    return;
  }
  const attributes = clientModels[typeName]?.getAttributeTypeMap?.();
  if (!attributes || typeof value !== 'object' || Array.isArray(value)) return; // primitives, maps, IntOrString: the schema checks them
  for (const [key, child] of Object.entries(value)) {
    const attribute = attributes.find((a) => a.baseName === key);
    const childPath = path ? `${path}.${key}` : key;
    if (!attribute) out.push(childPath);
    else unknownFields(child, attribute.type, childPath, out);
  }
}

/** Every problem with `obj` as one readable string, or undefined when it is valid. */
export function validationErrors(obj: any): string | undefined {
  const entry = MODELS[String(obj?.kind)];
  if (!entry) return `kind ${String(obj?.kind)} is not served by this test API server`;
  const problems: string[] = [];
  try {
    new entry.model(obj).validate();
  } catch (error) {
    problems.push(error instanceof Error ? error.message : String(error));
  }
  const unknown: string[] = [];
  unknownFields(obj, entry.clientType, '', unknown);
  if (unknown.length > 0) problems.push(`unknown field(s): ${unknown.join(', ')}`);
  return problems.length > 0 ? problems.join('; ') : undefined;
}
