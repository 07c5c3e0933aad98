import type { Embedder, ModelDownloadProgress, SearchIndex } from '@farebox/discovery';
import type { Logger } from './observability/log.js';

/** How to get the model, said with every line that reports search as keyword-only. */
export const MODEL_HINT = 'get the model with `farebox model fetch` (then restart), or point FAREBOX_MODEL_DIR at a folder that holds it';

/**
 * Says in the log what serves searches, once the model's fate is known: a
 * download in the background (with a progress line at every 10%), then
 * "hybrid now"; or one line saying search is keyword-only, why, and how to
 * get the model. The index itself turns hybrid on its own (docs/search.md).
 */
export function reportSearchModel(embedder: Embedder, index: SearchIndex, logger: Logger): void {
  const first = embedder.status();
  const downloading = first.state === 'downloading';
  if (downloading) {
    logger.info(
      { event: 'search_model', state: 'downloading', model: first.modelId },
      `search: downloading the embedding model ${first.modelId} in the background; keyword-only until it is ready`,
    );
  }
  void embedder.load().then((s) => {
    if (s.state === 'ready') {
      logger.info(
        { event: 'search_model', state: 'ready', model: s.modelId, documents: index.size },
        downloading
          ? `search is hybrid now: model ${s.modelId} downloaded; embedding the ${index.size} services indexed so far`
          : `search: hybrid (model ${s.modelId})`,
      );
      return;
    }
    const reason = s.reason ?? 'the embedding model could not be loaded';
    logger.warn(
      { event: 'search_model', state: 'keyword-only', model: s.modelId },
      `search is keyword-only (a query finds services by their words, not in other languages): ${reason}${reason.includes('farebox model fetch') ? '' : `; ${MODEL_HINT}`}`,
    );
  });
}

/**
 * A progress callback for the embedder that logs every 10% of the download
 * (the first report and the last included). The total grows as each file
 * starts (the small ones first): the count restarts with a new total.
 */
export function downloadProgressLogger(modelId: string, logger: () => Logger | undefined): (p: ModelDownloadProgress) => void {
  let lastStep = -1;
  let lastTotal = 0;
  return (p) => {
    if (!(p.total > 0)) return;
    if (p.total !== lastTotal) {
      lastTotal = p.total;
      lastStep = -1;
    }
    const step = Math.floor((10 * p.loaded) / p.total);
    if (step <= lastStep) return;
    lastStep = step;
    logger()?.info(
      { event: 'search_model', state: 'downloading', loaded: p.loaded, total: p.total },
      `search: embedding model ${modelId} ${step * 10}% downloaded (${(p.loaded / 1e6).toFixed(1)} of ${(p.total / 1e6).toFixed(1)} MB)`,
    );
  };
}
