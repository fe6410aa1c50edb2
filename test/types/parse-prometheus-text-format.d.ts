declare module 'parse-prometheus-text-format' {
  /** Metric families of a Prometheus text exposition, as the parser reads them. */
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
