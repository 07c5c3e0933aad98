import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox model fetch`: the search model.

/** Downloads the search model (`@farebox/discovery`) so the gateway's semantic search works offline. */
export async function runModelFetch(_ctx: Context, opts: { dir?: string }): Promise<CommandResult> {
  let discovery: typeof import('@farebox/discovery');
  try {
    discovery = await import('@farebox/discovery');
  } catch {
    throw new CliError('LOCAL', 'model fetch needs @farebox/discovery: npm install -g @farebox/discovery (it brings the ONNX runtime)');
  }
  const r = await discovery.prefetchModel(opts.dir ? { modelDir: opts.dir } : {});
  return result(r, `Model ${r.modelId} (${r.dims} dimensions) is in ${r.path}.`);
}

export const modelCommands: CommandGroup = {
  name: 'model',
  register(program, { act }) {
    program
      .command('model')
      .description('the search model')
      .command('fetch')
      .description('download the multilingual search model so the gateway searches offline')
      .option('--dir <path>', 'model folder (default FAREBOX_MODEL_DIR or ~/.cache/farebox/models)')
      .action((o: { dir?: string }) => act((ctx) => runModelFetch(ctx, o))());
  },
};
