import { useState, type FormEvent } from 'react';
import { signPublisherLink } from '@farebox/client/gateway';
import { errorMessage, gw, type Service } from '../gateway.js';
import { ErrorBox, Notice } from '../ui.js';

/**
 * Services registered with their own key (the provider SDK's `.farebox/keypair`) earn under that key; linked here
 * (the key signs the gateway's challenge, in this browser: the secret is never sent), the overview, earnings,
 * settlements and settle-now include them (docs/api.md, "Publisher links").
 */
export function LinkedKeys({ owners, services, onLinked }: { owners: string[]; services: Service[]; onLinked: () => void }) {
  const [secret, setSecret] = useState('');
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setDone(undefined);
    if (!/^S[A-Z2-7]{55}$/.test(secret.trim())) return setError('Owner key: paste the secret seed (S..., the content of .farebox/keypair)');
    setBusy(true);
    try {
      const { owner } = await signPublisherLink(secret.trim(), '');
      const { challenge } = await gw.publisher.linkChallenge(owner);
      const r = await gw.publisher.link({ challenge, ...(await signPublisherLink(secret.trim(), challenge)) });
      setSecret('');
      setDone(`Linked ${r.owner}${r.services.length ? ` (${r.services.map((s) => s.service).join(', ')})` : ''}.`);
      onLinked();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    // A key is 56 characters without a break: it wraps anywhere rather than widen the page on a phone.
    <section className="card" aria-labelledby="linked-title" style={{ overflowWrap: 'anywhere' }}>
      <h2 id="linked-title">Services published with their own key</h2>
      <p className="muted small-text">
        A service started with the provider SDK is owned by its key (<code>.farebox/keypair</code>), not by this account. Link the key to see its calls and
        earnings here and to pay them out with Settle now; payouts go to the key's own wallet. Or, from the service's folder:{' '}
        <code>farebox publisher link --keypair .farebox/keypair</code>.
      </p>
      {owners.length ? (
        <ul className="plain" data-testid="linked-owners">
          {owners.map((o) => (
            <li key={o}>
              <code>{o}</code>:{' '}
              {services
                .filter((s) => s.ownerWallet === o)
                .map((s) => s.service)
                .join(', ') || 'no service registered'}
            </li>
          ))}
        </ul>
      ) : null}
      <form onSubmit={submit} noValidate>
        <label htmlFor="link-secret">Owner key (secret seed, signed here, never sent)</label>
        <input id="link-secret" type="password" autoComplete="off" placeholder="S..." value={secret} onChange={(e) => setSecret(e.target.value)} />
        <ErrorBox error={error} />
        {done ? <Notice>{done}</Notice> : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Linking…' : 'Link key'}
        </button>
      </form>
    </section>
  );
}
