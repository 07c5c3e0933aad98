import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { errorMessage } from './gateway.js';
import { formatBaseUnits, formatUsd } from './format.js';

/** Loads data on mount and on `reload()`, keeping loading and error states. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const seq = useRef(0);
  const reload = useCallback(
    () => {
      const mine = ++seq.current;
      setState((s) => ({ ...s, loading: true, error: undefined }));
      load().then(
        (data) => mine === seq.current && setState({ data, loading: false }),
        (err) => mine === seq.current && setState((s) => ({ ...s, error: errorMessage(err), loading: false })),
      );
    },
    // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what the load depends on, as with useEffect
    deps,
  );
  useEffect(() => reload(), [reload]);
  return { ...state, reload };
}

/** Calls `fn` every `ms` while the page is visible (figures that change without this tab doing anything). */
export function useEvery(ms: number, fn: () => void) {
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') latest.current();
    }, ms);
    return () => clearInterval(timer);
  }, [ms]);
}

export function ErrorBox({ error, title }: { error: string | undefined; title?: string }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      {title ? <strong>{title}: </strong> : null}
      {error}
    </div>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <div className="notice" role="status">
      {children}
    </div>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

export function Units({ units }: { units: number | string | bigint }) {
  return <span className="amount">{formatBaseUnits(units)}</span>;
}

export function Usd({ usd }: { usd: number }) {
  return <span className="amount">{formatUsd(usd)}</span>;
}

const BADGES: Record<string, string> = {
  completed: 'ok',
  delivered: 'ok',
  ok: 'ok',
  released: 'ok',
  settled: 'ok',
  pending: 'warn',
  open: 'warn',
  funded: 'warn',
  refunded: 'info',
  skipped: 'muted',
  failed: 'bad',
  cancelled: 'muted',
};

export function Badge({ status }: { status: string }) {
  return <span className={`badge badge-${BADGES[status] ?? 'muted'}`}>{status}</span>;
}

export function ExplorerLink({ href, label = 'View on explorer' }: { href: string | null | undefined; label?: string }) {
  if (!href) return <span className="muted">—</span>;
  return (
    <a href={href} target="_blank" rel="noopener noreferrer" className="explorer">
      {label}
      <span className="visually-hidden"> (opens in a new tab)</span>
    </a>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState<'yes' | 'no' | undefined>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      setCopied('no');
    }
    setTimeout(() => setCopied(undefined), 2000);
  };
  return (
    <button type="button" className="secondary small" onClick={copy} aria-live="polite">
      {copied === 'yes' ? 'Copied' : copied === 'no' ? 'Select and copy' : label}
    </button>
  );
}

export function Stat({ label, children, hint }: { label: string; children: ReactNode; hint?: string }) {
  return (
    <div className="stat">
      <div className="stat-label">{label}</div>
      <div className="stat-value">{children}</div>
      {hint ? <div className="stat-hint">{hint}</div> : null}
    </div>
  );
}
