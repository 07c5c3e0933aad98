import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { EmbedKind, Embedder, EmbedderStatus, ModelDownloadProgress } from './embedder-types.js';
import { DiscoveryError } from './errors.js';

/** The default model: multilingual (about 100 languages), 384 dimensions, MIT licence. */
export const DEFAULT_MODEL_ID = 'Xenova/multilingual-e5-small';
export const DEFAULT_DIMS = 384;
/** Where models are downloaded from (the Hugging Face Hub). */
export const DEFAULT_HUB_URL = 'https://huggingface.co/';

export interface EmbedderOptions {
  /**
   * Directory holding `<modelId>/config.json`, `tokenizer.json`,
   * `tokenizer_config.json` and `onnx/model[_quantized].onnx`. Default:
   * `FAREBOX_MODEL_DIR`, else `~/.cache/farebox/models`.
   */
  modelDir?: string;
  /** Hugging Face model id (default Xenova/multilingual-e5-small). */
  modelId?: string;
  /**
   * May the model be downloaded from huggingface.co when it is not in
   * `modelDir`? Default: false when FAREBOX_MODEL_DIR is set, true otherwise.
   */
  allowRemote?: boolean;
  /** ONNX weights: 'q8' (model_quantized.onnx, default) or 'fp32' (model.onnx). */
  dtype?: 'q8' | 'fp32';
  /** Expected output dimensions (default 384); a model giving another size is refused. */
  dims?: number;
  /** Text prefixes the model was trained with (default e5's "query: " / "passage: "). */
  prefixes?: { query: string; passage: string };
  /** ONNX Runtime intra-op threads (default 2). */
  threads?: number;
  /**
   * The model hub downloads come from (default https://huggingface.co/): files
   * are fetched from `<hubUrl><modelId>/resolve/main/<file>`, the Hugging Face
   * layout (a mirror, or a loopback server in tests).
   */
  hubUrl?: string;
  /** Called as the download progresses (bytes of all the model's files). */
  onProgress?: (progress: ModelDownloadProgress) => void;
}

interface ResolvedOptions {
  modelDir: string;
  modelId: string;
  allowRemote: boolean;
  dtype: 'q8' | 'fp32';
  dims: number;
  prefixes: { query: string; passage: string };
  threads: number;
  hubUrl: string;
  onProgress: ((progress: ModelDownloadProgress) => void) | undefined;
}

function resolveOptions(options: EmbedderOptions): ResolvedOptions {
  const envDir = process.env['FAREBOX_MODEL_DIR'];
  const modelDir = resolve(options.modelDir ?? (envDir && envDir.length > 0 ? envDir : join(homedir(), '.cache', 'farebox', 'models')));
  const problems: string[] = [];
  const modelId = options.modelId ?? DEFAULT_MODEL_ID;
  if (!/^[\w.-]+\/[\w.-]+$/.test(modelId)) problems.push(`modelId must look like "owner/name", got "${modelId}"`);
  const dims = options.dims ?? DEFAULT_DIMS;
  if (!Number.isInteger(dims) || dims <= 0) problems.push(`dims must be a positive integer, got ${dims}`);
  const dtype = options.dtype ?? 'q8';
  if (dtype !== 'q8' && dtype !== 'fp32') problems.push(`dtype must be "q8" or "fp32", got "${String(dtype)}"`);
  const threads = options.threads ?? 2;
  if (!Number.isInteger(threads) || threads < 1) problems.push(`threads must be a positive integer, got ${threads}`);
  let hubUrl = options.hubUrl ?? DEFAULT_HUB_URL;
  if (!/^https?:\/\/[^/]/.test(hubUrl)) problems.push(`hubUrl must be an http(s) URL, got "${hubUrl}"`);
  if (!hubUrl.endsWith('/')) hubUrl += '/';
  if (problems.length > 0) throw new DiscoveryError('INVALID_OPTIONS', problems.join('; '));
  return {
    modelDir,
    modelId,
    allowRemote: options.allowRemote ?? !(envDir && envDir.length > 0),
    dtype,
    dims,
    prefixes: options.prefixes ?? { query: 'query: ', passage: 'passage: ' },
    threads,
    hubUrl,
    onProgress: options.onProgress,
  };
}

/** Where `<modelId>` lives inside `modelDir` (the same layout prefetchModel writes). */
export function modelPath(modelDir: string, modelId: string = DEFAULT_MODEL_ID): string {
  return join(resolve(modelDir), ...modelId.split('/'));
}

type Extractor = (texts: string[], options: { pooling: 'mean'; normalize: boolean }) => Promise<{ data: ArrayLike<number>; dims: number[] }>;

/**
 * An in-process sentence embedder on transformers.js / onnxruntime-node.
 * Loading never throws: when the model cannot be loaded the status says why
 * and an index using it runs keyword-only.
 *
 * @example
 * const embedder = createEmbedder({ modelDir: '/srv/models' });
 * const status = await embedder.load(); // { state: 'ready', ... } or { state: 'failed', reason }
 */
export function createEmbedder(options: EmbedderOptions = {}): Embedder & { readonly options: Readonly<ResolvedOptions> } {
  const o = resolveOptions(options);
  let state: EmbedderStatus = { state: 'idle', modelId: o.modelId, dims: o.dims };
  let loading: Promise<EmbedderStatus> | null = null;
  let extractor: Extractor | null = null;

  function doLoad(): Promise<EmbedderStatus> {
    // Decided before the first await, so `status()` says `downloading` as soon as `load()` is called.
    const local = existsSync(join(modelPath(o.modelDir, o.modelId), 'config.json'));
    state = { state: !local && o.allowRemote ? 'downloading' : 'loading', modelId: o.modelId, dims: o.dims };
    return finishLoad(local);
  }

  async function finishLoad(local: boolean): Promise<EmbedderStatus> {
    try {
      if (!local && !o.allowRemote) {
        throw new Error(
          `model ${o.modelId} not found in ${o.modelDir} and downloads are off; run \`farebox model fetch\` where the network allows or point FAREBOX_MODEL_DIR at a copy`,
        );
      }
      const onProgress = (p: ModelDownloadProgress) => {
        if (state.state === 'downloading') state = { ...state, download: p };
        o.onProgress?.(p);
      };
      extractor = await openPipeline(o, !local, onProgress);
      const probe = await extractor([`${o.prefixes.passage}ok`], { pooling: 'mean', normalize: true });
      const got = probe.dims[probe.dims.length - 1];
      if (got !== o.dims) {
        extractor = null;
        throw new Error(`model ${o.modelId} produces ${String(got)}-dimension vectors, expected ${o.dims}`);
      }
      state = { state: 'ready', modelId: o.modelId, dims: o.dims };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      state = {
        state: 'failed',
        modelId: o.modelId,
        dims: o.dims,
        reason: `embedding model unavailable: ${local || !o.allowRemote ? message : `model ${o.modelId} is not in ${o.modelDir} and downloading it from ${o.hubUrl} failed (${message})`}`,
      };
    }
    return state;
  }

  return {
    options: o,
    modelId: o.modelId,
    dims: o.dims,
    load() {
      loading ??= doLoad();
      return loading;
    },
    status() {
      return { ...state };
    },
    async embed(texts: readonly string[], kind: EmbedKind) {
      if (!extractor) {
        throw new DiscoveryError('MODEL_UNAVAILABLE', state.reason ?? `model ${o.modelId} is not loaded`);
      }
      if (texts.length === 0) return [];
      const prefix = kind === 'query' ? o.prefixes.query : o.prefixes.passage;
      const out = await extractor(
        texts.map((t) => prefix + t),
        { pooling: 'mean', normalize: true },
      );
      const d = out.dims[out.dims.length - 1]!;
      const data = Float32Array.from(out.data);
      return texts.map((_t, i) => data.slice(i * d, (i + 1) * d));
    },
  };
}

async function openPipeline(o: ResolvedOptions, remote: boolean, onProgress: (p: ModelDownloadProgress) => void): Promise<Extractor> {
  const transformers = await import('@huggingface/transformers');
  const { env, pipeline } = transformers;
  env.localModelPath = o.modelDir;
  env.allowLocalModels = true;
  env.allowRemoteModels = remote;
  env.remoteHost = o.hubUrl;
  env.cacheDir = o.modelDir;
  const extractor = await pipeline('feature-extraction', o.modelId, {
    progress_callback: (info: { status: string; loaded?: number; total?: number }) => {
      if (info.status === 'progress_total' && typeof info.loaded === 'number' && typeof info.total === 'number')
        onProgress({ loaded: info.loaded, total: info.total });
    },
    dtype: o.dtype,
    device: 'cpu',
    cache_dir: o.modelDir,
    local_files_only: !remote,
    session_options: { intraOpNumThreads: o.threads, interOpNumThreads: 1 },
  });
  return extractor as unknown as Extractor;
}

/**
 * Downloads the model into `modelDir` (default FAREBOX_MODEL_DIR or
 * ~/.cache/farebox/models) so later runs work offline, and checks it loads.
 * Resolves with where it is; rejects with a clear error when it cannot.
 */
export async function prefetchModel(options: Omit<EmbedderOptions, 'allowRemote'> = {}): Promise<{ modelId: string; path: string; dims: number }> {
  // Unlike a running index, this waits for the download: it is the command's whole job.
  const embedder = createEmbedder({ ...options, allowRemote: true });
  const status = await embedder.load();
  if (status.state !== 'ready') {
    throw new DiscoveryError('MODEL_UNAVAILABLE', status.reason ?? 'the model could not be loaded');
  }
  return { modelId: status.modelId, path: modelPath(embedder.options.modelDir, status.modelId), dims: status.dims };
}
