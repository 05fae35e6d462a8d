// Emit semconv-only MCP tool spans (no toolwatch attributes) from Node's OpenTelemetry SDK.
//
// usage: node send.js --endpoint http://127.0.0.1:4318/v1/traces --protocol proto|json
//                     [--gzip] [--count 5] [--session s1] [--service node-agent] [--detect]
// --session '' sends no gen_ai.conversation.id (an MCP client over stdio has no session);
// --detect adds Node's process and host detectors to the resource (process.pid, host.name).
// Prints one JSON line per export result and a final summary; exit 1 if an export failed.
'use strict';
const { diag, DiagConsoleLogger, DiagLogLevel, SpanKind, SpanStatusCode, trace } = require('@opentelemetry/api');
const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { detectResources, hostDetector, processDetector, resourceFromAttributes } = require('@opentelemetry/resources');

function args() {
  const a = { endpoint: 'http://127.0.0.1:4318/v1/traces', protocol: 'proto', gzip: false, count: 5,
    session: 'node-session-1', service: 'node-agent' };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i].replace(/^--/, '');
    if (k === 'gzip') a.gzip = true;
    else if (k === 'detect') a.detect = true;
    else a[k] = v[++i];
  }
  a.count = Number(a.count);
  return a;
}

async function main() {
  const a = args();
  // the exporter reports partial_success and HTTP errors through diag
  diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.INFO);
  const mod = a.protocol === 'json'
    ? require('@opentelemetry/exporter-trace-otlp-http')
    : require('@opentelemetry/exporter-trace-otlp-proto');
  const inner = new mod.OTLPTraceExporter({ url: a.endpoint, compression: a.gzip ? 'gzip' : 'none' });
  let failed = 0;
  const exporter = {
    export(spans, done) {
      inner.export(spans, (result) => {
        console.log(JSON.stringify({ exported: spans.length, code: result.code,
          error: result.error ? String(result.error.message || result.error) : null }));
        if (result.code !== 0) failed++;
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush(),
  };
  let resource = resourceFromAttributes({ 'service.name': a.service });
  if (a.detect) {
    const detected = detectResources({ detectors: [processDetector, hostDetector] });
    await detected.waitForAsyncAttributes?.();
    resource = resource.merge(detected);
  }
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(exporter, { maxExportBatchSize: 512 })],
  });
  const tracer = provider.getTracer('node-mcp-client', '0.0.1');
  const tools = ['read_file', 'search', 'write_file'];
  for (let i = 0; i < a.count; i++) {
    const tool = tools[i % tools.length];
    const span = tracer.startSpan(`tools/call ${tool}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool,
        ...(a.session ? { 'gen_ai.conversation.id': a.session } : {}),
        'gen_ai.response.id': `resp-${Math.floor(i / 2)}`,
        'gen_ai.tool.call.id': `call-${i}`,
        'jsonrpc.request.id': String(i + 1),
        'network.transport': 'pipe',
      },
    });
    if (i % 4 === 3) {
      span.setAttribute('error.type', 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
  await provider.forceFlush();
  await provider.shutdown();
  console.log(JSON.stringify({ summary: { spans: a.count, protocol: a.protocol, gzip: a.gzip, failed_exports: failed,
    pid: a.detect ? process.pid : null } }));
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => { console.error(e); process.exit(2); });
