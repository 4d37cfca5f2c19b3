import { describe, expect, it } from 'vitest';
import { parseCluster } from '../../src/simulator/cluster.js';
import { CsvError, parseCsvRecords, parseCsvTable } from '../../src/simulator/csv.js';
import { parseJsonDoc, parseYamlDoc } from '../../src/simulator/doc.js';
import { checkQueuesAgainstCluster, parseQueues } from '../../src/simulator/queues.js';
import { parseTrace } from '../../src/simulator/trace.js';

describe('CSV reader', () => {
  it('handles quoted fields with commas, escaped quotes, newlines and CRLF', () => {
    const recs = parseCsvRecords('a,b,c\r\n"x, y","he said ""hi""","multi\nline"\r\n\r\nlast,,\n');
    expect(recs).toEqual([
      { line: 1, fields: ['a', 'b', 'c'] },
      { line: 2, fields: ['x, y', 'he said "hi"', 'multi\nline'] },
      { line: 5, fields: ['last', '', ''] },
    ]);
  });
  it('reports an unterminated quote at the line where it opened', () => {
    expect(() => parseCsvRecords('a,b\n1,2\n3,"oops\n4,5\n', 'f.csv')).toThrow(
      /f\.csv:3: unterminated quoted field/,
    );
  });
  it('rejects a stray quote and text after a closing quote', () => {
    expect(() => parseCsvRecords('a,b\nx"y,1\n', 'f.csv')).toThrow(
      /f\.csv:2: quote inside an unquoted field/,
    );
    expect(() => parseCsvRecords('a,b\n"x"y,1\n', 'f.csv')).toThrow(
      /f\.csv:2: unexpected character after closing quote/,
    );
  });
  it('rejects rows with more fields than the header, and duplicate columns', () => {
    expect(() => parseCsvTable('a,b\n1,2\n1,2,3\n', 't.csv')).toThrow(
      /t\.csv:3: 3 fields but the header has 2/,
    );
    expect(() => parseCsvTable('a,A\n', 't.csv')).toThrow(/t\.csv:1: duplicate column 'a'/);
  });
});

describe('CSV reader on csv-parse', () => {
  it('names the physical line of a syntax error, also after quoted CRLFs and blank lines', () => {
    const text = 'a,b\r\n"x\r\ny",1\r\n\r\n3,4\r\n5,"six"7\r\n';
    expect(() => parseCsvRecords(text, 'f.csv')).toThrow(
      /^f\.csv:6: unexpected character after closing quote$/,
    );
    expect(() => parseCsvRecords('a,b\n"x\ny",1\nq,"open\n\n', 'f.csv')).toThrow(
      /^f\.csv:4: unterminated quoted field$/,
    );
    expect(() => parseCsvRecords('a,b\n"x\ny",1\n"z\nw",x"y\n', 'f.csv')).toThrow(
      /^f\.csv:5: quote inside an unquoted field$/,
    );
  });
  it('takes LF, CRLF and CR line ends in one file, a BOM, and a last row without a line end', () => {
    expect(parseCsvRecords('\ufeffa,b\r\n1,2\n3,"4\r\n5"\r6,7')).toEqual([
      { line: 1, fields: ['a', 'b'] },
      { line: 2, fields: ['1', '2'] },
      { line: 3, fields: ['3', '4\r\n5'] },
      { line: 5, fields: ['6', '7'] },
    ]);
  });
  it('a table error names the line of the row', () => {
    expect(() => parseCsvTable('a,b\n\n"1\n2",2\n1,2,3\n', 't.csv')).toThrow(
      /^t\.csv:5: 3 fields but the header has 2$/,
    );
  });
});

describe('trace parser', () => {
  it('parses relative seconds, defaults pods to 1, ignores unknown columns, sorts by submit time', () => {
    const jobs = parseTrace(
      'submit_time,duration_s,tenant,gpus,colour,pods\n10,60,a,1,red,\n0,30.5,b,0.25,blue,2\n',
    );
    expect(jobs.map((j) => [j.id, j.submitMs, j.durationMs, j.tenant, j.gpus, j.pods])).toEqual([
      ['L3', 0, 30500, 'b', 0.25, 2],
      ['L2', 10000, 60000, 'a', 1, 1],
    ]);
  });
  it('parses ISO-8601 submit times (no zone = UTC) and optional columns', () => {
    const [j] = parseTrace(
      'submit_time,duration_s,tenant,gpus,gpu_type,cpu_milli,memory_mib,priority,id\n2017-09-04 10:30:41,5,t,2,h100,4000,8192,production,job-1\n',
    );
    expect(j).toMatchObject({
      id: 'job-1',
      submitMs: Date.UTC(2017, 8, 4, 10, 30, 41),
      gpuType: 'h100',
      cpuMilli: 4000,
      memoryMib: 8192,
      priority: 'production',
    });
  });
  it.each([
    [
      'submit_time,duration_s,tenant,gpus\n0,10,a,1\nsoon,10,a,1\n',
      /:3: submit_time 'soon' is neither seconds nor an ISO-8601/,
    ],
    ['submit_time,duration_s,tenant,gpus\n0,10,a,1\n1,10,a,1.5\n', /:3: gpus 1.5: must be a whole number/],
    [
      'submit_time,duration_s,tenant,gpus\n0,10,a,0.0005\n',
      /:2: gpus 0.0005: a fractional share must be in steps of 1\/1000/,
    ],
    ['submit_time,duration_s,tenant,gpus\n0,-1,a,1\n', /:2: column 'duration_s': -1 is below the minimum 0/],
    ['submit_time,duration_s,tenant,gpus\n0,10,,1\n', /:2: column 'tenant' is empty/],
    ['submit_time,duration_s,tenant,gpus,pods\n0,10,a,1,0\n', /:2: column 'pods': 0 is below the minimum 1/],
    ['submit_time,duration_s,tenant,gpus,priority\n0,10,a,1,urgent\n', /:2: unknown priority class 'urgent'/],
    [
      'submit_time,duration_s,tenant,gpus\n0,10,a,1\n2017-01-01T00:00:00Z,10,a,1\n',
      /:3: .*mixes ISO-8601 and relative seconds/,
    ],
    ['submit_time,duration_s,tenant\n0,10,a\n', /trace\.csv:1: missing required column\(s\): gpus/],
    ['submit_time,duration_s,tenant,gpus,id\n0,10,a,1,x\n1,10,a,1,x\n', /:3: duplicate job id 'x'/],
  ])('rejects a bad row with its line number (%#)', (text, re) => {
    expect(() => parseTrace(text, 'trace.csv')).toThrow(re);
    expect(() => parseTrace(text, 'trace.csv')).toThrow(CsvError);
  });
});

describe('cluster parser', () => {
  it('expands counted nodes and collects flavors', () => {
    const c = parseCluster(
      'name,pool,gpu_type,gpus,cpu_milli,memory_mib,count,dedicated_tenant\nn,p1,h100,8,64000,512000,2,\nm,p2,l4-ts,1,8000,32000,,acme\n'.replace(
        'l4-ts,1',
        'l4,1',
      ),
    );
    expect(c.nodes.map((n) => n.name)).toEqual(['n-0', 'n-1', 'm']);
    expect(c.nodes[2]).toMatchObject({ pool: 'p2', flavor: 'l4', dedicatedTenant: 'acme' });
    expect(c.flavors.map((f) => [f.name, f.kind])).toEqual([
      ['h100', 'gpu'],
      ['l4', 'gpu'],
    ]);
  });
  it.each([
    [
      'name,gpu_type,gpus,cpu_milli,memory_mib\nn,h100,8,64000,512000\nm,h100,eight,1,1\n',
      /cluster\.csv:3: column 'gpus': 'eight' is not a number/,
    ],
    [
      'name,gpu_type,gpus,cpu_milli,memory_mib\nn,h100,8,64000,512000\nn,h100,8,1,1\n',
      /cluster\.csv:3: duplicate node name 'n'/,
    ],
    [
      'name,gpu_type,gpus,cpu_milli\nn,h100,8,64000\n',
      /cluster\.csv:1: missing required column\(s\): memory_mib/,
    ],
    [
      'name,gpu_type,gpus,cpu_milli,memory_mib,kind\nn,a100,8,1,1,mig\n',
      /cluster\.csv:2: kind 'mig' needs slices_per_gpu/,
    ],
    [
      'name,gpu_type,gpus,cpu_milli,memory_mib,kind\nn,a100,8,1,1,vgpu\n',
      /cluster\.csv:2: kind 'vgpu' must be gpu, mig or timeslice/,
    ],
    [
      'name,gpu_type,gpus,cpu_milli,memory_mib\n\n\nn,h100,-8,1,1\n',
      /cluster\.csv:4: column 'gpus': -8 is below the minimum 0/,
    ],
    ['name,gpu_type,gpus,cpu_milli,memory_mib\n', /cluster\.csv:2: the cluster has no nodes/],
  ])('rejects malformed cluster files with a line number (%#)', (text, re) => {
    expect(() => parseCluster(text, 'cluster.csv')).toThrow(re);
  });
});

describe('config documents', () => {
  it('JSON parser remembers the line of each object and reports syntax errors by line', () => {
    const d = parseJsonDoc('{\n  "a": [\n    {"x": 1},\n    {"y": true}\n  ]\n}');
    const a = (d.root as { a: object[] }).a;
    expect(d.lineOf(a)).toBe(2);
    expect(d.lineOf(a[1])).toBe(4);
    expect(() => parseJsonDoc('{\n "a": 1,\n "b": ,\n}', 'q.json')).toThrow(
      /q\.json:3: unexpected character ','/,
    );
    expect(() => parseJsonDoc('{"a": 1, "a": 2}', 'q.json')).toThrow(/duplicate key "a"/);
  });
  it('YAML subset: nested maps, dash lists of maps, flow collections, comments, quoting', () => {
    const d = parseYamlDoc(
      [
        '# queues',
        'cohorts:',
        '  - name: root',
        'queues:',
        '- name: "team-a"   # quoted',
        '  tenant: a',
        '  weight: 2.5',
        '  quotas:',
        '    h100: {gpu: {nominal: 8, borrowingLimit: 4}}',
        '  tags: [x, "y z", 3]',
        "  note: 'it''s # not a comment'",
        '  off: false',
        '  empty: ~',
      ].join('\n'),
      'q.yaml',
    );
    expect(d.root).toEqual({
      cohorts: [{ name: 'root' }],
      queues: [
        {
          name: 'team-a',
          tenant: 'a',
          weight: 2.5,
          quotas: { h100: { gpu: { nominal: 8, borrowingLimit: 4 } } },
          tags: ['x', 'y z', 3],
          note: "it's # not a comment",
          off: false,
          empty: null,
        },
      ],
    });
    const q = (d.root as { queues: object[] }).queues[0];
    expect(d.lineOf(q)).toBe(5);
  });
  it('YAML subset: clear errors with line numbers', () => {
    expect(() => parseYamlDoc('a:\n\tb: 1\n', 'x.yaml')).toThrow(/x\.yaml:2: tabs are not allowed/);
    // the yaml library flags the value that cannot also open a nested mapping (line 1), not line 2
    expect(() => parseYamlDoc('a: 1\n  b: 2\n', 'x.yaml')).toThrow(
      /x\.yaml:1: nested mappings are not allowed in compact mappings \(column 4\)/,
    );
    expect(() => parseYamlDoc('a: 1\na: 2\n', 'x.yaml')).toThrow(/x\.yaml:2: duplicate key 'a'/);
    expect(() => parseYamlDoc('a: |\n  text\n', 'x.yaml')).toThrow(/x\.yaml:1: block scalars/);
    // the yaml library reports an unclosed flow sequence where it expected the `]` (line 2)
    expect(() => parseYamlDoc('a: [1, 2\n', 'x.yaml')).toThrow(/x\.yaml:2: flow sequence .* end with a \]/);
  });
});

describe('config documents read by the yaml library', () => {
  it('names the line (and column) of a YAML syntax error', () => {
    const text = 'queues:\n  - name: a\n    tenant: a: b\n  - name: b\n';
    expect(() => parseYamlDoc(text, 'q.yaml')).toThrow(
      /^q\.yaml:3: nested mappings are not allowed in compact mappings \(column 13\)$/,
    );
    // unclosed flow mapping: reported where the `}` was due
    expect(() =>
      parseYamlDoc('queues:\n  - name: a\n    quotas: {h100: {gpu: 4}\n  - name: b\n', 'q.yaml'),
    ).toThrow(/^q\.yaml:4: flow map/);
    expect(() => parseYamlDoc('a: 1\n---\nb: 2\n', 'q.yaml')).toThrow(
      /q\.yaml:2: multi-document YAML is not supported/,
    );
    expect(() => parseYamlDoc('a: &x 1\nb: *x\n', 'q.yaml')).toThrow(
      /q\.yaml:1: anchors, aliases and tags are not supported/,
    );
  });
  it('reads YAML 1.2 scalars as before; a plain key is its text; a flow collection may span lines', () => {
    const d = parseYamlDoc(
      'a: 010\nb: +5\nc: .5\nd: 1e3\ne: True\nf: NULL\ng:\n1.0: x\nh: [1,\n  2]\n',
      'x.yaml',
    );
    expect(d.root).toEqual({
      a: 10,
      b: 5,
      c: 0.5,
      d: 1000,
      e: true,
      f: null,
      g: null,
      '1.0': 'x',
      h: [1, 2],
    });
    expect(d.lineOf((d.root as { h: object }).h)).toBe(9);
  });
  it('keeps .json strict JSON, with lines', () => {
    expect(() => parseJsonDoc('{\n "a": 1 # c\n}', 'q.json')).toThrow(
      /q\.json:2: comments are not allowed in JSON/,
    );
    expect(() => parseJsonDoc('{\n "a": [1, 2,]\n}', 'q.json')).toThrow(
      /q\.json:2: unexpected character '\]'/,
    );
    expect(() => parseJsonDoc('{\n a: 1\n}', 'q.json')).toThrow(/q\.json:2: expected a quoted key/);
    expect(() => parseJsonDoc('{\n "a": yes\n}', 'q.json')).toThrow(/q\.json:2: unexpected character 'y'/);
    expect(() => parseJsonDoc('', 'q.json')).toThrow(/q\.json:1: unexpected end of input/);
    expect(parseJsonDoc('{"a": [1.5e3, true, null, "x\\u0041\\/"]}').root).toEqual({
      a: [1500, true, null, 'xA/'],
    });
  });
});

describe('queues file', () => {
  const cluster = parseCluster('name,gpu_type,gpus,cpu_milli,memory_mib\nn,h100,8,64000,512000\n');
  it('accepts shorthand nominal numbers and full limits; YAML and JSON give the same result', () => {
    const json =
      '{"cohorts":[{"name":"c"}],"queues":[{"name":"qa","tenant":"a","cohort":"c","quotas":{"h100":{"gpu":4,"cpu":{"nominal":1000,"borrowingLimit":0}}}}]}';
    const yaml =
      'cohorts:\n  - name: c\nqueues:\n  - name: qa\n    tenant: a\n    cohort: c\n    quotas:\n      h100:\n        gpu: 4\n        cpu: {nominal: 1000, borrowingLimit: 0}\n';
    const a = parseQueues(json, 'q.json');
    const b = parseQueues(yaml, 'q.yaml');
    expect(a.queues[0]!.quotas).toEqual({
      h100: { gpu: { nominal: 4 }, cpu: { nominal: 1000, borrowingLimit: 0 } },
    });
    expect(b.queues).toEqual(a.queues.map((q) => ({ ...q, line: 4 })));
    checkQueuesAgainstCluster(a, cluster);
  });
  it.each([
    [
      '{"queues":[\n{"name":"q","cohort":"nope","quotas":{}}\n]}',
      /q\.json:2: queue 'q': cohort 'nope' is not declared/,
    ],
    ['{"queues":[\n{"name":"q"},\n{"name":"q"}\n]}', /q\.json:3: duplicate queue 'q'/],
    [
      '{"queues":[\n{"name":"q",\n "quotas":{"h100":{"gpu":{"nominal":-1}}}}\n]}',
      /q\.json:3: queues\[0\]\.quotas\.h100\.gpu\.nominal: must be ≥ 0, got -1 \(queue 'q'\)/,
    ],
    [
      '{"queues":[\n{"name":"q","quotas":{"h100":{"gpus":1}}}\n]}',
      /q\.json:2: queues\[0\]\.quotas\.h100: unknown resource 'gpus'/,
    ],
    [
      '{"queues":[\n{"name":"q","queueingStrategy":"LIFO"}\n]}',
      /q\.json:2: queues\[0\]\.queueingStrategy: must be one of StrictFIFO, BestEffortFIFO, got 'LIFO' \(queue 'q'\)/,
    ],
    ['{"queues":[{"name":"q"}], "extra": 1}', /q\.json:1: unknown top-level key 'extra'/],
    [
      '{"cohorts":[\n{"name":"a","parent":"b"},\n{"name":"b","parent":"a"}\n],"queues":[{"name":"q"}]}',
      /q\.json:2: cohort 'a': its parent chain has a cycle/,
    ],
  ])('rejects invalid queues with a line number (%#)', (text, re) => {
    expect(() => parseQueues(text, 'q.json')).toThrow(re);
  });
  it('passes isolation and dedicatedPool through; time windows are refused with a reason', () => {
    const q = parseQueues(
      'queues:\n  - name: q\n    isolation: GUARANTEED\n    dedicatedPool: gpu-a\n',
      'q.yaml',
    );
    expect(q.queues[0]).toMatchObject({ isolation: 'GUARANTEED', dedicatedPool: 'gpu-a' });
    expect(() => parseQueues('queues:\n  - name: q\n    isolation: SHARED\n', 'q.yaml')).toThrow(
      /q\.yaml:2: queues\[0\]\.isolation: must be one of .*, got 'SHARED' \(queue 'q'\)/,
    );
    // time windows are simulated now (test/simulator/time-windows.test.ts)
    expect(
      parseQueues('queues:\n  - name: q\n    timeWindows: []\n', 'q.yaml').queues[0]!.timeWindows,
    ).toEqual([]);
  });
  it('schema errors name the path of the value and the line of the object holding it (JSON and YAML)', () => {
    const yaml =
      'queues:\n  - name: a\n  - name: b\n  - name: c\n    quotas:\n      h100:\n        gpu: {nominal: 4, borrowingLimit: x}\n';
    expect(() => parseQueues(yaml, 'q.yaml')).toThrow(
      /^q\.yaml:7: queues\[2\]\.quotas\.h100\.gpu\.borrowingLimit: must be a number, got 'x' \(queue 'c'\)$/,
    );
    const json =
      '{"queues": [\n {"name": "a"},\n {"name": "b", "quotas": {"h100": {"gpu": {"nominal": 1, "lendingLimit": 2}}}}\n]}';
    expect(() => parseQueues(json, 'q.json')).toThrow(
      /^q\.json:3: queues\[1\]\.quotas\.h100\.gpu\.lendingLimit: 2 exceeds nominal 1 \(queue 'b'\)$/,
    );
    expect(() => parseQueues('cohorts:\n  - {name: c, parent: 5}\nqueues: [{name: a}]\n', 'q.yaml')).toThrow(
      /^q\.yaml:2: cohorts\[0\]\.parent: must be a string, got 5 \(cohort 'c'\)$/,
    );
    expect(() => parseQueues('queues: []\n', 'q.yaml')).toThrow(
      /^q\.yaml:1: queues: must be a non-empty list$/,
    );
    expect(() => parseQueues('queues:\n  - name: a\n    colour: red\n', 'q.yaml')).toThrow(
      /^q\.yaml:2: queues\[0\]: unknown key 'colour' \(known: name, tenant, .*, dedicatedPool\) \(queue 'a'\)$/,
    );
  });
  it('null counts as absent, a number is the nominal, and the result keeps the order of the file', () => {
    const q = parseQueues(
      'cohorts:\n  - {name: c, quotas: null}\nqueues:\n  - name: a\n    tenant: null\n    cohort: c\n    quotas: {h100: {memory: 1, gpu: {nominal: 2, borrowingLimit: null}}}\n    preemption: {borrowWithinCohort: {}}\n',
      'q.yaml',
    );
    expect(JSON.stringify(q)).toBe(
      '{"file":"q.yaml","cohorts":[{"line":2,"name":"c","quotas":{}}],"queues":[{"line":4,"name":"a","tenant":"a","quotas":{"h100":{"memory":{"nominal":1},"gpu":{"nominal":2}}},"cohort":"c","preemption":{"borrowWithinCohort":{"policy":"Never"}}}]}',
    );
  });
  it('rejects flavors the cluster does not have', () => {
    const q = parseQueues('{"queues":[\n{"name":"q","quotas":{"a100":{"gpu":1}}}\n]}', 'q.json');
    expect(() => checkQueuesAgainstCluster(q, cluster)).toThrow(
      /q\.json:2: queue 'q': flavor 'a100' is not in the cluster/,
    );
  });
});
