// Farebox in one import: everything public of its two parts, re-exported as is
// (a test pins that every name and type of both is here).

// Publisher side: @farebox/provider.
export * from '@farebox/provider';

// Caller side: @farebox/client.
export * from '@farebox/client';
