// The parser's output (prom2json's shape): families with their samples, values as strings.
declare module 'parse-prometheus-text-format' {
  interface Sample {
    value?: string;
    labels?: Record<string, string>;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  export default function parsePrometheusTextFormat(
    text: string,
  ): { name: string; help: string; type: string; metrics: Sample[] }[];
}
