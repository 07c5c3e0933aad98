/**
 * Where an embedder stands; `failed` carries the reason search runs
 * keyword-only. `downloading`: the model is being fetched from the hub (an
 * index does not wait for it: it answers keyword-only meanwhile and embeds
 * its documents when the model is ready); `download` says how far.
 */
export interface EmbedderStatus {
  state: 'idle' | 'loading' | 'downloading' | 'ready' | 'failed';
  modelId: string;
  dims: number;
  reason?: string;
  download?: ModelDownloadProgress;
}

/** Bytes of the model's files fetched so far, and in all (as far as the hub said; 0 before it did). */
export interface ModelDownloadProgress {
  loaded: number;
  total: number;
}

export type EmbedKind = 'query' | 'passage';

/** Anything that turns texts into fixed-length vectors (the index normalises them). */
export interface Embedder {
  readonly modelId: string;
  readonly dims: number;
  /** Loads the model once; never rejects: a failure is reported in the status. */
  load(): Promise<EmbedderStatus>;
  status(): EmbedderStatus;
  /** One vector per text, in order. Rejects when the model is not loaded. */
  embed(texts: readonly string[], kind: EmbedKind): Promise<Float32Array[]>;
}
