import { describe, expect, it } from 'vitest';
import {
  type ContainerReferences,
  effectiveBoundaries,
  entriesOutside,
  firstViolation,
  normaliseList,
  parseImage,
  parseLocation,
  parseRegistryEntry,
} from '../../../src/services/tenancy/data-boundaries.js';

const image = (ref: string) => {
  const parsed = parseImage(ref);
  return parsed.ok ? parsed.value.text : `invalid: ${parsed.problem}`;
};
const location = (ref: string) => {
  const parsed = parseLocation(ref);
  return parsed.ok ? parsed.value.text : 'invalid';
};
const refs = (
  image: string,
  datasetLocations: string[] = [],
  artifactStore: string | null = null,
): ContainerReferences => ({ image, datasetLocations, artifactStore });
const images = (list: string[] | null) => ({
  imageRegistries: list,
  datasetLocations: null,
  artifactStores: null,
});

describe('image references are normalised the Docker way', () => {
  it.each([
    ['ubuntu', 'docker.io/library/ubuntu'],
    ['ubuntu:22.04', 'docker.io/library/ubuntu'],
    ['pytorch/pytorch:2.3.0-cuda12.1', 'docker.io/pytorch/pytorch'],
    ['docker.io/ubuntu', 'docker.io/library/ubuntu'],
    ['index.docker.io/library/ubuntu', 'docker.io/library/ubuntu'],
    ['nvcr.io/nvidia/pytorch:24.01-py3', 'nvcr.io/nvidia/pytorch'],
    ['Registry.Example.COM/team/img', 'registry.example.com/team/img'],
    ['localhost:5000/x:1', 'localhost:5000/x'],
    ['localhost/x', 'localhost/x'],
    // Docker reads an upper-case first segment as a registry host.
    ['UPPER/case', 'upper/case'],
    [`nvcr.io/nvidia/pytorch@sha256:${'a'.repeat(64)}`, 'nvcr.io/nvidia/pytorch'],
    [`nvcr.io/nvidia/pytorch:24.01@sha256:${'b'.repeat(64)}`, 'nvcr.io/nvidia/pytorch'],
  ])('%s → %s', (ref, expected) => {
    expect(image(ref)).toBe(expected);
  });

  it.each([
    '',
    'team/UPPER',
    'Upper',
    'a//b',
    'registry.example.com/../x',
    'img:bad tag',
    'img@sha256:short',
    'nvcr.io/nvidia/Py',
    'x/y%2fz',
    ' ubuntu',
    'a'.repeat(513),
  ])('refuses %j', (ref) => {
    expect(image(ref)).toMatch(/^invalid/);
  });
});

describe('registry entries match at a path boundary', () => {
  const allow = (entry: string, ref: string) => firstViolation(refs(ref), images([entry])) === null;

  it('a registry host admits its images and nothing that merely starts with the same letters', () => {
    expect(allow('registry.example.com', 'registry.example.com/team/x:1')).toBe(true);
    expect(allow('registry.example.com', 'registry.example.com.evil.io/x')).toBe(false);
    expect(allow('registry.example.com', 'registry.example.comx/y')).toBe(false);
    expect(allow('registry.example.com', 'registry.example.com:5000/x')).toBe(false);
    expect(allow('registry.example.com', 'evil.io/registry.example.com/x')).toBe(false);
  });

  it('a path entry admits its repositories only', () => {
    expect(allow('nvcr.io/nvidia', 'nvcr.io/nvidia/pytorch:24.01-py3')).toBe(true);
    expect(allow('nvcr.io/nvidia', 'nvcr.io/nvidia-evil/pytorch')).toBe(false);
    expect(allow('nvcr.io/nvidia', 'nvcr.io/other/pytorch')).toBe(false);
    expect(allow('nvcr.io/nvidia/', 'nvcr.io/nvidia/pytorch')).toBe(true);
  });

  it('Docker Hub short names resolve before matching', () => {
    expect(allow('docker.io/library', 'ubuntu')).toBe(true);
    expect(allow('docker.io/library', 'pytorch/pytorch')).toBe(false);
    expect(allow('docker.io', 'pytorch/pytorch')).toBe(true);
    expect(allow('index.docker.io', 'ubuntu')).toBe(true);
    expect(allow('nvcr.io', 'ubuntu')).toBe(false);
  });

  it('entries need a registry host and no tag or digest', () => {
    expect(parseRegistryEntry('myorg').ok).toBe(false);
    expect(parseRegistryEntry('nvcr.io/nvidia/pytorch:24.01').ok).toBe(false);
    expect(parseRegistryEntry(`nvcr.io/x@sha256:${'a'.repeat(64)}`).ok).toBe(false);
    expect(parseRegistryEntry('').ok).toBe(false);
    expect(
      normaliseList(['NVCR.io/nvidia/', 'nvcr.io/nvidia', 'index.docker.io/library'], 'imageRegistries'),
    ).toEqual({ ok: true, list: ['nvcr.io/nvidia', 'docker.io/library'] });
  });

  it('null is unrestricted, [] allows nothing', () => {
    expect(firstViolation(refs('anything.example/x'), images(null))).toBeNull();
    expect(firstViolation(refs('ubuntu'), images([]))).toMatchObject({
      kind: 'imageRegistries',
      reference: 'ubuntu',
      allowed: [],
    });
    expect(firstViolation(refs('ubuntu'), null)).toBeNull();
  });

  it('a malformed image is a violation even when unrestricted', () => {
    expect(firstViolation(refs('Not An Image'), null)).toMatchObject({
      kind: 'imageRegistries',
      allowed: null,
    });
  });
});

describe('data locations are URIs matched by scheme and path prefix', () => {
  it.each([
    ['s3://bucket/data/', 's3://bucket/data'],
    ['S3://Bucket/Data', 's3://bucket/Data'],
    ['gs://b', 'gs://b'],
    ['pvc://claim/dir/sub', 'pvc://claim/dir/sub'],
    ['nfs://server.example/export/x', 'nfs://server.example/export/x'],
    ['https://host.example:8443/models', 'https://host.example:8443/models'],
  ])('%s → %s', (ref, expected) => {
    expect(location(ref)).toBe(expected);
  });

  it.each([
    '/data/x',
    'data/x',
    '../x',
    's3:/bucket/x',
    's3://',
    's3:///x',
    's3://bucket/data/../secrets',
    's3://bucket/./data',
    's3://bucket//data',
    's3://bucket/data%2F..%2Fsecrets',
    's3://bucket/%2e%2e/x',
    'https://allowed.example@evil.example/x',
    'https://host/x?y=1',
    'https://host/x#frag',
    's3://bucket/with space',
    's3://bucket/back\\slash',
    'file:///etc/passwd',
  ])('refuses %j', (ref) => {
    expect(location(ref)).toBe('invalid');
  });

  const datasets = (list: string[] | null) => ({
    imageRegistries: null,
    datasetLocations: list,
    artifactStores: null,
  });
  const allow = (entry: string, ref: string) =>
    firstViolation(refs('ubuntu', [ref]), datasets([entry])) === null;

  it('a prefix admits what lies below it at a "/" boundary', () => {
    expect(allow('s3://aurora-datasets', 's3://aurora-datasets/imagenet')).toBe(true);
    expect(allow('s3://aurora-datasets', 's3://aurora-datasets')).toBe(true);
    expect(allow('s3://aurora-datasets', 's3://aurora-datasets-private/x')).toBe(false);
    expect(allow('s3://aurora-datasets/public', 's3://aurora-datasets/public-not/x')).toBe(false);
    expect(allow('s3://aurora-datasets/public', 's3://aurora-datasets/public/../private')).toBe(false);
    expect(allow('s3://aurora-datasets', 'gs://aurora-datasets/x')).toBe(false);
    expect(allow('https://data.example', 'https://data.example.evil.io/x')).toBe(false);
    expect(allow('https://data.example', 'http://data.example/x')).toBe(false);
  });

  it('the artifact store is checked against its own list', () => {
    const b = { imageRegistries: null, datasetLocations: null, artifactStores: ['s3://aurora-models'] };
    expect(firstViolation(refs('ubuntu', ['s3://anything/x'], 's3://aurora-models/run-1'), b)).toBeNull();
    expect(firstViolation(refs('ubuntu', [], 's3://aurora-datasets/run-1'), b)).toMatchObject({
      kind: 'artifactStores',
      reference: 's3://aurora-datasets/run-1',
      allowed: ['s3://aurora-models'],
    });
    expect(firstViolation(refs('ubuntu', [], null), { ...b, artifactStores: [] })).toBeNull();
  });
});

describe('project lists within the tenant’s', () => {
  it('entries outside the tenant list are named', () => {
    expect(
      entriesOutside(['nvcr.io/nvidia/pytorch', 'docker.io/library'], ['nvcr.io/nvidia'], 'imageRegistries'),
    ).toEqual(['docker.io/library']);
    expect(entriesOutside(['s3://a/x', 's3://ab'], ['s3://a'], 'datasetLocations')).toEqual(['s3://ab']);
    expect(entriesOutside(['s3://a'], null, 'datasetLocations')).toEqual([]);
    expect(entriesOutside(null, ['s3://a'], 'datasetLocations')).toEqual([]);
    expect(entriesOutside(['s3://a'], [], 'datasetLocations')).toEqual(['s3://a']);
  });

  it('the effective list is the intersection', () => {
    const tenant = {
      imageRegistries: ['nvcr.io/nvidia', 'registry.a.example'],
      datasetLocations: ['s3://data/team'],
      artifactStores: null,
    };
    const project = {
      imageRegistries: ['nvcr.io/nvidia/pytorch'],
      datasetLocations: ['s3://data'],
      artifactStores: null,
    };
    expect(effectiveBoundaries(tenant, project)).toEqual({
      imageRegistries: ['nvcr.io/nvidia/pytorch'],
      datasetLocations: ['s3://data/team'],
      artifactStores: null,
    });
    expect(effectiveBoundaries(tenant, null)).toEqual(tenant);
    expect(effectiveBoundaries(null, project)).toEqual(project);
    expect(effectiveBoundaries({ ...tenant, imageRegistries: [] }, project).imageRegistries).toEqual([]);
  });
});
