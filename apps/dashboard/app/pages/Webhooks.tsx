import './webhooks.css';
import { useState, type FormEvent } from 'react';
import type { GatewayWebhook, GatewayWebhookDelivery, GatewayWebhookEventType } from '@farebox/client/gateway';
import { errorMessage, gw } from '../gateway.js';
import { formatDate } from '../format.js';
import { Badge, CopyButton, Empty, ErrorBox, Loading, useLoad } from '../ui.js';

/** The events an endpoint may subscribe to, in the words of the form. */
const EVENTS: Array<{ type: GatewayWebhookEventType; label: string }> = [
  { type: 'topup.completed', label: 'A top-up is credited' },
  { type: 'settlement.released', label: 'A settlement paid you out' },
  { type: 'settlement.failed', label: 'A settlement failed' },
  { type: 'dispute.opened', label: 'A dispute was opened' },
  { type: 'dispute.resolved', label: 'A dispute was resolved' },
  { type: 'service.health_changed', label: "A service's health changed" },
  { type: 'budget.threshold_reached', label: 'A key or app used 80 % of its spending limit' },
];

/**
 * Signed webhooks (docs/webhooks.md): the account's endpoints, the secret
 * shown once at creation and rotation, a test ping, the delivery log and
 * redelivery.
 */
export function WebhooksPage() {
  const hooks = useLoad(() => gw.webhooks.list());
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<GatewayWebhookEventType[]>(['topup.completed']);
  const [secret, setSecret] = useState<{ id: string; url: string; secret: string; rotated: boolean }>();
  const [error, setError] = useState<string>();
  const [rowError, setRowError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [open, setOpen] = useState<string>();

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setSecret(undefined);
    setBusy(true);
    try {
      const w = await gw.webhooks.create(url.trim(), events);
      setSecret({ id: w.id, url: w.url, secret: w.secret, rotated: false });
      setUrl('');
      hooks.reload();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const act = async (what: () => Promise<unknown>) => {
    setRowError(undefined);
    try {
      await what();
      hooks.reload();
    } catch (err) {
      setRowError(errorMessage(err));
    }
  };
  const rotate = (w: GatewayWebhook) =>
    act(async () => {
      if (!window.confirm(`Replace the signing secret of ${w.url}? Deliveries are signed with the new one from now on.`)) return;
      const r = await gw.webhooks.rotateSecret(w.id);
      setSecret({ id: r.id, url: r.url, secret: r.secret, rotated: true });
    });
  const remove = (w: GatewayWebhook) =>
    act(async () => {
      if (!window.confirm(`Delete the webhook ${w.url}? Nothing more is sent to it.`)) return;
      await gw.webhooks.remove(w.id);
      if (open === w.id) setOpen(undefined);
    });
  const ping = (w: GatewayWebhook) =>
    act(async () => {
      await gw.webhooks.ping(w.id);
      setOpen(w.id);
    });
  const toggle = (type: GatewayWebhookEventType, on: boolean) => setEvents((list) => (on ? [...list, type] : list.filter((t) => t !== type)));

  return (
    <section aria-labelledby="hooks-title">
      <h1 id="hooks-title">Webhooks</h1>
      <section className="card" aria-labelledby="hooks-new">
        <h2 id="hooks-new">Add an endpoint</h2>
        <p className="muted">
          The gateway POSTs each event to your URL (https), signed in the <code>Farebox-Signature</code> header: check it with <code>verifyWebhook</code> from{' '}
          <code>@farebox/provider</code> or <code>@farebox/client</code>. Failed deliveries are retried for a day.
        </p>
        <form onSubmit={create} className="inline-form" noValidate>
          <label htmlFor="hook-url">Endpoint URL</label>
          <div className="row">
            <input id="hook-url" type="url" placeholder="https://example.com/farebox-webhooks" value={url} onChange={(e) => setUrl(e.target.value)} />
            <button type="submit" disabled={busy}>
              {busy ? 'Adding…' : 'Add endpoint'}
            </button>
          </div>
          <fieldset className="hook-events">
            <legend>Events</legend>
            {EVENTS.map((ev) => (
              <label key={ev.type} className="check">
                <input type="checkbox" checked={events.includes(ev.type)} onChange={(e) => toggle(ev.type, e.target.checked)} data-event={ev.type} /> {ev.label}{' '}
                <code className="muted">{ev.type}</code>
              </label>
            ))}
          </fieldset>
          <ErrorBox error={error} />
        </form>
        {secret ? (
          <div className="secret" role="status" aria-labelledby="hook-secret-title">
            <p id="hook-secret-title">
              <strong>
                {secret.rotated ? 'New signing secret' : 'Signing secret'} for {secret.url}.
              </strong>{' '}
              Copy it now: it is shown only this once.
            </p>
            <div className="address-row">
              <code className="address" data-testid="hook-secret">
                {secret.secret}
              </code>
              <CopyButton text={secret.secret} label="Copy secret" />
            </div>
            <button type="button" className="link" onClick={() => setSecret(undefined)}>
              I have saved it, hide the secret
            </button>
          </div>
        ) : null}
      </section>

      <section className="card" aria-labelledby="hooks-list">
        <h2 id="hooks-list">Endpoints</h2>
        <ErrorBox title="Could not do that" error={rowError} />
        <ErrorBox title="Webhooks unavailable" error={hooks.error} />
        {hooks.loading && !hooks.data ? <Loading label="Loading webhooks…" /> : null}
        {hooks.data && hooks.data.length === 0 ? <Empty>No webhook endpoints yet.</Empty> : null}
        {hooks.data && hooks.data.length > 0 ? (
          <ul className="conn-list">
            {hooks.data.map((w) => (
              <li key={w.id} className="conn" data-testid="hook">
                <div className="conn-head">
                  <strong className="clip" title={w.url}>
                    <bdi>{w.url}</bdi>
                  </strong>
                  <span className="row">
                    <button type="button" className="small" onClick={() => setOpen(open === w.id ? undefined : w.id)} aria-expanded={open === w.id}>
                      Deliveries
                    </button>
                    <button type="button" className="small" onClick={() => ping(w)} aria-label={`Send a test event to ${w.url}`}>
                      Ping
                    </button>
                    <button type="button" className="small" onClick={() => rotate(w)} aria-label={`Rotate the secret of ${w.url}`}>
                      Rotate secret
                    </button>
                    <button type="button" className="danger small" onClick={() => remove(w)} aria-label={`Delete the webhook ${w.url}`}>
                      Delete
                    </button>
                  </span>
                </div>
                <div className="muted small-text">
                  {w.events.join(', ')} · secret <code>{w.secret_prefix}…</code> · added {formatDate(w.created_at)}
                  {w.previous_secret_expires_at ? ` · the previous secret signs too until ${formatDate(w.previous_secret_expires_at)}` : ''}
                </div>
                {open === w.id ? <Deliveries hook={w} /> : null}
              </li>
            ))}
          </ul>
        ) : null}
      </section>
    </section>
  );
}

function lastAttempt(d: GatewayWebhookDelivery): string {
  const a = d.log[d.log.length - 1];
  if (!a) return d.state === 'pending' ? 'not sent yet' : '—';
  return a.error ?? `answered ${a.status}`;
}

/** One endpoint's delivery log, newest first, with redelivery. */
function Deliveries({ hook }: { hook: GatewayWebhook }) {
  const list = useLoad(() => gw.webhooks.deliveries(hook.id, { limit: 20 }), [hook.id]);
  const [error, setError] = useState<string>();
  const redeliver = async (d: GatewayWebhookDelivery) => {
    setError(undefined);
    try {
      await gw.webhooks.redeliver(hook.id, d.id);
      list.reload();
    } catch (err) {
      setError(errorMessage(err));
    }
  };
  return (
    <div className="hook-deliveries">
      <div className="row">
        <h3>Deliveries</h3>
        <button type="button" className="secondary small" onClick={() => list.reload()}>
          Refresh
        </button>
      </div>
      <ErrorBox title="Could not redeliver" error={error} />
      <ErrorBox title="Deliveries unavailable" error={list.error} />
      {list.loading && !list.data ? <Loading label="Loading deliveries…" /> : null}
      {list.data && list.data.length === 0 ? <Empty>Nothing sent to this endpoint yet.</Empty> : null}
      {list.data && list.data.length > 0 ? (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Deliveries to {hook.url}</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">State</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last attempt</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((d) => (
                <tr key={d.id} data-testid="delivery">
                  <td data-label="Event">
                    <code>{d.event_type}</code>
                  </td>
                  <td data-label="State">
                    <Badge status={d.state} />
                    {d.state === 'pending' && d.next_attempt_at ? <span className="muted small-text"> next {formatDate(d.next_attempt_at)}</span> : null}
                  </td>
                  <td data-label="Attempts">{d.attempts}</td>
                  <td data-label="Last attempt" className="clip" title={lastAttempt(d)}>
                    <span>{lastAttempt(d)}</span>
                  </td>
                  <td data-label="Created">{formatDate(d.created_at)}</td>
                  <td className="actions">
                    <button type="button" className="small" onClick={() => redeliver(d)} aria-label={`Send ${d.event_type} ${d.event_id} again`}>
                      Redeliver
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}
