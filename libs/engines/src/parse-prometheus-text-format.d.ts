// The package ships no types; this is the shape of its output (prom2json-compatible).
declare module 'parse-prometheus-text-format' {
  interface PromSample {
    value?: string;
    labels?: Record<string, string>;
    timestamp_ms?: string;
    buckets?: Record<string, string>;
    quantiles?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  interface PromFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED' | string;
    metrics: PromSample[];
  }
  function parsePrometheusTextFormat(text: string): PromFamily[];
  export = parsePrometheusTextFormat;
}
