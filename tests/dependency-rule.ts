// The dependency rule of docs/architecture.md ("Dependencies point one way"),
// as functions over data: the workspaces' manifests, the layers block of the
// doc, and the workspaces' source files. tests/imports.test.ts runs them over
// the tree and over planted fixtures; tests/architecture.test.ts compares the
// doc's blocks with the manifests.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix, resolve } from 'node:path';

export const DEP_KINDS = ['dependencies', 'optionalDependencies', 'peerDependencies', 'devDependencies'] as const;
export type DepKind = (typeof DEP_KINDS)[number];

export interface Workspace {
  /** Folder, relative to the repository root, with `/`: `packages/client`. */
  dir: string;
  /** Package name: `@farebox/client`. */
  name: string;
  /** The name without `@farebox/`, as the doc writes it. */
  short: string;
  private: boolean;
  /** Its dependencies of each kind on other workspaces (short names). */
  deps: Record<DepKind, string[]>;
}

export interface Layers {
  /** Layer of each workspace (short name). */
  layer: Map<string, number>;
  /** The layers' labels (`apps`, `top`) by number. */
  labels: Map<number, string>;
  /** Workspaces beside the layers (test-kit): a devDependency of anyone, depending only on what each user may. */
  beside: Set<string>;
  /** Edges allowed against the layers: `from -> to`. */
  exceptions: Set<string>;
}

export const shortName = (name: string) => name.replace(/^@farebox\//, '');

/** The fenced block ```<info> of a markdown text, as lines. */
export function fencedBlock(markdown: string, info: string): string[] {
  const m = new RegExp(`^\`\`\`${info}\\s*\\n([\\s\\S]*?)^\`\`\``, 'm').exec(markdown);
  if (!m) throw new Error(`no \`\`\`${info} block`);
  return m[1]!
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

const list = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** The ```layers block: `<n> [(label)]: a, b`, `beside: x`, `exception: a -> b`. */
export function parseLayers(markdown: string): Layers {
  const layers: Layers = { layer: new Map(), labels: new Map(), beside: new Set(), exceptions: new Set() };
  for (const line of fencedBlock(markdown, 'layers')) {
    let m: RegExpExecArray | null;
    if ((m = /^(\d+)\s*(?:\(([^)]+)\))?\s*:\s*(.+)$/.exec(line))) {
      const n = Number(m[1]);
      if (m[2]) layers.labels.set(n, m[2]);
      for (const name of list(m[3]!)) {
        if (layers.layer.has(name) || layers.beside.has(name)) throw new Error(`${name} is on two layers`);
        layers.layer.set(name, n);
      }
    } else if ((m = /^beside\s*:\s*(.+)$/.exec(line))) {
      for (const name of list(m[1]!)) layers.beside.add(name);
    } else if ((m = /^exception\s*:\s*(\S+)\s*->\s*(\S+)$/.exec(line))) {
      layers.exceptions.add(`${m[1]} -> ${m[2]}`);
    } else throw new Error(`unreadable line in the layers block: ${line}`);
  }
  return layers;
}

export interface DeclaredDeps {
  /** `dependencies` and `optionalDependencies`. */
  run: string[];
  peer: string[];
  dev: string[];
}

/** The ```dependencies block: `name[ ──► a, b][; peer: c][; dev: d, e][ # comment]`, one line per workspace. */
export function parseDependencies(markdown: string): Map<string, DeclaredDeps> {
  const out = new Map<string, DeclaredDeps>();
  for (const raw of fencedBlock(markdown, 'dependencies')) {
    const line = raw.replace(/\s+#.*$/, '');
    const [head, ...parts] = line.split(';').map((s) => s.trim());
    const [name, run] = head!.split(/\s*──►\s*/);
    const entry: DeclaredDeps = { run: list(run ?? ''), peer: [], dev: [] };
    for (const part of parts) {
      const m = /^(peer|dev)\s*:\s*(.*)$/.exec(part);
      if (!m) throw new Error(`unreadable part "${part}" in: ${raw}`);
      entry[m[1] as 'peer' | 'dev'] = list(m[2]!);
    }
    if (out.has(name!)) throw new Error(`${name} appears twice in the dependencies block`);
    out.set(name!, entry);
  }
  return out;
}

/** What the manifests say, in the shape of the dependencies block. */
export function manifestDeps(w: Workspace): DeclaredDeps {
  return { run: [...new Set([...w.deps.dependencies, ...w.deps.optionalDependencies])], peer: w.deps.peerDependencies, dev: w.deps.devDependencies };
}

interface Manifest {
  name?: string;
  private?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** The workspaces of pnpm-workspace.yaml (`dir/*` and `dir` patterns), with their manifests. */
export function loadWorkspaces(root: string): Workspace[] {
  const yaml = readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8');
  const section = /^packages:\s*\n((?:[ \t]+(?:-.*|#.*)\n?)+)/m.exec(yaml);
  if (!section) throw new Error('pnpm-workspace.yaml lists no packages');
  const patterns = [...section[1]!.matchAll(/^\s*-\s*['"]?([^'"\s#]+)['"]?/gm)].map((m) => m[1]!);
  const dirs = patterns.flatMap((p) => {
    if (!p.endsWith('/*')) return [p];
    const parent = p.slice(0, -2);
    return readdirSync(join(root, parent), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `${parent}/${e.name}`);
  });
  const manifests = dirs
    .filter((d) => existsSync(join(root, d, 'package.json')))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Manifest }));
  const names = new Set(manifests.map((m) => m.manifest.name));
  return manifests.map(({ dir, manifest }) => ({
    dir,
    name: manifest.name!,
    short: shortName(manifest.name!),
    private: manifest.private === true,
    deps: Object.fromEntries(
      DEP_KINDS.map((kind) => [
        kind,
        Object.keys(manifest[kind] ?? {})
          .filter((n) => names.has(n))
          .map(shortName),
      ]),
    ) as Record<DepKind, string[]>,
  }));
}

/** Every problem with the manifests under the layers: each line names the manifest and the dependency. */
export function checkManifests(workspaces: Workspace[], layers: Layers): string[] {
  const problems: string[] = [];
  const byShort = new Map(workspaces.map((w) => [w.short, w]));
  const appsLayer = [...layers.labels].find(([, label]) => label === 'apps')?.[0] ?? Number.POSITIVE_INFINITY;
  const layerText = (name: string) =>
    layers.beside.has(name)
      ? 'beside the layers'
      : `layer ${layers.layer.get(name)}${layers.labels.has(layers.layer.get(name)!) ? ` (${layers.labels.get(layers.layer.get(name)!)})` : ''}`;
  const runtime = (w: Workspace) => [...w.deps.dependencies, ...w.deps.optionalDependencies, ...w.deps.peerDependencies];

  /** Why `from` may not depend on `to`, or undefined when it may (the layers alone; test-kit is handled by its users). */
  const refusal = (from: string, to: string): string | undefined => {
    if (layers.exceptions.has(`${from} -> ${to}`)) return undefined;
    const a = layers.layer.get(from);
    const b = layers.layer.get(to);
    if (a === undefined || b === undefined) return undefined; // reported as unplaced
    if (b < a) return undefined;
    if (b >= appsLayer && a < appsLayer) return 'a package depends on an app';
    if (b >= appsLayer && a === appsLayer) return 'an app depends on another app';
    return b === a ? 'a dependency on the same layer' : 'a dependency on a higher layer';
  };

  for (const w of workspaces) {
    if (!layers.layer.has(w.short) && !layers.beside.has(w.short)) problems.push(`${w.dir}/package.json: ${w.name} is on no layer of docs/architecture.md`);
  }
  for (const w of workspaces) {
    if (layers.beside.has(w.short)) continue;
    for (const kind of DEP_KINDS) {
      for (const to of w.deps[kind]) {
        const target = byShort.get(to)!;
        if (layers.beside.has(to)) {
          if (kind !== 'devDependencies')
            problems.push(`${w.dir}/package.json: ${kind} ${target.name}: ${target.name} is a devDependency only (private, beside the layers)`);
          for (const inner of runtime(target)) {
            const why = refusal(w.short, inner);
            if (why)
              problems.push(
                `${w.dir}/package.json: ${kind} ${target.name}, which depends on @farebox/${inner}: ${why} (${w.short}: ${layerText(w.short)}, ${inner}: ${layerText(inner)})`,
              );
          }
          continue;
        }
        const why = refusal(w.short, to);
        if (why) problems.push(`${w.dir}/package.json: ${kind} ${target.name}: ${why} (${w.short}: ${layerText(w.short)}, ${to}: ${layerText(to)})`);
        if (!w.private && kind !== 'devDependencies' && target.private)
          problems.push(`${w.dir}/package.json: ${kind} ${target.name}: a published package depends on a private one`);
      }
    }
  }
  // Beside the layers: never on an app, whoever uses it.
  for (const name of layers.beside) {
    const w = byShort.get(name);
    if (!w) continue;
    for (const kind of DEP_KINDS) {
      for (const to of w.deps[kind]) {
        if ((layers.layer.get(to) ?? -1) >= appsLayer) problems.push(`${w.dir}/package.json: ${kind} @farebox/${to}: ${name} depends on an app`);
      }
    }
  }
  for (const cycle of cycles(workspaces)) problems.push(`a dependency cycle: ${cycle.join(' -> ')}`);
  return problems;
}

/** The dependency cycles (any kind of dependency), each as the names along it. */
export function cycles(workspaces: Workspace[]): string[][] {
  const edges = new Map(workspaces.map((w) => [w.short, [...new Set(DEP_KINDS.flatMap((k) => w.deps[k]))]]));
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (n: string) => {
    if (state.get(n) === 'done') return;
    if (state.get(n) === 'open') {
      found.push([...path.slice(path.indexOf(n)), n]);
      return;
    }
    state.set(n, 'open');
    path.push(n);
    for (const m of edges.get(n) ?? []) visit(m);
    path.pop();
    state.set(n, 'done');
  };
  for (const n of edges.keys()) visit(n);
  return found;
}

export interface SourceFile {
  /** The workspace's folder (`apps/cli`). */
  workspace: string;
  /** The file, relative to the repository root, with `/`. */
  path: string;
  text: string;
}

const SKIP_DIRS = new Set(['node_modules', 'dist', 'coverage', '.turbo', '.farebox', 'templates']);

/** Every source file of every workspace (scaffolding templates and build output left out). */
export function loadSources(root: string, workspaces: Workspace[]): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (workspace: string, dir: string) => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name)) walk(workspace, path);
      } else if (/\.(ts|tsx|mts|cts|js|mjs|cjs)$/.test(e.name) && !/\.d\.[mc]?ts$/.test(e.name)) {
        out.push({ workspace, path, text: readFileSync(join(root, path), 'utf8') });
      }
    }
  };
  for (const w of workspaces) walk(w.dir, w.dir);
  return out;
}

/** Code without comments (a comment may show an import in an example). */
const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/**
 * Every module a file names: imports, re-exports, dynamic imports, `require()`,
 * and `new URL(path, import.meta.url)`. (A `resolve()` of a package from the
 * user's folder, as `farebox dev` finds an installed gateway, is a lookup at
 * run time, not a dependency.)
 */
export function references(text: string): Array<{ spec: string; how: 'import' | 'url' }> {
  const code = withoutComments(text);
  const out: Array<{ spec: string; how: 'import' | 'url' }> = [];
  for (const m of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"]([^'"]+)['"]/g)) out.push({ spec: m[1]!, how: 'import' });
  for (const m of code.matchAll(/\bnew\s+URL\s*\(\s*['"](\.{1,2}\/[^'"]*)['"]\s*,\s*import\.meta\.url/g)) out.push({ spec: m[1]!, how: 'url' });
  return out;
}

/** Every problem with the files' references to other workspaces. */
export function checkImports(files: SourceFile[], workspaces: Workspace[]): string[] {
  const problems: string[] = [];
  const byName = new Map(workspaces.map((w) => [w.name, w]));
  const byDir = new Map(workspaces.map((w) => [w.dir, w]));
  const owner = (path: string) => workspaces.find((w) => path === w.dir || path.startsWith(`${w.dir}/`));
  for (const file of files) {
    const self = byDir.get(file.workspace);
    if (!self) throw new Error(`${file.path}: no workspace ${file.workspace}`);
    const inSrc = file.path.startsWith(`${self.dir}/src/`);
    for (const { spec, how } of references(file.text)) {
      if (spec.startsWith('.')) {
        const target = posix.normalize(posix.join(posix.dirname(file.path), spec));
        const other = owner(target);
        if (other && other !== self)
          problems.push(
            `${file.path}: reaches into ${other.dir} by path (${how === 'url' ? `new URL('${spec}')` : `'${spec}'`}): use ${other.name} through its package name and exports`,
          );
        continue;
      }
      const m = /^(@farebox\/[^/]+)(\/.*)?$/.exec(spec);
      if (!m) continue;
      const target = byName.get(m[1]!);
      if (!target || target === self) continue;
      if (m[2] && /^\/(src|test|dist)(\/|$)/.test(m[2])) problems.push(`${file.path}: imports ${spec}: another workspace's internals (use its exports)`);
      const listed = DEP_KINDS.filter((k) => self.deps[k].includes(target.short));
      if (listed.length === 0) problems.push(`${file.path}: imports ${target.name}, which ${self.dir}/package.json does not list`);
      else if (inSrc && listed.every((k) => k === 'devDependencies'))
        problems.push(`${file.path}: src/ imports ${target.name}, a devDependency only of ${self.dir}`);
    }
  }
  return problems;
}

/** The repository's root folder. */
export const repoRoot = resolve(import.meta.dirname, '..');
