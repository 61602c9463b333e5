// The documentation a newcomer reads stays true to the code: its links lead
// somewhere, the repository paths it quotes exist, the cache version and
// record magic it states are the code's, the configuration table is
// src/config.rs's, and the tool counts it states are what the extension
// registers.
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, test } from 'node:test'
import piFabricMemory from '../extension/index.mjs'
import { agentDirForTests, ROOT } from './helpers.mjs'

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8')
const docsDir = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)
/** The newcomer's documents: what is held to the code now. */
const CURRENT = ['README.md', 'CONTRIBUTING.md', ...docsDir]
/** Every document whose links must resolve (the dated results and the architecture too). */
const LINKED = [...CURRENT, 'ARCHITECTURE.md', 'bench/RESULTS.md']

/** Markdown without its fenced code blocks (links and statements there are examples, not claims). */
const prose = (text: string) => text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '')

/** GitHub's heading anchor: lowercased, punctuation dropped, spaces as hyphens; repeats get -1, -2, … */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading.toLowerCase().replace(/[^\p{L}\p{M}\p{N}_\- ]/gu, '').replace(/ /g, '-')
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    out.add(n ? `${slug}-${n}` : slug)
  }
  return out
}

/** Every file under `dir` (repository-relative), for finding constants wherever a refactor moves them. */
function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(ext))
    .map((f) => join(dir, f))
}
const rustSources = filesUnder('src', '.rs').map((file) => ({ file, text: read(file) }))

describe('links', () => {
  for (const file of LINKED) {
    test(`${file}: every relative link names an existing file, and a heading there`, () => {
      const text = read(file)
      const broken: string[] = []
      for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue // https:, mailto:
        const [path, anchor] = target.split('#')
        const resolved = path ? resolve(ROOT, dirname(file), path) : join(ROOT, file)
        if (!resolved.startsWith(ROOT) || !existsSync(resolved)) {
          broken.push(`${target}: no such file`)
          continue
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(anchor)) {
          broken.push(`${target}: no heading #${anchor} in ${relative(ROOT, resolved)}`)
        }
      }
      assert.deepEqual(broken, [])
    })
  }

  test('the slugs are GitHub\'s', () => {
    assert.deepEqual([...anchors('# In a codemode script (Pi ≥ 1.x)\n## `memory.recall(args)`\n## Settings, `/memory` and use from code\n## Tools\n### Tools\n')], [
      'in-a-codemode-script-pi--1x',
      'memoryrecallargs',
      'settings-memory-and-use-from-code',
      'tools',
      'tools-1',
    ])
  })
})

/** Paths the docs give as examples of input, not as files of this repository. */
const EXAMPLES = new Set(['src/foo.ts'])

test('every repository path the docs quote exists', () => {
  const missing: string[] = []
  for (const file of CURRENT) {
    for (const [, span] of read(file).matchAll(/`([^`\n]+)`/g)) {
      const path = span.replace(/[),.:;]+$/, '')
      if (EXAMPLES.has(path) || !/^(src|extension|extensions|__test__|bench|scripts|fuzz|npm|tests|\.github|\.ci)\/[\w./-]*\w$/.test(path)) continue
      if (!existsSync(join(ROOT, path))) missing.push(`${file}: ${path}`)
    }
  }
  assert.deepEqual(missing, [])
})

describe('the cache version and record magic the docs state are the code\'s', () => {
  const versions = rustSources.flatMap(({ file, text }) => [...text.matchAll(/\bconst CACHE_VERSION: u32 = (\d+);/g)].map((m) => ({ file, version: Number(m[1]) })))
  const magics = new Set(rustSources.flatMap(({ text }) => [...text.matchAll(/b"(PFMIDX[0-9A-Z]{2})"/g)].map((m) => m[1])))

  test('the code has one cache version and its magics', () => {
    assert.equal(versions.length, 1, JSON.stringify(versions))
    assert.ok(magics.size >= 3, [...magics].join(', '))
  })

  test('every statement of it in the docs and ARCHITECTURE.md', () => {
    const code = versions[0].version
    const stated: string[] = []
    const wrong: string[] = []
    for (const file of [...CURRENT, 'ARCHITECTURE.md']) {
      const text = prose(read(file))
      for (const m of text.matchAll(/\bcache ?version:? `?(\d+)|`cacheVersion:? (\d+)`|\bcacheVersion`? (\d+)|\bCache V(\d+)/gi)) {
        const version = Number(m[1] ?? m[2] ?? m[3] ?? m[4])
        stated.push(`${file}: ${m[0]}`)
        if (version !== code) wrong.push(`${file}: "${m[0]}" (the code: ${code})`)
      }
      for (const [magic] of text.matchAll(/\bPFMIDX[0-9A-Z]{2}\b/g)) if (!magics.has(magic)) wrong.push(`${file}: ${magic} is no magic of src/`)
    }
    assert.deepEqual(wrong, [])
    assert.ok(stated.some((s) => s.startsWith('docs/')), `the docs state the cache version (found: ${stated.join('; ')})`)
  })
})

/** The rows of every markdown table in `text`, each with the heading above it and its cells. */
function tables(text: string): { heading: string; header: string[]; rows: string[][] }[] {
  const out: { heading: string; header: string[]; rows: string[][] }[] = []
  let heading = ''
  const lines = prose(text).split('\n')
  const cells = (line: string) => line.slice(1, -1).split('|').map((c) => c.trim())
  for (let i = 0; i < lines.length; i++) {
    if (/^#{1,6} /.test(lines[i])) heading = lines[i]
    if (lines[i].startsWith('|') && lines[i + 1]?.startsWith('|---')) {
      const table = { heading, header: cells(lines[i]), rows: [] as string[][] }
      for (i += 2; lines[i]?.startsWith('|'); i++) table.rows.push(cells(lines[i]))
      out.push(table)
    }
  }
  return out
}

/** A number as the table writes it (`1,024`, `524288`). */
const num = (cell: string) => Number(cell.replace(/[`,]/g, ''))

describe('docs/configuration.md is src/config.rs', () => {
  const config = read('src/config.rs')
  const constants = Object.fromEntries([...config.matchAll(/const (\w+): u64 = ([\w *]+);/g)].map(([, name, value]) => [name, value]))
  /** A bound as config.rs writes it: `100_000`, `64 * MIB`, `KIB`. */
  const evaluate = (expr: string): number =>
    expr.split('*').map((part) => part.trim()).reduce((product, part) => product * (/^[\d_]+$/.test(part) ? Number(part.replace(/_/g, '')) : evaluate(constants[part])), 1)
  const defaults = Object.fromEntries([.../impl Default for Config[\s\S]*?Config \{([\s\S]*?)\n {4}\}/.exec(config)![1].matchAll(/(\w+): ([\w_]+),/g)].map(([, field, value]) => [field, value]))
  const fieldDefault = (field: string) => {
    const value = defaults[field]
    assert.ok(value !== undefined, `config.rs: no default for ${field}`)
    return value === 'true' || value === 'false' ? value : value === 'None' ? null : String(Number(value.replace(/_/g, '')))
  }
  const code = [
    ...[...config.matchAll(/boolean\(map, "(\w+)", &mut config\.(\w+)\)/g)].map(([, key, field]) => ({ key, type: 'boolean', default: fieldDefault(field), bounds: null })),
    ...[...config.matchAll(/integer\(map, "(\w+)", ([^,]+), ([^,]+), &mut config\.(\w+)\)/g)].map(([, key, min, max, field]) => ({
      key,
      type: 'integer',
      default: fieldDefault(field),
      bounds: [evaluate(min), evaluate(max)],
    })),
    ...[...config.matchAll(/map\.get\("(\w+)"\)/g)].map(([, key]) => ({ key, type: 'path', default: null, bounds: null })),
    ...[...config.matchAll(/text\(map, "(\w+)", &mut config\.(\w+)\)/g)].map(([, key]) => ({ key, type: 'string', default: null, bounds: null })),
  ].sort((a, b) => a.key.localeCompare(b.key))

  const docs = read('docs/configuration.md')
  const addon = tables(docs).find((t) => t.header.join('|') === 'key|type|default|bounds|what it does')!
  const documented = addon.rows
    .map(([key, type, def, bounds]) => ({
      key: key.replace(/`/g, ''),
      type,
      default: type === 'path' || type === 'string' ? null : type === 'boolean' ? def.replace(/`/g, '') : String(num(def)),
      bounds: bounds === '—' ? null : bounds.split('–').map(num),
    }))
    .sort((a, b) => a.key.localeCompare(b.key))

  test('the parser read config.rs (every key, typed)', () => {
    assert.ok(code.length >= 19, `${code.length} keys`)
    assert.deepEqual(code.find((k) => k.key === 'maxSyncSourceBytes'), { key: 'maxSyncSourceBytes', type: 'integer', default: '536870912', bounds: [1024, 8 * 1024 ** 3] })
  })

  test('the addon table has every key of config.rs, with its type, default and bounds, and no other', () => {
    assert.deepEqual(documented, code)
  })

  test('the extension-only keys are not the addon\'s, and the extension reads them', () => {
    const extension = filesUnder('extension', '.mts').map(read).join('\n')
    const only = tables(docs).find((t) => t.heading === addon.heading && t.header.join('|') === 'key|default|what it does')!
    const keys = only.rows.map(([key]) => key.replace(/`/g, ''))
    assert.deepEqual(keys, ['warmUp', 'tools'])
    for (const key of keys) {
      assert.ok(!code.some((k) => k.key === key), `${key} is not in config.rs`)
      assert.match(extension, new RegExp(`\\.${key} ===`), `the extension reads memory.${key}`)
    }
  })

  test('the curated-memory limits are the store\'s', () => {
    const curated = tables(docs).find((t) => t.heading.includes('`pi-memory`'))!
    for (const key of ['memoryCharLimit', 'userCharLimit']) {
      const bound = rustSources.map(({ text }) => new RegExp(`bounded\\("${key}", [^,]+, ([\\d_]+), ([\\d_]+), ([\\d_]+)\\)`).exec(text)).find(Boolean)
      assert.ok(bound, `a bounded("${key}", …) in src/`)
      const row = curated.rows.find(([k]) => k === `\`${key}\``)!
      assert.equal(num(row[1]), Number(bound[3].replace(/_/g, '')), `${key} default`)
      const [min, max] = [bound[1], bound[2]].map((n) => Number(n.replace(/_/g, '')).toLocaleString('en-US'))
      assert.ok(row[2].includes(`integer ${min}–${max}`), `${key} bounds: ${row[2]}`)
    }
  })

  test("the README's table agrees with docs/configuration.md", () => {
    const byKey = new Map<string, string>()
    for (const table of tables(docs)) {
      const prefix = /`([\w.-]+)`/.exec(table.heading)?.[1]
      if (!prefix) continue
      for (const [key, ...rest] of table.rows) byKey.set(`${prefix}.${key.replace(/`/g, '')}`, rest[table.header.indexOf('default') - 1])
    }
    const readme = tables(read('README.md')).find((t) => t.heading === '## Configuration')!
    assert.ok(readme.rows.length >= 8)
    for (const [key, def] of readme.rows) {
      const name = key.replace(/`/g, '')
      assert.equal(def, byKey.get(name), `${name}: the README says ${def}, docs/configuration.md ${byKey.get(name)}`)
    }
  })

  test('to_json spells every key from_json reads (the `config` getter, doctor)', () => {
    const spelled = [.../fn to_json[\s\S]*?json!\(\{([\s\S]*?)\}\)/.exec(config)![1].matchAll(/"(\w+)":/g)].map(([, key]) => key).sort()
    assert.deepEqual(spelled, code.map((k) => k.key).sort())
  })
})

describe('the tool counts the docs state', () => {
  agentDirForTests('pfm-docs-')
  const tools: { name: string; exposure?: string }[] = []
  piFabricMemory({ registerTool: (tool: { name: string }) => tools.push(tool), registerCommand: () => {}, on: () => {}, appendEntry: () => {} } as never)
  const RECALL = ['memory_recall', 'memory_expand', 'memory_sessions', 'memory_pack']
  const counts: Record<string, number> = {
    '': tools.length,
    memory: tools.filter((t) => !RECALL.includes(t.name)).length,
    curated: tools.filter((t) => !RECALL.includes(t.name)).length,
    recall: tools.filter((t) => RECALL.includes(t.name)).length,
    declared: tools.filter((t) => t.exposure !== 'codemode').length,
  }
  const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve']

  test('the extension registers 9 tools: 4 recall, 5 curated, 5 declared', () => {
    assert.deepEqual(counts, { '': 9, memory: 5, curated: 5, recall: 4, declared: 5 })
  })

  test('"N tools", "N memory tools", "N recall tools", "N declared tools" in the docs and ARCHITECTURE.md', () => {
    const wrong: string[] = []
    let seen = 0
    for (const file of [...CURRENT, 'ARCHITECTURE.md']) {
      for (const m of prose(read(file)).matchAll(/\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve) (?:(memory|curated|recall|declared) )?tools\b/gi)) {
        seen++
        const said = WORDS.indexOf(m[1].toLowerCase())
        const kind = (m[2] ?? '').toLowerCase()
        if (said !== counts[kind]) wrong.push(`${file}: "${m[0]}" (there are ${counts[kind]})`)
      }
      for (const m of read(file).matchAll(/\b(\w+) are declared to the model\b/gi)) {
        seen++
        if (WORDS.indexOf(m[1].toLowerCase()) !== counts.declared) wrong.push(`${file}: "${m[0]}"`)
      }
    }
    assert.deepEqual(wrong, [])
    assert.ok(seen >= 5, `${seen} statements checked`)
  })

  test("the README's tool table lists every tool with its exposure", () => {
    const table = tables(read('README.md')).find((t) => t.heading === '## Tools')!
    assert.deepEqual(
      table.rows.map(([name, declared]) => [name.replace(/`/g, ''), declared]),
      tools.map((t) => [t.name, t.exposure === 'codemode' ? 'codemode' : 'yes']),
    )
  })
})

test('statSync finds every doc (the lists above are not empty)', () => {
  assert.ok(docsDir.length >= 6, docsDir.join(', '))
  for (const file of LINKED) assert.ok(statSync(join(ROOT, file)).isFile(), file)
})
