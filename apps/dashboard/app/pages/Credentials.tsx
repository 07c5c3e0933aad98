import { useState, type FormEvent } from 'react';
import { errorMessage, gw, type ApiKey, type OAuthConnection } from '../gateway.js';
import { formatDate } from '../format.js';
import { CopyButton, Empty, ErrorBox, Loading, useLoad } from '../ui.js';
import { ThresholdEditor, ThresholdLine } from './ConfirmThreshold.js';
import { emptyDraft, PolicyEditor, PolicyInputs, policyInput, SpendBar } from './SpendingPolicy.js';

/** The gateway's limit on a key's name, in characters as people count them (code points: an emoji is one). */
export const KEY_NAME_MAX = 64;

export function CredentialsPage() {
  return (
    <section aria-labelledby="cred-title">
      <h1 id="cred-title">Credentials</h1>
      <ApiKeys />
      <Connections />
    </section>
  );
}

function ApiKeys() {
  const keys = useLoad(() => gw.apiKeys.list());
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; key: string }>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [rowError, setRowError] = useState<string>();
  const [draft, setDraft] = useState(emptyDraft);
  const [editing, setEditing] = useState<string>();
  const [spendOnly, setSpendOnly] = useState(false);
  const length = [...name.trim()].length;
  const over = length > KEY_NAME_MAX;

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setCreated(undefined);
    setBusy(true);
    try {
      const policy = policyInput(draft);
      const r = await gw.apiKeys.create(name.trim(), {
        ...(policy.limit_usd !== null ? { limit_usd: policy.limit_usd, limit_period: policy.limit_period } : {}),
        ...(policy.allowed_services !== null ? { allowed_services: policy.allowed_services } : {}),
        ...(policy.max_call_usd !== null ? { max_call_usd: policy.max_call_usd } : {}),
        ...(spendOnly ? { kind: 'spend' as const } : {}),
      });
      setSpendOnly(false);
      setCreated({ name: r.name, key: r.key });
      setName('');
      setDraft(emptyDraft());
      keys.reload();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (k: ApiKey) => {
    if (!window.confirm(`Revoke the key "${k.name}"? Programs using it stop working at once.`)) return;
    setRowError(undefined);
    try {
      await gw.apiKeys.revoke(k.id);
      keys.reload();
    } catch (err) {
      setRowError(errorMessage(err));
    }
  };

  return (
    <section className="card" aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <p className="muted">
        For scripts and servers: send <code>Authorization: Bearer sk_live_…</code>. Keys do not expire; revoke them when you no longer need them.
      </p>
      <form onSubmit={create} className="inline-form" noValidate>
        <label htmlFor="key-name">Key name</label>
        <div className="row">
          {/* maxLength counts UTF-16 units: twice the limit lets 64 emoji in whole; the counter and the API's message say the real limit. */}
          <input
            id="key-name"
            placeholder="e.g. ci-server"
            value={name}
            maxLength={KEY_NAME_MAX * 2}
            onChange={(e) => setName(e.target.value)}
            aria-describedby="key-name-count"
            aria-invalid={over ? true : undefined}
          />
          <button type="submit" disabled={busy}>
            {busy ? 'Creating…' : 'Create key'}
          </button>
        </div>
        <p id="key-name-count" className={`hint${over ? ' over' : ''}`} data-testid="key-name-count">
          {over ? `${length} characters: at most ${KEY_NAME_MAX}` : `${length} / ${KEY_NAME_MAX} characters`}
        </p>
        <PolicyInputs id="new-key" draft={draft} onChange={setDraft} />
        <label className="check">
          <input type="checkbox" checked={spendOnly} onChange={(e) => setSpendOnly(e.target.checked)} data-testid="spend-only" /> Spend only
        </label>
        <p className="hint">
          A spend key may call services, search and read its own balance, transactions and policy; it can never manage keys, connections, top-ups or publishing.
          A key with any spending limit is always a spend key.
        </p>
        <ErrorBox error={error} />
      </form>
      {created ? (
        <div className="secret" role="status" aria-labelledby="secret-title">
          <p id="secret-title">
            <strong>New key “{created.name}”.</strong> Copy it now: it is shown only this once.
          </p>
          <div className="address-row">
            <code className="address" data-testid="new-key">
              {created.key}
            </code>
            <CopyButton text={created.key} label="Copy key" />
          </div>
          <button type="button" className="link" onClick={() => setCreated(undefined)}>
            I have saved it, hide the key
          </button>
        </div>
      ) : null}
      <ErrorBox title="Could not revoke" error={rowError} />
      <ErrorBox title="Keys unavailable" error={keys.error} />
      {keys.loading && !keys.data ? <Loading label="Loading keys…" /> : null}
      {keys.data && keys.data.length === 0 ? <Empty>No API keys yet.</Empty> : null}
      {keys.data && keys.data.length > 0 ? (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Kind</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Spending</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((k) => (
                <tr key={k.id}>
                  <td data-label="Name" className="clip" title={k.name}>
                    <span>{k.name}</span>
                  </td>
                  <td data-label="Key" className="nowrap">
                    <code>{k.prefix}…</code>
                  </td>
                  <td data-label="Kind" title={k.kind === 'spend' ? 'calls, search, its own balance and policy' : 'everything the account may do'}>
                    {k.kind === 'spend' ? 'spend' : 'manage'}
                  </td>
                  <td data-label="Created">{formatDate(k.created_at)}</td>
                  <td data-label="Last used">{k.last_used_at ? formatDate(k.last_used_at) : <span className="muted">never</span>}</td>
                  <td data-label="Spending">
                    <SpendBar label={k.name} policy={k} />
                  </td>
                  <td className="actions">
                    <button type="button" className="small" onClick={() => setEditing(k.id)} aria-label={`Edit spending policy of ${k.name}`}>
                      Limits
                    </button>
                    <button type="button" className="danger small" onClick={() => revoke(k)} aria-label={`Revoke key ${k.name}`}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {keys.data
        ?.filter((k) => k.id === editing)
        .map((k) => (
          <PolicyEditor
            key={k.id}
            id={`edit-${k.id}`}
            name={k.name}
            policy={k}
            save={(p) => gw.apiKeys.update(k.id, p)}
            done={() => {
              setEditing(undefined);
              keys.reload();
            }}
          />
        ))}
    </section>
  );
}

function Connections() {
  const conns = useLoad(() => gw.oauthConnections.list());
  const [rowError, setRowError] = useState<string>();
  const [editing, setEditing] = useState<string>();
  const [confirming, setConfirming] = useState<string>();

  const disconnect = async (c: OAuthConnection) => {
    if (!window.confirm(`Disconnect ${c.client_name}? It loses access at once.`)) return;
    setRowError(undefined);
    try {
      await gw.oauthConnections.revoke(c.id);
      conns.reload();
    } catch (err) {
      setRowError(errorMessage(err));
    }
  };

  return (
    <section className="card" aria-labelledby="conn-title">
      <h2 id="conn-title">Connected apps</h2>
      <p className="muted">Assistants and tools you authorized through OAuth (for example an MCP connector), with their spending limits.</p>
      <ErrorBox title="Could not disconnect" error={rowError} />
      <ErrorBox title="Connections unavailable" error={conns.error} />
      {conns.loading && !conns.data ? <Loading label="Loading connections…" /> : null}
      {conns.data && conns.data.length === 0 ? (
        <Empty>No connected apps. Add {`${window.location.origin}/mcp`} as a connector in your assistant to connect one.</Empty>
      ) : null}
      {conns.data && conns.data.length > 0 ? (
        <ul className="conn-list">
          {conns.data.map((c) => (
            <li key={c.id} className="conn">
              <div className="conn-head">
                <strong>
                  <bdi>{c.client_name}</bdi>
                </strong>
                <span className="row">
                  <button type="button" className="small" onClick={() => setEditing(c.id)} aria-label={`Edit spending policy of ${c.client_name}`}>
                    Limits
                  </button>
                  <button type="button" className="small" onClick={() => setConfirming(c.id)} aria-label={`Edit confirmations of ${c.client_name}`}>
                    Confirmations
                  </button>
                  <button type="button" className="danger small" onClick={() => disconnect(c)} aria-label={`Disconnect ${c.client_name}`}>
                    Disconnect
                  </button>
                </span>
              </div>
              <div className="muted small-text">
                Scopes: {c.scopes.join(', ') || '—'} · connected {formatDate(c.created_at)}
              </div>
              <SpendBar label={c.client_name} policy={c} />
              <ThresholdLine connection={c} />
              {confirming === c.id ? (
                <ThresholdEditor
                  connection={c}
                  done={() => {
                    setConfirming(undefined);
                    conns.reload();
                  }}
                />
              ) : null}
              {editing === c.id ? (
                <PolicyEditor
                  id={`edit-${c.id}`}
                  name={c.client_name}
                  policy={c}
                  save={(p) => gw.oauthConnections.update(c.id, p)}
                  done={() => {
                    setEditing(undefined);
                    conns.reload();
                  }}
                />
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
