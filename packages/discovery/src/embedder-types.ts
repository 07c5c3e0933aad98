/** Where an embedder stands; `failed` carries the reason search runs keyword-only. */
export interface EmbedderStatus {
  state: 'idle' | 'loading' | 'ready' | 'failed';
  modelId: string;
  dims: number;
  reason?: string;
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
