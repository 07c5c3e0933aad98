import { useEffect, useRef, useState, type FormEvent } from 'react';
import { errorMessage, gw, GatewayApiError, newIdempotencyKey, type CallResult, type Service, type ServiceManifest, type TraceStep } from '../gateway.js';
import { formatDate, formatUsd, parsePayload, plural, shorten } from '../format.js';
import { Link } from '../router.js';
import { Empty, ErrorBox, ExplorerLink, Loading, Stat, Units, useLoad } from '../ui.js';
import { Timeline } from '../Timeline.js';
import { HealthBadge, HealthChart } from '../HealthChart.js';

function queryFromUrl(): string {
  return new URLSearchParams(window.location.search).get('q') ?? '';
}

export function CatalogPage() {
  const [draft, setDraft] = useState(queryFromUrl);
  const [q, setQ] = useState(queryFromUrl);
  const list = useLoad(() => (q.trim() ? gw.agents.search(q.trim()) : gw.agents.list()), [q]);

  const search = (e: FormEvent) => {
    e.preventDefault();
    setQ(draft);
    const url = draft.trim() ? `/catalog?q=${encodeURIComponent(draft.trim())}` : '/catalog';
    window.history.replaceState(null, '', url);
  };

  return (
    <section aria-labelledby="catalog-title">
      <h1 id="catalog-title">Catalog</h1>
      {/* biome-ignore lint/a11y/useSemanticElements: the <search> element is too new for the browsers the dashboard supports; role="search" on the form says the same */}
      <form role="search" onSubmit={search} className="search">
        <label htmlFor="catalog-q" className="visually-hidden">
          Search services
        </label>
        <input
          id="catalog-q"
          type="search"
          placeholder="Search services in any language, e.g. “count words”"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
        />
        <button type="submit">Search</button>
      </form>
      {/* The ranking that really served this search, as the gateway says it (search_mode); nothing is claimed without results. */}
      <p className="hint" data-testid="search-mode">
        {list.data?.[0]?.search_mode === 'hybrid'
          ? 'Hybrid search: keywords (BM25) and meaning (multilingual embeddings).'
          : list.data?.[0]?.search_mode === 'keyword'
            ? 'Keyword search (BM25) only: the gateway has no embedding model loaded, so services described in other words or languages are not found.'
            : 'Search by keywords (BM25), and by meaning in any language when the gateway has its embedding model.'}
      </p>
      <ErrorBox title="Search failed" error={list.error} />
      {list.loading && !list.data ? <Loading label="Searching…" /> : null}
      {list.data && list.data.length === 0 ? (
        <Empty>{q.trim() ? `No service matches “${q.trim()}”.` : 'The catalog is empty: no service is registered yet.'}</Empty>
      ) : null}
      {list.data && list.data.length > 0 ? (
        <ul className="services" aria-label={q.trim() ? `Results for ${q.trim()}` : 'All services'}>
          {list.data.map((s) => (
            <li key={s.service} className="card service-card">
              <div className="service-head">
                <h2>
                  <Link href={`/catalog/${encodeURIComponent(s.service)}`}>{s.service}</Link>
                </h2>
                <span className="price">{formatUsd(s.pricePerCall)} / call</span>
              </div>
              <HealthBadge health={s.health} />
              <p className="desc">{s.description || <span className="muted">No description.</span>}</p>
              <div className="muted small-text">
                {plural(s.totalCalls, 'call')} · by <code title={s.ownerWallet}>{shorten(s.ownerWallet)}</code>
                {s.score !== undefined ? ` · relevance ${s.score}` : ''}
              </div>
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}

export function ServicePage({ name }: { name: string }) {
  const svc = useLoad(async () => {
    try {
      return await gw.agents.get(name);
    } catch (err) {
      if (err instanceof GatewayApiError && err.status === 404) return null;
      throw err;
    }
  }, [name]);
  const [period, setPeriod] = useState<'24h' | '7d'>('24h');
  const series = useLoad(() => gw.agents.health(name, { window: period }), [name, period]);
  // The service's own `/manifest` (through the gateway) says whether its price is flat or dynamic.
  const manifest = useLoad(() => gw.agents.manifest(name), [name]);
  const dynamic = manifest.data?.dynamic_pricing;

  return (
    <section aria-labelledby="svc-title">
      <p className="crumbs">
        <Link href="/catalog">← Catalog</Link>
      </p>
      <h1 id="svc-title">{name}</h1>
      <ErrorBox title="Service unavailable" error={svc.error} />
      {svc.loading && !svc.data ? <Loading label="Loading service…" /> : null}
      {svc.data === null ? <Empty>No service named “{name}” is registered.</Empty> : null}
      {svc.data ? (
        <>
          <div className="card">
            <p className="desc">{svc.data.description || <span className="muted">No description.</span>}</p>
            <div className="stats">
              <Stat label="Price per call" hint={priceHint(dynamic)}>
                <span data-testid="service-price">{formatUsd(svc.data.pricePerCall)}</span>
              </Stat>
              <Stat label="Calls">{svc.data.totalCalls.toLocaleString('en-US')}</Stat>
              <Stat label="Earned by its publisher">{formatUsd(svc.data.totalEarned)}</Stat>
            </div>
            <dl className="facts">
              <dt>Endpoint</dt>
              <dd>
                <code>{svc.data.endpoint}</code>
              </dd>
              <dt>Owner</dt>
              <dd>
                <code>{svc.data.ownerWallet}</code>
              </dd>
              <dt>Registered</dt>
              <dd>{formatDate(svc.data.createdAt)}</dd>
            </dl>
            <PricingNote manifest={manifest} />
          </div>
          <section className="card" aria-labelledby="health-heading">
            <h2 id="health-heading">
              Health <HealthBadge health={svc.data.health} />
            </h2>
            <p className="hint">How it answered the paid calls the gateway relayed (its owner's own calls are not counted).</p>
            <div className="stats">
              {(['1h', '24h', '7d'] as const).map((w) => (
                <Stat key={w} label={`Last ${w === '1h' ? 'hour' : w === '24h' ? '24 hours' : '7 days'}`}>
                  <span data-testid={`health-${w}`}>
                    {svc.data!.health.windows[w].calls === 0
                      ? 'no calls'
                      : `${svc.data!.health.windows[w].calls} calls · ${Math.floor((svc.data!.health.windows[w].success_rate ?? 0) * 1000) / 10} % · p50 ${svc.data!.health.windows[w].p50_ms} ms · p95 ${svc.data!.health.windows[w].p95_ms} ms`}
                  </span>
                </Stat>
              ))}
            </div>
            {svc.data.health.last_failure ? (
              <p className="muted small-text">
                Last failure {formatDate(svc.data.health.last_failure.at)}: {svc.data.health.last_failure.reason}
              </p>
            ) : null}
            <div className="row">
              <button type="button" className="small" aria-pressed={period === '24h'} onClick={() => setPeriod('24h')}>
                24 hours
              </button>
              <button type="button" className="small" aria-pressed={period === '7d'} onClick={() => setPeriod('7d')}>
                7 days
              </button>
            </div>
            <ErrorBox title="Chart unavailable" error={series.error} />
            {series.data ? <HealthChart series={series.data} /> : null}
          </section>
          <TryIt service={svc.data} onCalled={svc.reload} dynamic={dynamic} />
        </>
      ) : null}
    </section>
  );
}

/** Under the price: flat or dynamic, as the service's manifest says (only "USDC" until it is read). */
function priceHint(dynamic: boolean | undefined): string {
  if (dynamic === undefined) return 'USDC';
  return dynamic ? 'USDC, the floor: dynamic pricing, some payloads cost more' : 'USDC, flat: every call costs this';
}

/** What the service itself says about its price (its `/manifest`, read by the gateway). */
function PricingNote({ manifest }: { manifest: { data?: ServiceManifest; error?: string } }) {
  if (manifest.error) return <p className="muted">The service's own description of its price could not be read ({manifest.error}).</p>;
  if (!manifest.data) return null;
  const { pricing_note: note, dynamic_pricing: dynamic } = manifest.data;
  if (!note && !dynamic) return null;
  return (
    <p className="pricing-note" data-testid="pricing-note">
      <strong>{dynamic ? 'Dynamic price' : 'Pricing'}:</strong>{' '}
      {note ?? 'the service may quote more than the floor price for some payloads; you are asked before paying more.'}
    </p>
  );
}

function TryIt({ service, onCalled, dynamic }: { service: Service; onCalled: () => void; dynamic: boolean | undefined }) {
  const [payload, setPayload] = useState('{\n  "text": "hello"\n}');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [failedTrace, setFailedTrace] = useState<TraceStep[]>();
  const [result, setResult] = useState<CallResult>();
  // One Idempotency-Key per call: a call that got no answer keeps its key, so pressing the button again for it cannot pay twice.
  const unanswered = useRef<{ what: string; key: string }>(undefined);

  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when another service is picked, to clear the last one's answer
  useEffect(() => {
    setResult(undefined);
    setError(undefined);
  }, [service.service]);

  const call = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setFailedTrace(undefined);
    setResult(undefined);
    const parsed = parsePayload(payload);
    if ('error' in parsed) return setError(parsed.error);
    setBusy(true);
    try {
      const what = JSON.stringify([service.service, parsed.payload]);
      const key = unanswered.current?.what === what ? unanswered.current.key : newIdempotencyKey();
      unanswered.current = { what, key };
      const r = await gw.call(service.service, parsed.payload, { idempotencyKey: key });
      unanswered.current = undefined;
      setResult(r);
      onCalled();
    } catch (err) {
      setError(errorMessage(err));
      // An answer (other than "still in progress") settles the call; the next press is a new one.
      if (err instanceof GatewayApiError && err.status !== 409) unanswered.current = undefined;
      if (err instanceof GatewayApiError && err.body && typeof err.body === 'object') {
        const steps = (err.body as { trace?: { steps?: TraceStep[] } }).trace?.steps;
        if (Array.isArray(steps)) setFailedTrace(steps);
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="try-title">
      <h2 id="try-title">Try it</h2>
      <p className="muted">
        Makes a real paid call of {dynamic === false ? '' : 'at least '}
        {formatUsd(service.pricePerCall)}, paid from your credits first. If the service fails, you are refunded.
      </p>
      <form onSubmit={call}>
        <label htmlFor="try-payload">Payload (JSON object)</label>
        <textarea id="try-payload" rows={6} spellCheck={false} className="mono" value={payload} onChange={(e) => setPayload(e.target.value)} />
        <button type="submit" disabled={busy}>
          {busy ? 'Calling…' : `Call ${service.service}`}
        </button>
      </form>
      <ErrorBox title="The call failed" error={error} />
      {failedTrace ? <Timeline steps={failedTrace} /> : null}
      {result ? (
        <div className="call-result" aria-live="polite">
          <h3>Result</h3>
          <pre className="json" data-testid="call-result">
            {JSON.stringify(result.result, null, 2)}
          </pre>
          <div className="stats">
            <Stat label="Cost">
              <span data-testid="call-cost">
                <Units units={result.cost.lamports} />
              </span>
            </Stat>
            <Stat label="Paid with">{result.paidWith === 'credit' ? 'Credits' : 'Wallet'}</Stat>
            <Stat label="New balance">
              <Units units={result.newBalance.lamports} />
            </Stat>
          </div>
          <p className="small-text muted">
            Mode: {result.mode}
            {result.explorerUrl ? (
              <>
                {' · '}
                <ExplorerLink href={result.explorerUrl} />
              </>
            ) : null}
          </p>
          {result.trace?.steps ? (
            <>
              <h3>Payment trace</h3>
              <Timeline steps={result.trace.steps} />
            </>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}
