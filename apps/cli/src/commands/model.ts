import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox model fetch`: the search model.

/**
 * Downloads the search model (`@farebox/discovery`) so the gateway's search
 * is hybrid (keywords and multilingual embeddings) and works offline: into
 * `--dir` (default FAREBOX_MODEL_DIR or ~/.cache/farebox/models), from `--hub`
 * (default FAREBOX_MODEL_HUB_URL or https://huggingface.co/), with a progress
 * line at every 10%.
 */
export async function runModelFetch(ctx: Context, opts: { dir?: string; hub?: string }): Promise<CommandResult> {
  let discovery: typeof import('@farebox/discovery');
  try {
    discovery = await import('@farebox/discovery');
  } catch {
    throw new CliError('LOCAL', 'model fetch needs @farebox/discovery: npm install -g @farebox/discovery (it brings the ONNX runtime)');
  }
  const hub = opts.hub ?? ctx.settings.modelHubUrl;
  // A line at every 10%; the total grows as each file starts (the small ones first), and the count restarts with it.
  let step = -1;
  let known = 0;
  const r = await discovery
    .prefetchModel({
      ...(opts.dir ? { modelDir: opts.dir } : {}),
      ...(hub ? { hubUrl: hub } : {}),
      onProgress: ({ loaded, total }) => {
        if (!(total > 0)) return;
        if (total !== known) {
          known = total;
          step = -1;
        }
        const now = Math.floor((10 * loaded) / total);
        if (now <= step) return;
        step = now;
        ctx.log(`downloading ${discovery.DEFAULT_MODEL_ID}: ${now * 10}% (${(loaded / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB)`);
      },
    })
    .catch((err: unknown) => {
      throw new CliError('LOCAL', err instanceof Error ? err.message : String(err));
    });
  return result(
    r,
    `Model ${r.modelId} (${r.dims} dimensions) is in ${r.path}. A gateway reading it (FAREBOX_MODEL_DIR, or the default folder) searches hybrid: restart a running one.`,
  );
}

export const modelCommands: CommandGroup = {
  name: 'model',
  register(program, { act }) {
    program
      .command('model')
      .description('the search model')
      .command('fetch')
      .description('download the multilingual search model so the gateway searches hybrid, and offline')
      .option('--dir <path>', 'model folder (default FAREBOX_MODEL_DIR or ~/.cache/farebox/models)')
      .option('--hub <url>', 'where to download from, in the Hugging Face layout (default FAREBOX_MODEL_HUB_URL or https://huggingface.co/)')
      .action((o: { dir?: string; hub?: string }) => act((ctx) => runModelFetch(ctx, o))());
  },
};
