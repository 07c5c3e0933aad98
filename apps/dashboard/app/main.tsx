// First: zod's no-eval mode, before any gateway answer is parsed (the dashboard's CSP has no 'unsafe-eval').
import './jitless.js';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import './styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
