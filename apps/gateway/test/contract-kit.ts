/** A response of the gateway seen by a test (the real server's answer, read from a clone). */
export interface RecordedResponse {
  method: string;
  /** Path and query, e.g. `/v1/transactions?limit=5`. */
  path: string;
  status: number;
  contentType: string;
  body: unknown;
  /** The test that made the request. */
  test: string | undefined;
}

type Tap = (input: string | URL | Request, init: RequestInit | undefined, res: Response) => void;
const taps = new Set<Tap>();

/**
 * Shows a response a test got without the global `fetch` (the harness's
 * requests to the handler in process) to the recorders listening.
 */
export function tapResponse(input: string | URL | Request, init: RequestInit | undefined, res: Response): void {
  for (const tap of taps) tap(input, init, res);
}

/**
 * Records every response a test file gets from `origin()` (the gateway
 * under test), through the global `fetch` or in process (the harness's
 * requests, {@link tapResponse}), untouched: the caller reads its own
 * response, the recorder reads a clone.
 */
export function recordResponses(
  origin: () => string | undefined,
  currentTest: () => string | undefined = () => undefined,
): { responses: RecordedResponse[]; stop(): void } {
  const original = globalThis.fetch;
  const responses: RecordedResponse[] = [];
  const tap: Tap = (input, init, res) => {
    const base = origin();
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url, base);
    if (!base || url.origin !== new URL(base).origin) return;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const test = currentTest();
    res
      .clone()
      .text()
      .then((text) => {
        let body: unknown = text;
        try {
          body = text === '' ? undefined : JSON.parse(text);
        } catch {
          // not JSON: kept as text
        }
        responses.push({ method, path: `${url.pathname}${url.search}`, status: res.status, contentType: res.headers.get('content-type') ?? '', body, test });
      })
      .catch(() => undefined);
  };
  taps.add(tap);
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await original(input, init);
    tap(input, init, res);
    return res;
  };
  return {
    responses,
    stop() {
      taps.delete(tap);
      globalThis.fetch = original;
    },
  };
}

type Doc = { paths: Record<string, Record<string, { operationId: string; responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>> };

/** Every object schema that lists its properties gets `additionalProperties: false`: an undocumented field is a violation. */
function closeObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closeObjects);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = closeObjects(v);
  if (out.type === 'object' && out.properties && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

const pathPattern = (template: string) => new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}|\{[^}]+\}/g, '[^/]+')}/?$`);

export interface ContractReport {
  /** `operationId status` of every response checked. */
  checked: Set<string>;
  violations: string[];
  /** Gateway requests no operation of the document describes (method path status). */
  unmatched: string[];
}

/**
 * Validates recorded responses against an OpenAPI 3.1 document with Ajv
 * (JSON Schema 2020-12), objects closed: each response must be one its
 * operation declares, for its status, with a body its schema accepts.
 */
export async function checkResponses(document: unknown, responses: readonly RecordedResponse[]): Promise<ContractReport> {
  const { default: Ajv2020 } = await import('ajv/dist/2020.js');
  const { default: addFormats } = await import('ajv-formats');
  const doc = closeObjects(document) as Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  (addFormats as unknown as (a: unknown) => void)(ajv);
  ajv.addSchema({ ...(doc as object), $id: 'openapi.json' });
  const routes = Object.entries(doc.paths).map(([template, item]) => ({
    template,
    re: pathPattern(template),
    item,
    literals: template.split('/').filter((s) => !s.startsWith('{')).length,
  }));
  const report: ContractReport = { checked: new Set(), violations: [], unmatched: [] };
  const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
  for (const r of responses) {
    const path = r.path.split('?')[0]!;
    const method = r.method.toLowerCase();
    const route = routes.filter((x) => x.re.test(path) && x.item[method]).sort((a, b) => b.literals - a.literals)[0];
    if (!route) {
      report.unmatched.push(`${r.method} ${path} ${r.status}`);
      continue;
    }
    const op = route.item[method]!;
    const where = `${r.method} ${r.path} -> ${r.status} (${op.operationId}${r.test ? `, in "${r.test}"` : ''})`;
    const declared = op.responses[String(r.status)];
    if (!declared) {
      report.violations.push(`${where}: status not declared`);
      continue;
    }
    report.checked.add(`${op.operationId} ${r.status}`);
    if (!declared.content) continue; // a redirect: no body to check
    if (!r.contentType.startsWith('application/json')) {
      report.violations.push(`${where}: content-type ${r.contentType}`);
      continue;
    }
    const validate = ajv.getSchema(`openapi.json#/paths/${esc(route.template)}/${method}/responses/${r.status}/content/${esc('application/json')}/schema`);
    if (!validate) throw new Error(`no schema for ${where}`);
    if (!validate(r.body)) report.violations.push(`${where}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(r.body).slice(0, 300)}`);
  }
  return report;
}
