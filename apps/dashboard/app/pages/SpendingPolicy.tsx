import { useState, type FormEvent } from 'react';
import type { GatewaySpendingPolicyInput } from '@farebox/client/gateway';
import { errorMessage } from '../gateway.js';
import { formatDate, formatUsd } from '../format.js';
import { ErrorBox } from '../ui.js';

// A credential's spending policy (docs/api.md, "Spending policies"): the
// fields that set it, and the bar of what it spent this period.

/** What the gateway answers for a key's or a connection's policy. */
export interface PolicyFields {
  limit_usd: number | null;
  limit_period: 'day' | 'week' | 'month' | 'total' | null;
  allowed_services: string[] | null;
  max_call_usd: number | null;
  spent_usd: number | null;
  remaining_usd: number | null;
  resets_at: string | null;
}

const PERIOD_TEXT = { day: 'a day', week: 'a week', month: 'a month', total: 'in total' } as const;

/** The form's values, as text. */
export interface PolicyDraft {
  limit: string;
  period: 'day' | 'week' | 'month' | 'total';
  allow: string;
  maxCall: string;
}

export const emptyDraft = (): PolicyDraft => ({ limit: '', period: 'day', allow: '', maxCall: '' });
export const draftOf = (p: PolicyFields): PolicyDraft => ({
  limit: p.limit_usd === null ? '' : String(p.limit_usd),
  period: p.limit_period ?? 'day',
  allow: (p.allowed_services ?? []).join(', '),
  maxCall: p.max_call_usd === null ? '' : String(p.max_call_usd),
});

/** The body the API takes: an empty field removes that part of the policy. */
export function policyInput(d: PolicyDraft): GatewaySpendingPolicyInput {
  const services = d.allow
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return {
    limit_usd: d.limit.trim() === '' ? null : d.limit.trim(),
    ...(d.limit.trim() === '' ? {} : { limit_period: d.period }),
    allowed_services: services.length ? services : null,
    max_call_usd: d.maxCall.trim() === '' ? null : d.maxCall.trim(),
  };
}

/** The policy's inputs (inside a form of the caller's). `id` prefixes the fields' ids. */
export function PolicyInputs({ id, draft, onChange }: { id: string; draft: PolicyDraft; onChange: (d: PolicyDraft) => void }) {
  const set = (patch: Partial<PolicyDraft>) => onChange({ ...draft, ...patch });
  return (
    <fieldset className="policy-fields">
      <legend>Spending policy (optional)</legend>
      <div className="row">
        <label htmlFor={`${id}-limit`}>Limit (USD)</label>
        <input id={`${id}-limit`} inputMode="decimal" placeholder="e.g. 5" value={draft.limit} onChange={(e) => set({ limit: e.target.value })} />
        <label htmlFor={`${id}-period`} className="visually-hidden">
          Period
        </label>
        <select id={`${id}-period`} value={draft.period} onChange={(e) => set({ period: e.target.value as PolicyDraft['period'] })}>
          <option value="day">per day (UTC)</option>
          <option value="week">per week (UTC)</option>
          <option value="month">per month (UTC)</option>
          <option value="total">in total</option>
        </select>
      </div>
      <div className="row">
        <label htmlFor={`${id}-allow`}>Only these services</label>
        <input id={`${id}-allow`} placeholder="e.g. echo, word-count (empty: all)" value={draft.allow} onChange={(e) => set({ allow: e.target.value })} />
      </div>
      <div className="row">
        <label htmlFor={`${id}-max`}>Max per call (USD)</label>
        <input id={`${id}-max`} inputMode="decimal" placeholder="e.g. 0.05" value={draft.maxCall} onChange={(e) => set({ maxCall: e.target.value })} />
      </div>
    </fieldset>
  );
}

/** What the policy allows and what it spent this period, with a bar. */
export function SpendBar({ label, policy }: { label: string; policy: PolicyFields }) {
  const limit = policy.limit_usd;
  const spent = policy.spent_usd ?? 0;
  const rules = [
    ...(policy.allowed_services ? [`only ${policy.allowed_services.join(', ') || 'no service'}`] : []),
    ...(policy.max_call_usd !== null ? [`at most ${formatUsd(policy.max_call_usd)} a call`] : []),
  ];
  return (
    <div className="spend small-text" data-testid="spend">
      {limit === null || policy.limit_period === null ? (
        <span className="muted">No spending limit</span>
      ) : (
        <>
          <span>
            {formatUsd(spent)} of {formatUsd(limit)} {PERIOD_TEXT[policy.limit_period]}
            {policy.resets_at ? <span className="muted"> · resets {formatDate(policy.resets_at)}</span> : null}
          </span>
          {/* biome-ignore lint/a11y/useSemanticElements: a <meter> cannot be styled alike across browsers; the div carries the same role and values */}
          <div className="meter" role="meter" aria-label={`${label} spending this period`} aria-valuemin={0} aria-valuemax={limit} aria-valuenow={spent}>
            <div className="meter-fill" style={{ width: `${Math.min(100, limit > 0 ? (spent / limit) * 100 : 0)}%` }} />
          </div>
        </>
      )}
      {rules.length ? <div className="muted">{rules.join(' · ')}</div> : null}
    </div>
  );
}

/** Edits a credential's policy in place; `save` sends it, `done` closes the editor. */
export function PolicyEditor({
  id,
  name,
  policy,
  save,
  done,
}: {
  id: string;
  name: string;
  policy: PolicyFields;
  save: (p: GatewaySpendingPolicyInput) => Promise<unknown>;
  done: () => void;
}) {
  const [draft, setDraft] = useState(() => draftOf(policy));
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      await save(policyInput(draft));
      done();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} className="inline-form policy-editor" aria-label={`Spending policy of ${name}`} noValidate>
      <PolicyInputs id={id} draft={draft} onChange={setDraft} />
      <div className="row">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save policy'}
        </button>
        <button type="button" className="link" onClick={done}>
          Cancel
        </button>
      </div>
      <ErrorBox title="Could not save" error={error} />
    </form>
  );
}
