import { useState, type FormEvent } from 'react';
import { errorMessage, gw, type Account } from '../gateway.js';
import { Link, navigate } from '../router.js';
import { ErrorBox } from '../ui.js';

/** Where to go after signing in: the `next` query parameter when it is a local dashboard path. */
function nextPath(): string {
  const next = new URLSearchParams(window.location.search).get('next');
  if (!next?.startsWith('/') || next.startsWith('//') || next.startsWith('/\\') || /^\/(signin|signup)\b/.test(next)) return '/billing';
  return next;
}

export function AuthPage({ mode, onSignedIn }: { mode: 'signin' | 'signup'; onSignedIn: (a: Account) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const signup = mode === 'signup';

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    if (signup && password.length < 8) return setError('the password needs at least 8 characters');
    setBusy(true);
    try {
      const account = await gw.request(signup ? 'signup' : 'login', { body: { email, password } });
      onSignedIn(account);
      navigate(nextPath(), true);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="auth card" aria-labelledby="auth-title">
      <h1 id="auth-title">{signup ? 'Create your account' : 'Sign in'}</h1>
      <p className="muted">
        {signup
          ? 'Each new account gets its own USDC wallet, and the sign-up credit this platform gives, if any.'
          : 'Pay per call for AI agents and APIs, in USDC.'}
      </p>
      <form onSubmit={submit} noValidate>
        <label htmlFor="auth-email">E-mail</label>
        <input
          id="auth-email"
          type="email"
          autoComplete="email"
          required
          value={email}
          onChange={(e) => {
            setEmail(e.target.value);
            setError(undefined);
          }}
        />
        <label htmlFor="auth-password">Password</label>
        <input
          id="auth-password"
          type="password"
          autoComplete={signup ? 'new-password' : 'current-password'}
          required
          minLength={8}
          maxLength={256}
          aria-describedby={signup ? 'auth-password-hint' : undefined}
          value={password}
          onChange={(e) => {
            setPassword(e.target.value);
            setError(undefined);
          }}
        />
        {signup ? (
          <p id="auth-password-hint" className="hint">
            8 to 256 characters.
          </p>
        ) : null}
        <ErrorBox error={error} />
        <button type="submit" disabled={busy}>
          {busy ? (signup ? 'Creating account…' : 'Signing in…') : signup ? 'Sign up' : 'Sign in'}
        </button>
      </form>
      <p className="switch">
        {signup ? (
          <>
            Already have an account? <Link href="/signin">Sign in</Link>
          </>
        ) : (
          <>
            New here? <Link href="/signup">Create an account</Link>
          </>
        )}
      </p>
    </section>
  );
}
