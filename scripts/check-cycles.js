#!/usr/bin/env node
// Import-cycle check over lib/ and decorators/: every relative import (type-only ones included, since a
// type cycle is still a layering cycle) is an edge. Reports each file-level cycle with its files and fails
// when there is one; cycles between lib/'s top-level folders (lib/model <-> lib/server, say) fail it too.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const root = path.resolve(__dirname, '..');
const roots = ['lib', 'decorators'];

/** Every .ts file (not .d.ts) under `dir`, as paths relative to the repository root. */
function listFiles(dir) {
  const out = [];
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(rel));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** The file a relative specifier names, as TypeScript resolves it; undefined outside the checked files. */
function resolve(from, spec, known) {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec)).replace(/\.js$/, '');
  for (const candidate of [base, `${base}.ts`, `${base}/index.ts`]) if (known.has(candidate)) return candidate;
  return undefined;
}

/** Import graph: file → files it imports. */
function buildGraph() {
  const files = roots.filter((r) => fs.existsSync(path.join(root, r))).flatMap(listFiles).sort();
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const source = fs.readFileSync(path.join(root, file), 'utf8');
    const targets = new Set();
    for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolve(file, fileName, known);
      if (target !== undefined) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** Strongly connected components with a cycle in them (Tarjan), each sorted. */
function cyclicComponents(graph) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  const visit = (node) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node), index.get(next)));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      const selfLoop = component.length === 1 && (graph.get(node) ?? []).includes(node);
      if (component.length > 1 || selfLoop) components.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return components.sort((a, b) => a[0].localeCompare(b[0]));
}

/** One shortest cycle through `start` inside `members` (breadth-first), as a path that ends where it began. */
function cycleThrough(graph, start, members) {
  const inside = new Set(members);
  const previous = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const next of graph.get(node) ?? []) {
      if (!inside.has(next)) continue;
      if (next === start) {
        const cycle = [start];
        for (let at = node; at !== start; at = previous.get(at)) cycle.splice(1, 0, at);
        return [...cycle, start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

/** The folder graph: lib/<folder> → lib/<folder> for each import between two different top-level folders. */
function folderGraph(graph) {
  const folderOf = (file) => {
    const parts = file.split('/');
    return parts[0] === 'lib' && parts.length > 2 ? `lib/${parts[1]}` : undefined;
  };
  const folders = new Map();
  const witnesses = new Map();
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    if (from === undefined) continue;
    if (!folders.has(from)) folders.set(from, new Set());
    for (const target of targets) {
      const to = folderOf(target);
      if (to === undefined || to === from) continue;
      folders.get(from).add(to);
      const key = `${from} -> ${to}`;
      if (!witnesses.has(key)) witnesses.set(key, []);
      witnesses.get(key).push(`${file} -> ${target}`);
    }
  }
  return { graph: new Map([...folders].map(([k, v]) => [k, [...v].sort()])), witnesses };
}

function main() {
  const graph = buildGraph();
  const fileCycles = cyclicComponents(graph);
  console.log(`import cycles between files (${graph.size} files checked under ${roots.join(', ')}):`);
  if (fileCycles.length === 0) console.log('  none');
  for (const component of fileCycles) {
    console.log(`  cycle of ${component.length} file(s): ${component.join(', ')}`);
    console.log(`    e.g. ${cycleThrough(graph, component[0], component).join(' -> ')}`);
  }

  const folders = folderGraph(graph);
  const folderCycles = cyclicComponents(folders.graph);
  console.log('import cycles between top-level folders of lib/:');
  if (folderCycles.length === 0) console.log('  none');
  for (const component of folderCycles) {
    const cycle = cycleThrough(folders.graph, component[0], component);
    console.log(`  ${cycle.join(' -> ')}${component.length > cycle.length - 1 ? ` (component: ${component.join(', ')})` : ''}`);
    for (let i = 0; i + 1 < cycle.length; i++) {
      const edges = folders.witnesses.get(`${cycle[i]} -> ${cycle[i + 1]}`) ?? [];
      console.log(`    ${edges.slice(0, 3).join('; ')}${edges.length > 3 ? `; and ${edges.length - 3} more` : ''}`);
    }
  }

  if (fileCycles.length > 0 || folderCycles.length > 0) {
    console.log(`${fileCycles.length} file-level and ${folderCycles.length} folder-level import cycle(s)`);
    process.exitCode = 1;
  }
}

main();
