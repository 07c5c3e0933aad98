import { useCallback, useEffect, useState } from 'react';
import { errorMessage, gw, hasSession, statusOf, type Account } from './gateway.js';
import { Link, navigate, usePath } from './router.js';
import { ErrorBox, Loading } from './ui.js';
import { AuthPage } from './pages/Auth.js';
import { BillingPage } from './pages/Billing.js';
import { CredentialsPage } from './pages/Credentials.js';
import { CatalogPage, ServicePage } from './pages/Catalog.js';
import { TransactionsPage } from './pages/Transactions.js';
import { PublisherPage } from './pages/Publisher.js';
import { WebhooksPage } from './pages/Webhooks.js';
import { OperatorPage } from './operator/OperatorPage.js';

const NAV = [
  { href: '/billing', label: 'Billing' },
  { href: '/credentials', label: 'Credentials' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/catalog', label: 'Catalog' },
  { href: '/transactions', label: 'Transactions' },
  { href: '/publisher', label: 'Publisher' },
];
/** Shown only to operators (`GET /v1/operator/whoami`); `/operator` itself still tells anyone else it is not theirs. */
const OPERATOR_NAV = { href: '/operator', label: 'Operator' };

const TITLES: Record<string, string> = {
  '/signin': 'Sign in',
  '/signup': 'Sign up',
  '/billing': 'Billing',
  '/credentials': 'Credentials',
  '/webhooks': 'Webhooks',
  '/catalog': 'Catalog',
  '/transactions': 'Transactions',
  '/publisher': 'Publisher',
  '/operator': 'Operator',
};

export function App() {
  const path = usePath();
  const [me, setMe] = useState<Account | null | undefined>(undefined);
  const [error, setError] = useState<string>();
  const [operator, setOperator] = useState(false);

  const refreshMe = useCallback(async () => {
    // No session cookie: signed out, nothing to ask.
    if (!hasSession()) return setMe(null);
    try {
      setMe(await gw.me());
      setError(undefined);
    } catch (err) {
      if (statusOf(err) === 401) setMe(null);
      else setError(errorMessage(err));
    }
  }, []);

  useEffect(() => {
    void refreshMe();
    const onLost = () => setMe(null);
    window.addEventListener('farebox:unauthenticated', onLost);
    return () => window.removeEventListener('farebox:unauthenticated', onLost);
  }, [refreshMe]);

  // The role, asked once per account: an operator sees the Operator tab, nobody else does.
  const accountId = me?.id;
  useEffect(() => {
    setOperator(false);
    if (!accountId) return;
    let live = true;
    gw.operator.whoami().then(
      (who) => live && setOperator(who.operator),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [accountId]);

  const isAuthPage = path === '/signin' || path === '/signup';
  useEffect(() => {
    if (me === null && !isAuthPage) navigate(path === '/' ? '/signin' : `/signin?next=${encodeURIComponent(path + window.location.search)}`, true);
    if (me && (isAuthPage || path === '/')) navigate('/billing', true);
  }, [me, isAuthPage, path]);

  useEffect(() => {
    const section = path.startsWith('/catalog/') ? decodeURIComponent(path.slice('/catalog/'.length)) : TITLES[path];
    document.title = section ? `${section} · Farebox` : 'Farebox';
  }, [path]);

  const signOut = async () => {
    try {
      await gw.request('logout');
    } catch {
      // The session is gone either way; the cookies are cleared by the answer.
    }
    setMe(null);
    navigate('/signin');
  };

  let page;
  if (error && me === undefined) page = <ErrorBox title="The dashboard could not load your account" error={error} />;
  else if (me === undefined) page = <Loading />;
  else if (!me || isAuthPage) page = <AuthPage mode={path === '/signup' ? 'signup' : 'signin'} onSignedIn={(a) => setMe(a)} />;
  else if (path === '/billing' || path === '/') page = <BillingPage me={me} />;
  else if (path === '/credentials') page = <CredentialsPage />;
  else if (path === '/webhooks') page = <WebhooksPage />;
  else if (path === '/catalog') page = <CatalogPage />;
  else if (path.startsWith('/catalog/')) page = <ServicePage name={decodeURIComponent(path.slice('/catalog/'.length))} />;
  else if (path === '/transactions') page = <TransactionsPage />;
  else if (path === '/publisher') page = <PublisherPage me={me} onChanged={refreshMe} />;
  else if (path === '/operator') page = <OperatorPage />;
  else
    page = (
      <section>
        <h1>Page not found</h1>
        <p>
          There is nothing at <code>{path}</code>. <Link href="/billing">Go to Billing</Link>.
        </p>
      </section>
    );

  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <div className="topbar-inner">
          <Link href={me ? '/billing' : '/signin'} className="brand" aria-label="Farebox home">
            <span className="brand-mark" aria-hidden="true">
              ◆
            </span>
            Farebox
          </Link>
          {me ? (
            <div className="who">
              <span className="who-email" title={me.email}>
                {me.email}
              </span>
              <button type="button" className="secondary small" onClick={signOut}>
                Sign out
              </button>
            </div>
          ) : null}
        </div>
        {me ? (
          <nav aria-label="Main" className="nav">
            <ul>
              {(operator ? [...NAV, OPERATOR_NAV] : NAV).map((n) => {
                const current = path === n.href || (n.href === '/catalog' && path.startsWith('/catalog/'));
                return (
                  <li key={n.href}>
                    <Link href={n.href} aria-current={current ? 'page' : undefined}>
                      {n.label}
                    </Link>
                  </li>
                );
              })}
            </ul>
          </nav>
        ) : null}
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
      <footer className="footer">
        <p>Farebox · pay-per-call services, paid in USDC on Stellar</p>
      </footer>
    </>
  );
}
