import { useState, type FormEvent } from 'react';
import type { GatewayOAuthConnection } from '@farebox/client/gateway';
import { errorMessage, gw } from '../gateway.js';
import { formatUsd } from '../format.js';
import { ErrorBox } from '../ui.js';

// A connected app's confirmation threshold (docs/oauth.md, "Calls the user
// confirms"): which of its paid calls ask you first, and the form that
// changes it (PATCH /v1/oauth/connections/:id, with the CSRF header as every write).

type Threshold = Pick<GatewayOAuthConnection, 'confirm_above_usd' | 'confirm_below_left_percent'>;

/** The threshold in words. */
export function thresholdText(t: Threshold): string {
  const rules = [
    ...(t.confirm_above_usd === null ? [] : [t.confirm_above_usd === 0 ? 'every paid call' : `calls above ${formatUsd(t.confirm_above_usd)}`]),
    ...(t.confirm_below_left_percent > 0 ? [`calls that would leave under ${t.confirm_below_left_percent} % of its limit`] : []),
  ];
  return rules.length ? `Asks you first: ${rules.join(', and ')}` : 'Never asks you before a call';
}

export function ThresholdLine({ connection }: { connection: Threshold }) {
  return (
    <div className="muted small-text" data-testid="threshold">
      {thresholdText(connection)}
    </div>
  );
}

/** Edits the threshold in place; `done` closes the editor (and reloads the list). */
export function ThresholdEditor({ connection, done }: { connection: GatewayOAuthConnection; done: () => void }) {
  const [above, setAbove] = useState(connection.confirm_above_usd === null ? '' : String(connection.confirm_above_usd));
  const [pct, setPct] = useState(String(connection.confirm_below_left_percent));
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const id = `confirm-${connection.id}`;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      await gw.oauthConnections.update(connection.id, { confirm_above_usd: above.trim(), confirm_below_left_percent: pct.trim() });
      done();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} className="inline-form policy-editor" aria-label={`Confirmations of ${connection.client_name}`} noValidate>
      <fieldset className="policy-fields">
        <legend>Ask me before a call</legend>
        <div className="row">
          <label htmlFor={`${id}-above`}>Priced above (USD)</label>
          <input id={`${id}-above`} inputMode="decimal" placeholder="never" value={above} onChange={(e) => setAbove(e.target.value)} />
        </div>
        <div className="row">
          <label htmlFor={`${id}-pct`}>Leaving under (% of the limit)</label>
          <input id={`${id}-pct`} inputMode="numeric" placeholder="0" value={pct} onChange={(e) => setPct(e.target.value)} />
        </div>
        <p className="hint">Empty price: never by price; 0: every paid call. 0 %: never by what is left.</p>
      </fieldset>
      <div className="row">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save confirmations'}
        </button>
        <button type="button" className="link" onClick={done}>
          Cancel
        </button>
      </div>
      <ErrorBox title="Could not save" error={error} />
    </form>
  );
}
