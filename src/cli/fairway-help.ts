// The help texts of the project CLI (src/cli/fairway.ts): the command list and each simulator
// command's options.
import { TENANT_HELP } from './tenant/index.js';

export const MAIN_HELP = `usage: fairway <command> [options]

commands:
  simulate         replay or fill a job trace through the scheduler core and report quality
  convert-philly   convert the Philly trace to the simulator's trace, cluster and queues files
  generate-hetero  write a seeded heterogeneous fill trace, cluster and queues (several GPU models)
  convert-openb    convert an Alibaba GPU trace (openb node and pod lists) to the same fill inputs
  help [command]   show help

${TENANT_HELP}

Run 'fairway <command> --help' for the options of a command.`;

export const SIMULATE_HELP = `usage: fairway simulate --trace FILE --cluster FILE --queues FILE [options]

  --trace FILE         trace CSV (submit_time, duration_s, tenant, gpus, pods, ...)
  --cluster FILE       cluster CSV (name, pool, gpu_type, gpus, cpu_milli, memory_mib, count, ...)
  --queues FILE        queues file, JSON (.json) or YAML subset (.yaml/.yml)
  --policy LIST        comma list of fairway, static, fifo, governed, controller (default: the
                       first three; governed = fairway with the queues' isolation policies,
                       controller = governed with the two-level controller)
  --placement LIST     comma list of best-fit, fragmentation-aware (default: best-fit)
  --mode MODE          replay (default) or fill
  --seed N             seed for fill sampling (default 1)
  --fill-targets LIST  requested-capacity percentages for fill (default 50,80,90,100,130)
  --window END         measurement window end for replay: last-submit (default) or last-finish
  --sla-seconds N      SLA start deadline in seconds (default 60)
  --no-preview         do not call the core's preview at submit (faster; previewAtSubmit stays 'none')
  --eta                sample the core's ETA at submit for jobs left pending and report its error
                       against the actual start (etaAtSubmit; 4-9 times slower on Philly)
  --probes             seeded GPU utilization per job (by --seed) for every run: utilization beside
                       allocation (governed and controller runs always have it)
  --idle-reclaim MODE  on or off (default off): governed and controller runs flag jobs idle for
                       their queue's policy's time and reclaim them as it says
  --controller-window-min N  the controller's window in virtual minutes (default 5)
  --out DIR            output directory for report.json and report.html (default sim-out)
  --name NAME          output file base name (default report)
  --no-tenants         terminal output without the per-tenant tables
  --quiet              no progress display (stderr: a bar on a terminal, else a line every 5 s)
  -h, --help           this help

See docs/simulator.md for the file formats and exact metric definitions.`;

export const PHILLY_HELP = `usage: fairway convert-philly [options]

  --philly-dir DIR     directory with philly-2017-09-10.csv and philly-vc-nodes.csv
                       (default: $FAIRWAY_PHILLY_DIR, else ../shared/traces/philly
                       next to the repository)
  --out DIR            where to write the trace, cluster and queues files (default sim-out/philly)
  --gpus N             cluster size in GPUs, a multiple of 8 (default 768)
  --quota MODE         scaled (default: VC table shares of the cluster) or raw (nodes × 8)
  --fractional P       synthetic variant: each 1-GPU job becomes a share k/10 (k = 1…9) of one GPU
                       with probability P, drawn with --seed (default 0: none)
  --seed N             seed for --fractional (default 1)
  -h, --help           this help`;

export const HETERO_HELP = `usage: fairway generate-hetero [options]

  --seed N             seed of the generator (default 1)
  --scale X            multiplies node and pod counts (default 1: ~1,500 nodes, ~6,200 GPUs, 8,000 pods)
  --out DIR            where to write hetero-{trace,cluster}.csv, hetero-queues.json and the
                       merged (one flavor) variants hetero-*-merged.* (default sim-out/hetero)
  -h, --help           this help

See docs/simulator.md ("Heterogeneous fill generator") for the distributions.`;

export const OPENB_HELP = `usage: fairway convert-openb --node-list FILE --pod-list FILE [options]

  --node-list FILE     node CSV (sn, cpu_milli, memory_mib, gpu, model; no model = CPU-only)
  --pod-list FILE      pod CSV (name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, ...)
  --out DIR            where to write openb-{trace,cluster}.csv, openb-queues.json and the
                       merged variants (default sim-out/openb)
  -h, --help           this help

A gpu_spec naming several models is written without a pin (the trace pins one flavor).`;
