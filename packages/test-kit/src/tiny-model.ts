/**
 * Writes a tiny but real sentence-embedding model directory: an ONNX graph
 * (one Gather from a 384-dim embedding table, output `last_hidden_state`)
 * encoded with protobufjs from the ONNX schema, a WordPiece tokenizer.json,
 * config.json and tokenizer_config.json. Words of one concept in several
 * languages share an embedding direction, so mean pooling puts
 * "weather" / "clima" / "météo" on the same vector.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import protobuf from 'protobufjs';

export const TINY_DIMS = 384;

/** Concept directions (basis vectors) of the tiny model. */
export const CONCEPTS: Record<string, number> = {
  weather: 0,
  translate: 1,
  payment: 2,
  station: 3,
  unknown: 9,
  misc: 10,
};

const WORDS: Record<string, keyof typeof CONCEPTS | null> = {
  // tokens that carry no meaning in this model (prefixes, punctuation, glue words)
  query: null,
  passage: null,
  ':': null,
  '.': null,
  ',': null,
  del: null,
  de: null,
  la: null,
  el: null,
  the: null,
  for: null,
  of: null,
  and: null,
  hub: null,
  api: null,
  skycast: null,
  lingua: null,
  // weather in five languages
  weather: 'weather',
  forecast: 'weather',
  clima: 'weather',
  tiempo: 'weather',
  pronostico: 'weather',
  meteo: 'weather',
  wetter: 'weather',
  // translation
  translate: 'translate',
  translation: 'translate',
  traduccion: 'translate',
  traduction: 'translate',
  traducir: 'translate',
  text: 'translate',
  // payments
  payment: 'payment',
  payments: 'payment',
  pago: 'payment',
  invoice: 'payment',
  // stations
  station: 'station',
  ok: 'misc',
};

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]'];

function onnxSchema(): protobuf.Root {
  // The subset of onnx.proto (field numbers as in onnx/onnx.proto3) this graph needs.
  return protobuf.Root.fromJSON({
    nested: {
      onnx: {
        nested: {
          ModelProto: {
            fields: {
              irVersion: { type: 'int64', id: 1 },
              opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
              producerName: { type: 'string', id: 2 },
              graph: { type: 'GraphProto', id: 7 },
            },
          },
          OperatorSetIdProto: { fields: { domain: { type: 'string', id: 1 }, version: { type: 'int64', id: 2 } } },
          GraphProto: {
            fields: {
              node: { rule: 'repeated', type: 'NodeProto', id: 1 },
              name: { type: 'string', id: 2 },
              initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
              input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
              output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
            },
          },
          NodeProto: {
            fields: {
              input: { rule: 'repeated', type: 'string', id: 1 },
              output: { rule: 'repeated', type: 'string', id: 2 },
              name: { type: 'string', id: 3 },
              opType: { type: 'string', id: 4 },
              attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
            },
          },
          AttributeProto: {
            fields: { name: { type: 'string', id: 1 }, i: { type: 'int64', id: 3 }, type: { type: 'int32', id: 20 } },
          },
          TensorProto: {
            fields: {
              dims: { rule: 'repeated', type: 'int64', id: 1 },
              dataType: { type: 'int32', id: 2 },
              name: { type: 'string', id: 8 },
              rawData: { type: 'bytes', id: 9 },
            },
          },
          ValueInfoProto: { fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } } },
          TypeProto: {
            fields: { tensorType: { type: 'TypeProtoTensor', id: 1 } },
          },
          TypeProtoTensor: {
            fields: { elemType: { type: 'int32', id: 1 }, shape: { type: 'TensorShapeProto', id: 2 } },
          },
          TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } } },
          Dimension: { fields: { dimValue: { type: 'int64', id: 1 }, dimParam: { type: 'string', id: 2 } } },
        },
      },
    },
  });
}

const FLOAT = 1;
const INT64 = 7;
const ATTR_INT = 2;

function tensorType(elemType: number, dims: Array<string | number>) {
  return {
    tensorType: {
      elemType,
      shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) },
    },
  };
}

export function tinyModelBytes(vocab: string[]): Uint8Array {
  const table = new Float32Array(vocab.length * TINY_DIMS);
  vocab.forEach((token, row) => {
    const concept = token === '[UNK]' ? 'unknown' : WORDS[token];
    if (concept) table[row * TINY_DIMS + CONCEPTS[concept]!] = 1;
  });
  const root = onnxSchema();
  const Model = root.lookupType('onnx.ModelProto');
  const message = Model.fromObject({
    irVersion: 8,
    producerName: 'farebox-discovery-test',
    opsetImport: [{ domain: '', version: 13 }],
    graph: {
      name: 'tiny-embedder',
      initializer: [{ name: 'embeddings', dims: [vocab.length, TINY_DIMS], dataType: FLOAT, rawData: new Uint8Array(table.buffer) }],
      node: [
        {
          name: 'lookup',
          opType: 'Gather',
          input: ['embeddings', 'input_ids'],
          output: ['last_hidden_state'],
          attribute: [{ name: 'axis', i: 0, type: ATTR_INT }],
        },
      ],
      input: [{ name: 'input_ids', type: tensorType(INT64, ['batch', 'sequence']) }],
      output: [{ name: 'last_hidden_state', type: tensorType(FLOAT, ['batch', 'sequence', TINY_DIMS]) }],
    },
  });
  return Model.encode(message).finish();
}

function tokenizerJson(vocab: string[]) {
  const ids = Object.fromEntries(vocab.map((t, i) => [t, i]));
  const special = (content: string) => ({
    id: ids[content],
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIALS.map(special),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: true, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [ids['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [ids['[SEP]']], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: ids,
    },
  };
}

/**
 * Writes `<root>/<modelId>/...` and returns the model id. `onnxFile` picks the
 * weights file name ("model.onnx" is what dtype fp32 loads).
 */
export async function writeTinyModel(root: string, modelId = 'farebox-test/tiny-multilingual', onnxFile = 'model.onnx'): Promise<string> {
  const vocab = [...SPECIALS, ...Object.keys(WORDS)];
  const dir = join(root, ...modelId.split('/'));
  await mkdir(join(dir, 'onnx'), { recursive: true });
  await writeFile(join(dir, 'onnx', onnxFile), tinyModelBytes(vocab));
  await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson(vocab)));
  await writeFile(
    join(dir, 'config.json'),
    JSON.stringify({ model_type: 'bert', architectures: ['BertModel'], hidden_size: TINY_DIMS, vocab_size: vocab.length }),
  );
  await writeFile(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      model_max_length: 512,
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      pad_token: '[PAD]',
      unk_token: '[UNK]',
    }),
  );
  return modelId;
}
