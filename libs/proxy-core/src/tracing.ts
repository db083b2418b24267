import type { Span, Tracer } from '@opentelemetry/api';
import type { Exchange } from './exchange';

/**
 * OpenTelemetry traces of the proxy: one server span per forwarded request, continued from
 * the client's W3C `traceparent` and passed upstream (so an engine with tracing on joins
 * the trace). Off unless OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
 * is set: then the SDK is not even loaded, and the request path pays one `undefined` check.
 * Everything else comes from the standard OTEL_* variables the SDK reads itself (protocol,
 * headers, service name, resource attributes, sampler, batch settings).
 */
export interface ProxyTracing {
  /** Starts the exchange's span (at the exchange's start) from the client's headers. */
  begin(ex: Exchange): void;
  /** Writes the span's `traceparent` (and `tracestate`) into the upstream request headers. */
  inject(ex: Exchange, headers: Record<string, string>): void;
  /** Ends the exchange's span with what the exchange learnt; no-op for an exchange without one. */
  end(ex: Exchange, strategy: string): void;
  /** Flushes the spans still batched. */
  shutdown(): Promise<void>;
}

/** Whether these variables turn tracing on. */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** OpenTelemetry GenAI operation names of the forwarded routes. */
const OPERATION: Record<string, string> = { '/v1/chat/completions': 'chat', '/v1/completions': 'text_completion', '/v1/embeddings': 'embeddings' };

/**
 * Starts the SDK when the environment asks for traces; undefined when it does not. Only the
 * traces pipeline: the SDK would otherwise start OTLP metric and log exporters of its own.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env, serviceName = 'switchyard-proxy'): Promise<ProxyTracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  const [{ NodeSDK }, api] = await Promise.all([import('@opentelemetry/sdk-node'), import('@opentelemetry/api')]);
  const sdk = new NodeSDK({ serviceName: env.OTEL_SERVICE_NAME ? undefined : serviceName, metricReaders: [], logRecordProcessors: [], instrumentations: [] });
  sdk.start();
  const tracer: Tracer = api.trace.getTracer('switchyard-proxy');
  const spans = new WeakMap<Exchange, Span>();
  const headerGetter = {
    keys: (carrier: Exchange['req']['headers']) => Object.keys(carrier),
    get: (carrier: Exchange['req']['headers'], key: string) => carrier[key],
  };
  return {
    begin(ex) {
      const parent = api.propagation.extract(api.ROOT_CONTEXT, ex.req.headers, headerGetter);
      const span = tracer.startSpan(`${ex.req.method ?? 'POST'} ${ex.route ?? ''}`.trim(), { kind: api.SpanKind.SERVER, startTime: ex.startedAt, attributes: { 'http.request.method': ex.req.method ?? 'POST', 'http.route': ex.route ?? '', 'client.address': ex.req.socket.remoteAddress ?? '' } }, parent);
      spans.set(ex, span);
    },
    inject(ex, headers) {
      const span = spans.get(ex);
      if (span) api.propagation.inject(api.trace.setSpan(api.ROOT_CONTEXT, span), headers);
    },
    end(ex, strategy) {
      const span = spans.get(ex);
      if (!span) return;
      spans.delete(ex);
      const status = ex.status;
      span.setAttributes({
        'http.response.status_code': status,
        'switchyard.strategy': strategy,
        'switchyard.attempts': ex.attempts,
        'switchyard.queue_wait_ms': ex.queueWaitMs,
        'switchyard.complete': ex.complete,
      });
      if (ex.route && OPERATION[ex.route]) span.setAttribute('gen_ai.operation.name', OPERATION[ex.route]);
      if (ex.model !== null) span.setAttribute('gen_ai.request.model', ex.model);
      if (ex.instanceId !== null) span.setAttribute('switchyard.instance_id', ex.instanceId);
      if (ex.usage) span.setAttributes({ 'gen_ai.usage.input_tokens': ex.usage.prompt_tokens, 'gen_ai.usage.output_tokens': ex.usage.completion_tokens });
      if (ex.firstTokenAt !== null) span.setAttribute('switchyard.time_to_first_token_ms', ex.firstTokenAt - ex.startedAt);
      // HTTP semantic conventions: a server span is an error on 5xx only; 499 (client gone) is the client's doing.
      if (status >= 500 && status !== 499) span.setStatus({ code: api.SpanStatusCode.ERROR });
      span.end();
    },
    shutdown: () => sdk.shutdown(),
  };
}
