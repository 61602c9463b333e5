#!/usr/bin/env node
// Deterministic synthetic corpus of Pi coding-agent sessions (v3 JSONL) for the benchmark.
//
//   import { generateCorpus, SIZES } from './corpus.mjs'
//   const manifest = generateCorpus({ dir, size: 'medium', seed: 42, onProgress })
//
// CLI:  node bench/corpus.mjs <dir> [size=medium] [seed=42]
//
// Writes a real Pi agent dir: <dir>/sessions/--<encoded cwd>--/<fileTimestamp>_<uuid>.jsonl,
// plus <dir>/corpus-manifest.json (the returned manifest, with the planted needles).
// Plain ESM, Node >= 20, node: builtins only. No Date.now()/Math.random(): the same
// (size, seed) always gives byte-identical files (and identical mtimes).
//
// Shape of a session (as Pi 0.80 writes it; key order as in Pi's SessionManager):
//   header, model_change (parentId null), thinking_level_change, then turns: a user
//   message, assistant messages (some with `thinking` + signature) calling read/edit/
//   write/bash/grep/find/ls (and fabric_exec) with toolResults in call order (~5%
//   isError), aborted/error assistant turns, bashExecution messages (exit 0, non-zero,
//   cancelled), compactions, labels, custom and custom_message entries, session_info,
//   model/thinking changes; ~10% of sessions have a /tree branch (a branch_summary whose
//   parentId is an earlier turn end, so the turns after it become an abandoned sibling).
//
// Needles (see README.md): every planted token is made of letters that the generator's
// vocabulary can never produce (each contains a `q` not followed by `u`; no generated
// word, template or identifier has one), and is >= 9 characters, so raw-byte scanners
// (ripgrep) cannot hit it by chance inside random base64/ids either.

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import zlib from 'node:zlib'
import { encodeCwd } from '../dist/extension/shared/pi-paths.mjs'

export const GENERATOR_VERSION = 2
/** 2026-06-01T00:00:00.000Z: the first session starts here; sessions follow one another. */
export const BASE_TIME = Date.UTC(2026, 5, 1)
/**
 * File mtimes count back from here, one minute apart in session order, so every
 * corpus (even `huge`) lies in the past: a file dated in the future can never be
 * proven unchanged by its stamp and would be re-hashed on every call.
 */
export const MTIME_CEILING = BASE_TIME
const MTIME_SPACING_MS = 60_000
/** The engine's default `hotSessions` (newest N sessions by mtime are hot). */
export const HOT_SESSIONS = 50

/**
 * Corpus sizes. `entries` is the per-session entry-count distribution (log-normal,
 * clamped); `approxBytes` is what the generator measures for seed 42 (see README).
 */
export const SIZES = {
  /** For tests: ~2 MB, every feature present. */
  tiny: { sessions: 10, entries: { mean: 110, sigma: 0.25, min: 60, max: 180 }, approxBytes: 2.2e6 },
  /** The reference benchmark's shape: 13 sessions x ~500 entries, ~14 MB. */
  ref: { sessions: 13, entries: { mean: 500, sigma: 0, min: 500, max: 500 }, approxBytes: 14.1e6 },
  small: { sessions: 66, entries: { mean: 140, sigma: 0.8, min: 12, max: 1500 }, approxBytes: 20.1e6 },
  medium: { sessions: 1000, entries: { mean: 145, sigma: 0.8, min: 12, max: 1500 }, approxBytes: 301e6 },
  large: { sessions: 5000, entries: { mean: 198, sigma: 0.8, min: 12, max: 2500 }, approxBytes: 2.0e9 },
  /** Years of heavy use: 100,000 small sessions (opt-in). */
  huge: { sessions: 100000, entries: { mean: 16, sigma: 0.4, min: 12, max: 60 }, approxBytes: 3.4e9 },
}

// ---------------------------------------------------------------------------
// PRNG (exported with the id, time and usage helpers below for bench/quality's session writer)
// ---------------------------------------------------------------------------

/** FNV-1a over the parts, then a murmur3 finalizer. */
export function hash32(...parts) {
  let h = 0x811c9dc5
  const s = parts.join('\u0000')
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/** mulberry32 */
export class Rng {
  constructor(seed) {
    this.s = seed >>> 0
  }
  u32() {
    let t = (this.s = (this.s + 0x6d2b79f5) | 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }
  next() {
    return this.u32() / 4294967296
  }
  int(n) {
    return Math.floor(this.next() * n)
  }
  range(lo, hi) {
    return lo + this.int(hi - lo + 1)
  }
  chance(p) {
    return this.next() < p
  }
  pick(a) {
    return a[this.int(a.length)]
  }
  /** `weights` parallel to `items`. */
  weighted(items, weights) {
    let total = 0
    for (const w of weights) total += w
    let u = this.next() * total
    for (let i = 0; i < items.length; i++) {
      u -= weights[i]
      if (u < 0) return items[i]
    }
    return items[items.length - 1]
  }
  exp(mean) {
    return -Math.log(1 - this.next()) * mean
  }
  normal() {
    const u = 1 - this.next()
    const v = this.next()
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
  }
  /** Integer from a log-normal with the given mean, clamped. */
  logNormal(mean, sigma, min, max) {
    const mu = Math.log(mean) - (sigma * sigma) / 2
    return Math.max(min, Math.min(max, Math.round(Math.exp(mu + sigma * this.normal()))))
  }
  hex8() {
    return this.u32().toString(16).padStart(8, '0')
  }
  shuffle(a) {
    for (let i = a.length - 1; i > 0; i--) {
      const j = this.int(i + 1)
      ;[a[i], a[j]] = [a[j], a[i]]
    }
    return a
  }
}

const B62 = 'ABCDEFGHIJKLMNOPRSTVWXYZabcdefghijklmnoprstvwxyz0123456789' // no q/Q/u/U: ids never carry a q
export function randomId(rng, n) {
  let s = ''
  for (let i = 0; i < n; i++) s += B62[rng.int(B62.length)]
  return s
}

/** UUID v7 (Pi 0.80 session ids) from a ms timestamp and the PRNG. */
export function uuidv7(ms, rng) {
  const hex = ms.toString(16).padStart(12, '0')
  const r = () => rng.u32().toString(16).padStart(8, '0')
  const a = r()
  const b = r()
  const c = r()
  const variant = ((parseInt(b[0], 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${a.slice(0, 3)}-${variant}${b.slice(1, 4)}-${b.slice(4, 8)}${c}`
}

// ---------------------------------------------------------------------------
// Vocabulary: ~260 common English/code words (the Zipf head) + 6,000 synthetic words.
// Nothing here (nor in any template below) contains a `q` that is not followed by `u`.
// ---------------------------------------------------------------------------

const HEAD = `the to and a of in is it that for this we error with on be test file not as are function
if should now can you build from by config this have but will or value when an type use so check
fix update all run need which then output there make add also do session index cache path
change new module code here one was more case return call result data only failing line first
time after just like what into because error without does missing still same state instead
local read write import export default handler request response server client version
tests failing passes pass fails warning debug log logs query queue list map set key name
string number object array async await promise stream buffer event option options flag
parse load save store fetch send open close start stop start init reset retry timeout
branch commit merge diff patch review refactor rename move delete remove create rebuild
compile lint format schema table field column row record entry entries item items node
tree graph root parent child leaf edge step phase plan task job worker thread pool lock
mutex signal abort cancel status exit code stack trace frame panic crash bug issue ticket
docs readme example usage api route endpoint token auth user admin role permission
memory disk network socket port host url json yaml toml env variable secret setting
component render view page style layout theme color size width height count total limit
offset range start end begin next previous current last latest oldest newest before
after during while until again already maybe probably likely seems looks works broken
correct wrong better worse faster slower simple complex small large empty full valid
invalid unique duplicate equal different similar other another each every both either
should would could might must let try see think want know look find keep get give take`
  .split(/\s+/)
  .filter(Boolean)

const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z', 'br', 'cr', 'dr', 'fl', 'gr', 'pl', 'pr', 'sh', 'sk', 'sl', 'st', 'th', 'tr', 'ch', 'kl', 'sn', '', '']
const NUCLEI = ['a', 'e', 'i', 'o', 'u', 'a', 'e', 'i', 'o', 'ai', 'ea', 'io', 'ou', 'y', 'ei', 'oa']
const CODAS = ['', '', '', '', 'n', 'r', 'l', 's', 't', 'm', 'nd', 'rt', 'x', 'ck', 'ng', 'sh', 'lt', 'mp']

/** Every planted token/word; the vocabulary must never produce them. */
const RESERVED_WORDS = new Set()

function synthWord(rng) {
  const syllables = rng.weighted([2, 3, 4], [5, 4, 1])
  let w = ''
  for (let i = 0; i < syllables; i++) {
    w += rng.pick(ONSETS) + rng.pick(NUCLEI)
    if (i === syllables - 1 || rng.chance(0.3)) w += rng.pick(CODAS)
  }
  return w
}

class Vocabulary {
  constructor(seed) {
    const rng = new Rng(hash32('vocabulary', seed))
    this.head = [...new Set(HEAD)]
    const banned = new Set(this.head)
    const synth = new Set()
    while (synth.size < 6000) {
      const w = synthWord(rng)
      if (w.length >= 4 && w.length <= 12 && !banned.has(w) && !RESERVED_WORDS.has(w) && !/q(?!u)/.test(w)) synth.add(w)
    }
    this.synth = [...synth]
    this.words = [...this.head, ...this.synth]
    // Zipf(s=1.02) over ranks; cumulative table for binary-search sampling.
    const n = this.words.length
    this.cdf = new Float64Array(n)
    let acc = 0
    for (let r = 0; r < n; r++) {
      acc += 1 / Math.pow(r + 2.5, 1.02)
      this.cdf[r] = acc
    }
    this.total = acc
  }
  word(rng) {
    const u = rng.next() * this.total
    const cdf = this.cdf
    let lo = 0
    let hi = cdf.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (cdf[mid] < u) lo = mid + 1
      else hi = mid
    }
    return this.words[lo]
  }
  /** A word from the synthetic tail only (identifiers, project names). */
  tailWord(rng) {
    return this.synth[rng.int(this.synth.length)]
  }
}

// Unicode sprinkles (CJK, accents, emoji, other scripts). None contains "ωmega".
const UNICODE_BITS = [
  'naïve café résumé', 'über-schnell', 'Zürich', 'façade', 'crème brûlée', 'São Paulo', 'jalapeño', 'smörgåsbord',
  '日本語のテスト', '雪が降る', '中文注释', '设置已保存', '한국어 메시지', 'Привет, мир', 'Ελληνικά', 'שלום', 'مرحبا',
  '🚀 shipped', '✅ done', '🔥 hot path', '🐛 bug', '⚠️ careful', '🏔️雪山', '👍', '🎉', '😀', 'ñandú', 'Ångström', 'dŭng',
]

const CAP = (s) => s.charAt(0).toUpperCase() + s.slice(1)

// ---------------------------------------------------------------------------
// Projects (cwds), identifiers, files
// ---------------------------------------------------------------------------

const PROJECTS = [
  { cwd: '/home/dev/src/atlas-api', lang: 'ts', weight: 22 },
  { cwd: '/home/dev/src/ledger-core', lang: 'rust', weight: 18 },
  { cwd: '/home/dev/work/pi-extensions', lang: 'ts', weight: 15 },
  { cwd: '/home/dev/src/orbit.web', lang: 'ts', weight: 12 },
  { cwd: '/home/dev/src/data-pipeline', lang: 'py', weight: 10 },
  { cwd: '/srv/repos/gateway', lang: 'go', weight: 10 },
  { cwd: '/home/dev/notes/handbook', lang: 'md', weight: 7 },
  { cwd: '/home/dev/src/mobile app', lang: 'ts', weight: 6 },
]

const EXT = { ts: ['ts', 'ts', 'tsx', 'json', 'md'], rust: ['rs', 'rs', 'rs', 'toml', 'md'], py: ['py', 'py', 'py', 'toml', 'md'], go: ['go', 'go', 'go', 'mod', 'md'], md: ['md', 'md', 'md', 'yaml', 'json'] }
const VERBS = ['get', 'set', 'load', 'parse', 'build', 'create', 'update', 'resolve', 'render', 'fetch', 'handle', 'apply', 'merge', 'read', 'write', 'emit', 'format', 'validate', 'normalize', 'compute', 'find', 'init', 'reset', 'flush', 'sync', 'open', 'close', 'start', 'stop', 'ensure', 'collect', 'index', 'scan', 'match', 'encode', 'decode', 'register', 'dispatch']
const TYPE_SUFFIX = ['', '', 'Config', 'State', 'Error', 'Options', 'Handler', 'Store', 'Client', 'Result', 'Entry', 'Record', 'Builder', 'Service']


class Project {
  /** @type {string} */ cwd
  /** @type {string} */ lang
  /** @type {number} */ weight
  constructor(index, spec, vocab, seed) {
    Object.assign(this, spec)
    this.index = index
    this.vocab = vocab
    this.seed = seed
    const rng = new Rng(hash32('project', seed, index))
    const domain = new Set()
    while (domain.size < 160) domain.add(vocab.tailWord(rng))
    this.domain = [...domain]
    const top = this.lang === 'md' ? ['docs', 'guides', 'notes', 'adr'] : this.lang === 'go' ? ['cmd', 'internal', 'pkg'] : this.lang === 'py' ? ['src', 'tests', 'scripts'] : ['src', 'tests', 'lib', 'scripts']
    this.dirs = []
    for (let i = 0; i < 12; i++) this.dirs.push(i < top.length ? top[i] : `${rng.pick(top)}/${rng.pick(this.domain)}`)
    const files = new Set()
    while (files.size < 140) {
      const ext = rng.pick(EXT[this.lang])
      const base = rng.chance(0.5) ? rng.pick(this.domain) : `${rng.pick(this.domain)}${this.lang === 'py' || this.lang === 'rust' ? '_' : '-'}${rng.pick(this.domain)}`
      files.add(`${rng.pick(this.dirs)}/${base}.${ext}`)
    }
    this.files = [...files]
    this.fileCache = new Map()
  }
  ident(rng) {
    const a = rng.pick(this.domain)
    switch (rng.int(4)) {
      case 0:
        return rng.pick(VERBS) + CAP(a)
      case 1:
        return rng.pick(VERBS) + CAP(a) + CAP(rng.pick(this.domain))
      case 2:
        return `${a}_${rng.pick(this.domain)}`
      default:
        return a
    }
  }
  type(rng) {
    return CAP(rng.pick(this.domain)) + rng.pick(TYPE_SUFFIX)
  }
  snake(rng) {
    return rng.chance(0.5) ? rng.pick(this.domain) : `${rng.pick(VERBS)}_${rng.pick(this.domain)}`
  }
  file(rng) {
    // Skewed: a few hot files are read/edited much more often.
    const i = Math.min(this.files.length - 1, Math.floor(rng.exp(18)))
    return this.files[i]
  }
  dir(rng) {
    return rng.pick(this.dirs)
  }
  /** Content of a project file: a pure function of (seed, project, file). */
  content(file) {
    let text = this.fileCache.get(file)
    if (text === undefined) {
      const rng = new Rng(hash32('file', this.seed, this.index, file))
      const lines = rng.logNormal(170, 0.9, 6, 1500)
      text = codeText(rng, this, file, lines)
      this.fileCache.set(file, text)
    }
    return text
  }
}

// ---------------------------------------------------------------------------
// Text builders
// ---------------------------------------------------------------------------

function sentence(rng, P, minWords = 6, maxWords = 18) {
  const n = rng.range(minWords, maxWords)
  const v = P.vocab
  let s = CAP(v.word(rng))
  for (let i = 1; i < n; i++) {
    const r = rng.next()
    if (r < 0.06) s += ` \`${P.ident(rng)}\``
    else if (r < 0.09) s += ` ${P.file(rng)}`
    else if (r < 0.1) s += ` ${rng.int(2000)}`
    else s += ` ${v.word(rng)}`
    if (rng.chance(0.06)) s += ','
  }
  if (rng.chance(0.04)) s += ` ${rng.pick(UNICODE_BITS)}`
  return s + (rng.chance(0.1) ? '?' : '.')
}

function prose(rng, P, minChars, maxChars = minChars * 2) {
  const target = rng.range(minChars, maxChars)
  let s = sentence(rng, P)
  while (s.length < target) s += (rng.chance(0.12) ? '\n\n' : ' ') + sentence(rng, P)
  return s
}

function shortPhrase(rng, P, n = rng.range(3, 6)) {
  let s = P.vocab.word(rng)
  for (let i = 1; i < n; i++) s += ' ' + P.vocab.word(rng)
  return s
}

function comment(rng, P) {
  return sentence(rng, P, 4, 10)
}

const CODE = {
  ts: {
    top: [
      (r, P) => `import { ${P.ident(r)}, ${P.type(r)} } from "./${r.pick(P.domain)}";`,
      (r, P) => `export const ${P.ident(r).toUpperCase()} = ${r.int(5000)};`,
      (r, P) => `// ${comment(r, P)}`,
      (r, P) => `type ${P.type(r)} = ${P.type(r)} | null;`,
    ],
    open: [
      (r, P) => `export async function ${P.ident(r)}(${P.ident(r)}: ${P.type(r)}, opts: ${P.type(r)} = {}): Promise<${P.type(r)}> {`,
      (r, P) => `export interface ${P.type(r)} {`,
      (r, P) => `export class ${P.type(r)} {`,
      (r, P) => `function ${P.ident(r)}(${P.ident(r)}: string): boolean {`,
    ],
    inner: [
      (r, P) => `const ${P.ident(r)} = await ${P.ident(r)}(${P.ident(r)}, "${r.pick(P.domain)}");`,
      (r, P) => `return ${P.ident(r)}.${P.ident(r)}(${P.ident(r)});`,
      (r, P) => `throw new Error(\`${comment(r, P)}\`);`,
      (r, P) => `log.debug("${shortPhrase(r, P)}", { ${P.ident(r)}, ${P.ident(r)} });`,
      (r, P) => `${P.ident(r)}.push(${P.ident(r)} ?? ${r.int(100)});`,
      (r, P) => `// ${comment(r, P)}`,
      (r, P) => `${P.ident(r)}: ${P.type(r)};`,
    ],
    block: [(r, P) => `if (!${P.ident(r)}) {`, (r, P) => `for (const ${r.pick(P.domain)} of ${P.ident(r)}) {`, (r, P) => `try {`],
    close: '}',
    indent: '  ',
  },
  rust: {
    top: [
      (r, P) => `use crate::${P.snake(r)}::{${P.type(r)}, ${P.type(r)}};`,
      (r, P) => `/// ${comment(r, P)}`,
      (r, P) => `#[derive(Debug, Clone, PartialEq)]`,
      (r, P) => `const ${P.snake(r).toUpperCase()}: usize = ${r.int(4096)};`,
    ],
    open: [
      (r, P) => `pub fn ${P.snake(r)}(${P.snake(r)}: &${P.type(r)}) -> Result<${P.type(r)}, Error> {`,
      (r, P) => `pub struct ${P.type(r)} {`,
      (r, P) => `impl ${P.type(r)} {`,
      (r, P) => `fn ${P.snake(r)}(&mut self, ${P.snake(r)}: u64) -> bool {`,
    ],
    inner: [
      (r, P) => `let ${P.snake(r)} = ${P.snake(r)}.${P.snake(r)}()?;`,
      (r, P) => `Ok(${P.type(r)}::new(${P.snake(r)}))`,
      (r, P) => `return Err(Error::msg("${comment(r, P)}"));`,
      (r, P) => `tracing::debug!(${P.snake(r)} = ?${P.snake(r)}, "${shortPhrase(r, P)}");`,
      (r, P) => `self.${P.snake(r)}.insert(${P.snake(r)}.clone());`,
      (r, P) => `// ${comment(r, P)}`,
      (r, P) => `pub ${P.snake(r)}: Vec<${P.type(r)}>,`,
    ],
    block: [(r, P) => `if let Some(${P.snake(r)}) = self.${P.snake(r)}.get(&key) {`, (r, P) => `for ${r.pick(P.domain)} in ${P.snake(r)}.iter() {`, (r, P) => `match ${P.snake(r)} {`],
    close: '}',
    indent: '    ',
  },
  py: {
    top: [
      (r, P) => `from .${P.snake(r)} import ${P.type(r)}, ${P.snake(r)}`,
      (r, P) => `# ${comment(r, P)}`,
      (r, P) => `${P.snake(r).toUpperCase()} = ${r.int(1000)}`,
      () => '',
    ],
    open: [
      (r, P) => `def ${P.snake(r)}(${P.snake(r)}, ${P.snake(r)}=None):`,
      (r, P) => `class ${P.type(r)}:`,
      (r, P) => `async def ${P.snake(r)}(self, ${P.snake(r)}: str) -> ${P.type(r)}:`,
    ],
    inner: [
      (r, P) => `${P.snake(r)} = ${P.snake(r)}.${P.snake(r)}(${P.snake(r)})`,
      (r, P) => `return ${P.snake(r)}`,
      (r, P) => `raise ValueError(f"${comment(r, P)}")`,
      (r, P) => `logger.debug("${shortPhrase(r, P)}: %s", ${P.snake(r)})`,
      (r, P) => `# ${comment(r, P)}`,
      (r, P) => `self.${P.snake(r)}.append(${P.snake(r)})`,
    ],
    block: [(r, P) => `if not ${P.snake(r)}:`, (r, P) => `for ${r.pick(P.domain)} in ${P.snake(r)}:`, () => 'try:'],
    close: null,
    indent: '    ',
  },
  go: {
    top: [
      (r, P) => `import "${r.pick(['fmt', 'context', 'errors', 'net/http', 'encoding/json', 'strings'])}"`,
      (r, P) => `// ${comment(r, P)}`,
      (r, P) => `var Err${P.type(r)} = errors.New("${shortPhrase(r, P)}")`,
    ],
    open: [
      (r, P) => `func ${P.type(r)}(ctx context.Context, ${r.pick(P.domain)} *${P.type(r)}) error {`,
      (r, P) => `type ${P.type(r)} struct {`,
      (r, P) => `func (s *${P.type(r)}) ${P.type(r)}(${r.pick(P.domain)} string) (int, error) {`,
    ],
    inner: [
      (r, P) => `${r.pick(P.domain)}, err := s.${P.type(r)}(ctx, ${r.pick(P.domain)})`,
      (r, P) => `return fmt.Errorf("${shortPhrase(r, P)}: %w", err)`,
      (r, P) => `return nil`,
      (r, P) => `// ${comment(r, P)}`,
      (r, P) => `${CAP(r.pick(P.domain))} ${P.type(r)} \`json:"${r.pick(P.domain)}"\``,
    ],
    block: [() => 'if err != nil {', (r, P) => `for _, ${r.pick(P.domain)} := range s.${r.pick(P.domain)} {`],
    close: '}',
    indent: '\t',
  },
}

function codeText(rng, P, file, lines) {
  const ext = file.slice(file.lastIndexOf('.') + 1)
  if (ext === 'md') return markdownText(rng, P, lines)
  if (ext === 'json' || ext === 'toml' || ext === 'yaml' || ext === 'mod') return configText(rng, P, ext, lines)
  const lang = ext === 'rs' ? 'rust' : ext === 'py' ? 'py' : ext === 'go' ? 'go' : 'ts'
  const L = CODE[lang]
  const out = []
  let depth = 0
  while (out.length < lines) {
    if (depth === 0) {
      if (rng.chance(0.4)) out.push(rng.pick(L.top)(rng, P))
      else {
        out.push(rng.pick(L.open)(rng, P))
        depth = 1
      }
    } else {
      const r = rng.next()
      if (r < 0.12 && depth < 4) {
        out.push(L.indent.repeat(depth) + rng.pick(L.block)(rng, P))
        depth++
      } else if (r < 0.25) {
        depth--
        if (L.close) out.push(L.indent.repeat(depth) + L.close)
        if (depth === 0) out.push('')
      } else out.push(L.indent.repeat(depth) + rng.pick(L.inner)(rng, P))
    }
  }
  while (depth > 0 && L.close) out.push(L.indent.repeat(--depth) + L.close)
  return out.join('\n') + '\n'
}

function markdownText(rng, P, lines) {
  const out = [`# ${CAP(shortPhrase(rng, P))}`, '']
  while (out.length < lines) {
    const r = rng.next()
    if (r < 0.15) out.push(`## ${CAP(shortPhrase(rng, P))}`, '')
    else if (r < 0.45) out.push(`- ${sentence(rng, P, 4, 12)}`)
    else if (r < 0.55) out.push('```sh', `${rng.pick(['npm run', 'cargo', 'make', 'pi'])} ${P.ident(rng)}`, '```', '')
    else out.push(prose(rng, P, 80, 300), '')
  }
  return out.join('\n') + '\n'
}

function configText(rng, P, ext, lines) {
  const out = []
  if (ext === 'json') {
    out.push('{')
    for (let i = 0; i < lines; i++) out.push(`  "${P.ident(rng)}": ${rng.chance(0.5) ? rng.int(1000) : `"${P.ident(rng)}"`},`)
    out.push(`  "name": "${P.domain[0]}"`, '}')
  } else if (ext === 'toml') {
    out.push('[package]', `name = "${P.domain[0]}"`, 'version = "0.4.2"', '', '[dependencies]')
    for (let i = 0; i < lines; i++) out.push(`${P.snake(rng)} = "${rng.int(3)}.${rng.int(30)}"`)
  } else if (ext === 'mod') {
    out.push(`module example.com/${P.domain[0]}`, '', 'go 1.22', '', 'require (')
    for (let i = 0; i < lines; i++) out.push(`\tgithub.com/${rng.pick(P.domain)}/${rng.pick(P.domain)} v1.${rng.int(20)}.${rng.int(9)}`)
    out.push(')')
  } else {
    for (let i = 0; i < lines; i++) out.push(`${'  '.repeat(rng.int(3))}${P.snake(rng)}: ${rng.chance(0.5) ? rng.int(100) : P.ident(rng)}`)
  }
  return out.join('\n') + '\n'
}

// Random base64 pool (thinking signatures, responses ids): sliced, never regenerated.
function base64Pool(seed) {
  const rng = new Rng(hash32('base64', seed))
  const bytes = Buffer.alloc(96 * 1024)
  for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE(rng.u32(), i)
  return bytes.toString('base64')
}

// ---------------------------------------------------------------------------
// PNG (deterministic noise, a few KB)
// ---------------------------------------------------------------------------

const CRC_TABLE = (() => {
  const t = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    t[n] = c >>> 0
  }
  return t
})()
function crc32(buf) {
  let c = 0xffffffff
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
function pngChunk(type, data) {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(data.length)
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(td))
  return Buffer.concat([len, td, crc])
}
function noisePngBase64(rng, width, height) {
  const raw = Buffer.alloc((width * 3 + 1) * height)
  for (let y = 0, o = 0; y < height; y++) {
    raw[o++] = 0
    for (let x = 0; x < width * 3; x++) raw[o++] = rng.u32() & 0xff
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8
  ihdr[9] = 2
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', zlib.deflateSync(raw, { level: 6 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]).toString('base64')
}

// ---------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------

export const MODELS = [
  { api: 'anthropic-messages', provider: 'anthropic', model: 'claude-sonnet-4-5', weight: 6, callId: (r) => `toolu_01${randomId(r, 22)}` },
  { api: 'anthropic-messages', provider: 'anthropic', model: 'claude-opus-4-1', weight: 2, callId: (r) => `toolu_01${randomId(r, 22)}` },
  { api: 'openai-responses', provider: 'openai', model: 'gpt-5', weight: 2, callId: (r) => `call_${randomId(r, 24)}` },
  { api: 'google-generative-ai', provider: 'google', model: 'gemini-2.5-pro', weight: 1, callId: (r) => `call_${randomId(r, 16)}` },
]
const THINKING_LEVELS = ['off', 'minimal', 'low', 'medium', 'high']

// ---------------------------------------------------------------------------
// Tool calls and results
// ---------------------------------------------------------------------------

const PI_TOOLS = ['read', 'write', 'edit', 'bash', 'grep', 'find', 'ls']
const FABRIC_REFS = ['pi.read', 'pi.grep', 'pi.edit', 'pi.bash', 'pi.find', 'pi.ls', 'pi.write', 'agents.run']
const FABRIC_REF_WEIGHTS = [26, 18, 10, 14, 6, 5, 4, 17]
const FAILURE_STAGES = ['resolve', 'prepare', 'validate', 'approve', 'invoke', 'guard']
/** Refs no entry ever carries (for "nonexistent ref returns no history" checks). */
export const ABSENT_REFS = ['pi.teleport', 'agents.summon', 'memory.forget']

const BASH_BY_LANG = {
  ts: ['npm test', 'npx tsc --noEmit', 'npm run build', 'npx vitest run', 'npm run lint', 'git status', 'git diff --stat', 'git log --oneline -12'],
  rust: ['cargo test', 'cargo build --release', 'cargo clippy -- -D warnings', 'cargo fmt --check', 'git status', 'git diff --stat', 'git log --oneline -12'],
  py: ['pytest -x -v', 'python -m mypy src', 'ruff check .', 'git status', 'git diff --stat', 'git log --oneline -12'],
  go: ['go test ./...', 'go build ./...', 'go vet ./...', 'git status', 'git diff --stat', 'git log --oneline -12'],
  md: ['git status', 'wc -l docs/*.md', 'git diff --stat', 'git log --oneline -12', 'ls -la docs'],
}

function testOutput(rng, P, lang, failing) {
  const n = rng.logNormal(28, 0.8, 3, 300)
  const out = []
  let fails = 0
  for (let i = 0; i < n; i++) {
    const fail = failing && (rng.chance(0.08) || (i === n - 1 && fails === 0))
    if (fail) fails++
    const name = `${P.ident(rng)} ${shortPhrase(rng, P, rng.range(2, 5))}`
    const ms = rng.int(400)
    if (lang === 'rust') out.push(`test ${P.snake(rng)}::tests::${P.snake(rng)} ... ${fail ? 'FAILED' : 'ok'}`)
    else if (lang === 'py') out.push(`tests/test_${P.snake(rng)}.py::test_${P.snake(rng)} ${fail ? 'FAILED' : 'PASSED'} [${Math.round(((i + 1) / n) * 100)}%]`)
    else if (lang === 'go') out.push(`--- ${fail ? 'FAIL' : 'PASS'}: Test${P.type(rng)} (${(ms / 1000).toFixed(2)}s)`)
    else out.push(` ${fail ? '×' : '✓'} ${P.file(rng)} > ${name} ${ms}ms`)
    if (fail) {
      out.push(`   AssertionError: expected ${P.ident(rng)} to equal ${rng.int(100)}`, `     at ${P.ident(rng)} (${P.file(rng)}:${rng.range(1, 400)}:${rng.range(1, 60)})`)
      if (rng.chance(0.5)) out.push(`   ${sentence(rng, P)}`)
    }
  }
  out.push('', `Tests: ${fails ? `${fails} failed, ` : ''}${n - fails} passed, ${n} total`, `Time: ${(rng.next() * 30 + 0.5).toFixed(2)}s`)
  return out.join('\n')
}

function buildErrors(rng, P, lang) {
  const n = rng.range(1, 12)
  const out = []
  for (let i = 0; i < n; i++) {
    const f = P.file(rng)
    const line = rng.range(1, 500)
    if (lang === 'rust') out.push(`error[E0${rng.range(300, 700)}]: mismatched types`, ` --> ${f}:${line}:${rng.range(1, 60)}`, `  |`, `${line} | ${P.snake(rng)}(${P.snake(rng)})`, `  = note: expected \`${P.type(rng)}\`, found \`${P.type(rng)}\``)
    else if (lang === 'py') out.push(`${f}:${line}: error: Incompatible types in assignment (expression has type "${P.type(rng)}", variable has type "${P.type(rng)}")  [assignment]`)
    else if (lang === 'go') out.push(`${f}:${line}:${rng.range(1, 60)}: undefined: ${P.type(rng)}`)
    else out.push(`${f}(${line},${rng.range(1, 60)}): error TS${rng.range(2000, 2800)}: Argument of type '${P.type(rng)}' is not assignable to parameter of type '${P.type(rng)}'.`)
  }
  out.push('', `Found ${n} error${n > 1 ? 's' : ''}.`)
  return out.join('\n')
}

function gitOutput(rng, P, cmd) {
  const out = []
  if (cmd.startsWith('git status')) {
    out.push(`On branch ${rng.pick(['main', 'feature/' + rng.pick(P.domain), 'fix/' + rng.pick(P.domain)])}`, 'Changes not staged for commit:')
    for (let i = rng.range(1, 8); i > 0; i--) out.push(`\tmodified:   ${P.file(rng)}`)
  } else if (cmd.startsWith('git diff')) {
    let total = 0
    for (let i = rng.range(1, 10); i > 0; i--) {
      const k = rng.range(1, 120)
      total += k
      out.push(` ${P.file(rng)} | ${k} ${'+'.repeat(Math.min(k, 30))}`)
    }
    out.push(` ${out.length} files changed, ${total} insertions(+)`)
  } else {
    for (let i = 0; i < 12; i++) out.push(`${rng.hex8().slice(0, 7)} ${sentence(rng, P, 4, 9).slice(0, -1)}`)
  }
  return out.join('\n')
}

/** [output, exitCode] of a shell command in project P. */
function bashOutput(rng, P, cmd, fail) {
  if (/test|vitest|pytest/.test(cmd)) return [testOutput(rng, P, P.lang === 'md' ? 'ts' : P.lang, fail), fail ? 1 : 0]
  if (/build|tsc|clippy|mypy|vet|ruff|lint|fmt/.test(cmd)) return [fail ? buildErrors(rng, P, P.lang) : rng.chance(0.5) ? '' : `Finished in ${(rng.next() * 40).toFixed(2)}s`, fail ? rng.pick([1, 1, 2, 101]) : 0]
  if (cmd.startsWith('git')) return [gitOutput(rng, P, cmd), 0]
  if (cmd.startsWith('cat ')) return [P.content(cmd.slice(4)), 0]
  if (cmd.startsWith('ls') || cmd.startsWith('wc')) return [lsOutput(rng, P, 'docs'), 0]
  return [prose(rng, P, 40, 400), fail ? 1 : 0]
}

function lsOutput(rng, P, dir) {
  const out = []
  for (let i = rng.range(3, 30); i > 0; i--) out.push(rng.chance(0.2) ? `${rng.pick(P.domain)}/` : `${rng.pick(P.domain)}.${rng.pick(EXT[P.lang])}`)
  return [...new Set(out)].sort().join('\n')
}

function grepOutput(rng, P, pattern) {
  const n = rng.logNormal(8, 1, 0, 120)
  if (n === 0) return 'No matches found'
  const out = []
  for (let i = 0; i < n; i++) {
    const f = P.file(rng)
    const text = P.content(f)
    const lines = text.split('\n', 40)
    out.push(`${f}:${rng.range(1, 400)}: ${rng.pick(lines).trim() || pattern}`)
  }
  return out.join('\n')
}

/** One tool call for project P: { name, arguments } (argument key order as Pi's schemas). */
function toolCallArgs(rng, P, name) {
  switch (name) {
    case 'read': {
      const args = { path: P.file(rng) }
      if (rng.chance(0.15)) {
        args.offset = rng.range(1, 300)
        args.limit = rng.pick([50, 100, 200])
      }
      return args
    }
    case 'write': {
      const p = P.file(rng)
      return { path: p, content: codeText(rng, P, p, rng.logNormal(30, 0.7, 5, 200)) }
    }
    case 'edit': {
      const p = P.file(rng)
      const lines = P.content(p).split('\n')
      const edits = []
      for (let k = rng.weighted([1, 2, 3], [6, 3, 1]); k > 0; k--) {
        const at = rng.int(Math.max(1, lines.length - 4))
        const oldText = lines.slice(at, at + rng.range(1, 4)).join('\n')
        const newText = oldText.replace(/\b([a-z]\w*)\b/, (m) => P.ident(rng)) + (rng.chance(0.4) ? `\n${rng.pick(['// ', '# ', '/// '])}${comment(rng, P)}` : '')
        edits.push({ oldText, newText })
      }
      return { path: p, edits }
    }
    case 'bash': {
      const cmd = rng.chance(0.85) ? rng.pick(BASH_BY_LANG[P.lang]) : rng.chance(0.5) ? `cat ${P.file(rng)}` : `ls -la ${P.dir(rng)}`
      return rng.chance(0.2) ? { command: cmd, timeout: rng.pick([60, 120, 300]) } : { command: cmd }
    }
    case 'grep': {
      const args = { pattern: rng.chance(0.7) ? P.ident(rng) : `${rng.pick(P.domain)}|${rng.pick(P.domain)}` }
      if (rng.chance(0.6)) args.path = P.dir(rng)
      if (rng.chance(0.3)) args.glob = `*.${EXT[P.lang][0]}`
      if (rng.chance(0.2)) args.ignoreCase = true
      return args
    }
    case 'find':
      return rng.chance(0.5) ? { pattern: `**/*.${EXT[P.lang][0]}`, path: P.dir(rng) } : { pattern: `*${rng.pick(P.domain)}*` }
    case 'ls':
      return rng.chance(0.7) ? { path: P.dir(rng) } : {}
    default:
      throw new Error(`unknown tool ${name}`)
  }
}

/** Builds the toolResult message fields for a call: { text, details, isError }. */
function toolResultFor(rng, P, name, args) {
  const err = rng.next()
  switch (name) {
    case 'read': {
      if (err < 0.03) return { text: `ENOENT: no such file or directory, access '${P.cwd}/${args.path}'`, details: {}, isError: true }
      let text = P.content(args.path)
      if (args.offset) {
        const lines = text.split('\n')
        text = lines.slice(args.offset - 1, args.offset - 1 + args.limit).join('\n') + `\n\n[Showing lines ${args.offset}-${Math.min(lines.length, args.offset - 1 + args.limit)} of ${lines.length}. Use offset=${args.offset + args.limit} to continue.]`
      }
      return { text, details: undefined, isError: false }
    }
    case 'write':
      return { text: `Successfully wrote ${Buffer.byteLength(args.content)} bytes to ${args.path}`, details: undefined, isError: false }
    case 'edit': {
      if (err < 0.06)
        return { text: `Could not find the exact text in ${args.path}. The old text must match exactly including all whitespace and newlines.`, details: {}, isError: true }
      const first = args.edits[0]
      const line = rng.range(1, 300)
      const diff = args.edits.map((e) => `${e.oldText.split('\n').map((l, i) => `-${line + i} ${l}`).join('\n')}\n${e.newText.split('\n').map((l, i) => `+${line + i} ${l}`).join('\n')}`).join('\n     ...\n')
      const patch = `--- ${args.path}\n+++ ${args.path}\n@@ -${line},${first.oldText.split('\n').length} +${line},${first.newText.split('\n').length} @@\n${first.oldText.split('\n').map((l) => `-${l}`).join('\n')}\n${first.newText.split('\n').map((l) => `+${l}`).join('\n')}\n`
      return { text: `Successfully replaced ${args.edits.length} block(s) in ${args.path}.`, details: { diff, patch, firstChangedLine: line }, isError: false }
    }
    case 'bash': {
      const fail = err < 0.16
      if (fail && err < 0.01) return { text: `Command timed out after ${args.timeout ?? 120} seconds`, details: {}, isError: true }
      const [out, code] = bashOutput(rng, P, args.command, fail)
      if (code !== 0) return { text: `${out}\n\nCommand exited with code ${code}`, details: {}, isError: true }
      const big = out.length > 12000
      return big
        ? { text: out.slice(0, 12000) + `\n\n[Output truncated: showing first 12000 of ${out.length} bytes]`, details: { truncation: { truncated: true, truncatedBy: 'bytes', totalBytes: out.length, outputBytes: 12000 }, fullOutputPath: `/tmp/pi-bash-${rng.hex8()}.log` }, isError: false }
        : { text: out || '(no output)', details: undefined, isError: false }
    }
    case 'grep':
      return { text: grepOutput(rng, P, args.pattern), details: undefined, isError: false }
    case 'find': {
      const out = []
      for (let i = rng.logNormal(10, 0.9, 0, 150); i > 0; i--) out.push(P.file(rng))
      return { text: out.length ? [...new Set(out)].join('\n') : 'No files found matching pattern', details: undefined, isError: false }
    }
    case 'ls':
      if (err < 0.02) return { text: `Path not found: ${P.cwd}/${args.path ?? '.'}`, details: {}, isError: true }
      return { text: lsOutput(rng, P, args.path ?? '.'), details: undefined, isError: false }
  }
  throw new Error(name)
}

// ---------------------------------------------------------------------------
// Fabric traces (FabricExecutionTraceV1; must pass src/session/fabric.rs valid_trace)
// ---------------------------------------------------------------------------

function fabricArgs(rng, P, ref) {
  switch (ref) {
    case 'pi.read':
      return { path: P.file(rng) }
    case 'pi.grep':
      return { pattern: P.ident(rng), path: P.dir(rng) }
    case 'pi.edit':
      return { path: P.file(rng), edits: [{ oldText: P.ident(rng), newText: P.ident(rng) }] }
    case 'pi.bash':
      return { command: rng.pick(BASH_BY_LANG[P.lang]) }
    case 'pi.find':
      return { pattern: `**/*${rng.pick(P.domain)}*`, path: P.dir(rng) }
    case 'pi.ls':
      return { path: P.dir(rng) }
    case 'pi.write':
      return { path: P.file(rng), content: `${comment(rng, P)}\n` }
    default:
      return { task: sentence(rng, P, 5, 12), agent: rng.pick(['reviewer', 'tester', 'planner', 'scout']) }
  }
}

function fabricResult(rng, P, ref, args) {
  switch (ref) {
    case 'pi.read':
      return { text: P.content(args.path).slice(0, rng.range(60, 600)) }
    case 'pi.grep':
      return { matches: rng.int(20), text: grepOutput(rng, P, args.pattern).slice(0, 500) }
    case 'pi.bash':
      return { exitCode: 0, stdout: `Tests: ${rng.int(80)} passed` }
    case 'agents.run':
      return { summary: sentence(rng, P) }
    default:
      return { ok: true }
  }
}

function fabricOp(rng, P, sequence, ref, outcome, args = fabricArgs(rng, P, ref)) {
  const dot = ref.indexOf('.')
  const op = { type: 'call', sequence, ref, provider: ref.slice(0, dot), action: ref.slice(dot + 1), args, outcome }
  if (outcome === 'succeeded') {
    op.result = fabricResult(rng, P, ref, args)
    if (rng.chance(0.05)) op.resultTruncated = true
  } else {
    op.failureStage = outcome === 'failed' ? rng.pick(FAILURE_STAGES) : 'invoke'
    op.error = outcome === 'timed_out' ? 'Call timed out after 120000 ms' : outcome === 'aborted' ? 'Call aborted' : rng.pick(['Call failed during invoke', 'Command exited with code 1', `Path not found: ${P.file(rng)}`, 'Agent run failed: reviewer reported blocking issues'])
  }
  return op
}

function fabricTrace(rng, P) {
  const ops = []
  const n = rng.range(2, 7)
  for (let i = 1; i <= n; i++) {
    const ref = rng.weighted(FABRIC_REFS, FABRIC_REF_WEIGHTS)
    const outcome = rng.weighted(['succeeded', 'failed', 'timed_out', 'aborted'], [84, 12, 2, 2])
    ops.push(fabricOp(rng, P, i, ref, outcome))
  }
  return finishTrace(rng, ops)
}

function finishTrace(rng, ops) {
  const bad = ops.filter((o) => o.outcome !== 'succeeded')
  const trace = { kind: 'pi-fabric.execution', version: 1, outcome: bad.length ? bad[0].outcome : 'succeeded', phases: rng.chance(0.7) ? ['plan', 'run'] : ['plan', 'run', 'verify'], operations: ops, counts: { droppedValues: 0, truncatedValues: ops.filter((o) => o.resultTruncated).length, redactedValues: 0, droppedOperations: 0 } }
  if (bad.length) trace.error = `${bad.length} operation${bad.length > 1 ? 's' : ''} did not succeed: ${bad.map((o) => o.ref).join(', ')}`
  return trace
}

function fabricSummary(trace) {
  const refs = trace.operations.map((o) => `${o.ref} ${o.outcome}`).join('; ')
  return `fabric_exec ${trace.outcome}: ${trace.operations.length} operations (${refs}).`
}

/** JS mirror of `valid_trace` (src/session/fabric.rs), exported for tests. */
export function isValidFabricTrace(trace) {
  const only = (o, keys) => o && typeof o === 'object' && !Array.isArray(o) && Object.keys(o).every((k) => keys.includes(k))
  const uint = (v) => Number.isInteger(v) && v >= 0 && v < 2 ** 53
  const outcome = (v) => ['succeeded', 'failed', 'aborted', 'timed_out'].includes(v)
  const optStr = (v) => v === undefined || typeof v === 'string'
  const depthOk = (v, d) => (v && typeof v === 'object' ? d <= 14 && Object.values(v).every((x) => depthOk(x, d + 1)) : true)
  if (!only(trace, ['kind', 'version', 'outcome', 'phases', 'operations', 'counts', 'error'])) return false
  if (trace.kind !== 'pi-fabric.execution' || trace.version !== 1 || !outcome(trace.outcome)) return false
  if (!Array.isArray(trace.phases) || !trace.phases.every((p) => typeof p === 'string')) return false
  const ops = trace.operations
  if (!Array.isArray(ops)) return false
  const counts = ['droppedValues', 'truncatedValues', 'redactedValues', 'droppedOperations']
  if (!only(trace.counts, counts) || !counts.every((k) => uint(trace.counts[k])) || !optStr(trace.error)) return false
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]
    if (!only(op, ['type', 'sequence', 'ref', 'provider', 'action', 'args', 'outcome', 'normalization', 'failureStage', 'error', 'result', 'resultTruncated'])) return false
    if (op.type !== 'call' || !uint(op.sequence) || typeof op.ref !== 'string' || !outcome(op.outcome)) return false
    if (!op.args || typeof op.args !== 'object' || Array.isArray(op.args) || !depthOk(op.args, 0)) return false
    if (!optStr(op.provider) || !optStr(op.action) || !optStr(op.error)) return false
    if (op.failureStage !== undefined && !FAILURE_STAGES.includes(op.failureStage)) return false
    if (op.normalization !== undefined && (!op.normalization || typeof op.normalization !== 'object')) return false
    if (op.resultTruncated !== undefined && typeof op.resultTruncated !== 'boolean') return false
    if (op.result !== undefined && !depthOk(op.result, 0)) return false
    if (i > 0 && !(ops[i - 1].sequence < op.sequence)) return false
  }
  return Buffer.byteLength(JSON.stringify(trace)) <= 512 * 1024
}

// ---------------------------------------------------------------------------
// Needles
// ---------------------------------------------------------------------------

/** Rare terms and their target recency ranks (0 = newest session; clamped to n-1). */
const RARE_TERMS = [
  { token: 'qorvandite', rank: 0, slot: 'user' },
  { token: 'zelqoriam', rank: 2, slot: 'assistant' },
  { token: 'brisqelton', rank: 11, slot: 'toolResult' },
  { token: 'mavqirella', rank: 37, slot: 'bashExecution' },
  { token: 'tolqanide', rank: 55, slot: 'toolResult' },
  { token: 'yusqembar', rank: 130, slot: 'customMessage' },
  { token: 'fenqolith', rank: 260, slot: 'compaction' },
  { token: 'draqmelto', rank: 390, slot: 'toolCallArg' },
  { token: 'kelqibrant', rank: 470, slot: 'user' },
  { token: 'vonqaresh', rank: Infinity, slot: 'assistant' }, // the oldest session
]
const PHRASES = [
  { words: ['qanatoria', 'qiviutberry', 'faqirstone'], rank: 6 },
  { words: ['sheqelmark', 'qintarvault'], rank: 75 },
  { words: ['qiblaheron', 'tranqmeadow', 'burqalantern', 'waqfsignal'], rank: 300 },
]
const STRUCTURAL = [
  { token: 'qelmorithax', rank: 90 }, // cold target
  { token: 'pyqandrelo', rank: 8 }, // hot target
]
const ABANDONED = [
  { token: 'abqendrift', rank: 4 },
  { token: 'ovqarnishle', rank: 160 },
]
const UNICODE_NEEDLE = { token: 'ΩMEGA雪', canonical: 'ωmega雪', queryForms: ['ΩMEGA雪', 'ωmega雪', 'Ωmega雪', 'ΩMEGA雪'], rank: 210 }
const REGEX_NEEDLES = [
  { pattern: 'qzr-[0-9]{5}-[a-z]{2}', match: 'qzr-48213-kv', rank: 20 }, // hot
  { pattern: 'qzw-[0-9]{4}-[a-z]{3}', match: 'qzw-7731-bdx', rank: 140 }, // cold
]
const COMMON_TERMS = ['error', 'test', 'config']

for (const t of [...RARE_TERMS, ...STRUCTURAL, ...ABANDONED]) RESERVED_WORDS.add(t.token)
for (const p of PHRASES) for (const w of p.words) RESERVED_WORDS.add(w)

// ---------------------------------------------------------------------------
// Session generation
// ---------------------------------------------------------------------------

export const iso = (ms) => new Date(ms).toISOString()

export function usage(rng, model) {
  const input = rng.range(5, 4000)
  const output = rng.range(20, 3000)
  const cacheRead = rng.chance(0.8) ? rng.range(2000, 150000) : 0
  const cacheWrite = rng.chance(0.3) ? rng.range(100, 8000) : 0
  const price = model.provider === 'anthropic' ? 3 : 1.25
  const cost = {
    input: Math.round(input * price) / 1e6,
    output: Math.round(output * price * 5) / 1e6,
    cacheRead: Math.round(cacheRead * price * 0.1) / 1e6,
    cacheWrite: Math.round(cacheWrite * price * 1.25) / 1e6,
  }
  cost.total = Math.round((cost.input + cost.output + cost.cacheRead + cost.cacheWrite) * 1e6) / 1e6
  return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost }
}

/** Mutable state of one session while it is generated. */
class SessionBuilder {
  constructor(ctx, index, start, targetEntries, features) {
    this.ctx = ctx
    this.P = ctx.projects[features.project]
    this.rng = new Rng(hash32('session', ctx.seed, ctx.size, index))
    this.index = index
    this.clock = start
    this.start = start
    this.target = targetEntries
    this.features = features
    this.entries = [] // { obj, slot, textLen }
    /** @type {Set<string> | undefined} the active path's ids, set once generated */
    this.activeSet = undefined
    this.byId = new Map()
    this.ids = new Set()
    this.path = [] // active path (ids)
    this.turnStarts = [] // user-message ids on the current path
    this.turnEnds = [] // final-assistant ids on the current path
    this.labeled = []
    this.readFiles = new Set()
    this.modifiedFiles = new Set()
    this.model = this.rng.weighted(MODELS, MODELS.map((m) => m.weight))
    this.branched = false
    this.abandoned = new Set()
    this.sinceCompaction = 0
    this.compactEvery = features.compactHeavy ? this.rng.range(35, 60) : this.rng.range(110, 220)
    this.fabricCarriers = []
    this.stats = { compactions: 0, fabricCarriers: 0, images: 0, aborted: 0, errors: 0, branchSummaries: 0, bashExecutions: 0 }
  }
  tick(meanMs) {
    this.clock += Math.max(1, Math.round(this.rng.exp(meanMs)))
    return this.clock
  }
  newId() {
    let id
    do id = this.rng.hex8()
    while (this.ids.has(id))
    this.ids.add(id)
    return id
  }
  leaf() {
    return this.path.length ? this.path[this.path.length - 1] : null
  }
  /** Appends an entry object (already in Pi's key order); returns its id. */
  push(obj, slot = null, textLen = 0) {
    this.entries.push({ obj, slot, textLen })
    this.byId.set(obj.id, obj)
    this.path.push(obj.id)
    this.sinceCompaction++
    return obj.id
  }
  base(type, ms = this.tick(800)) {
    return { type, id: this.newId(), parentId: this.leaf(), timestamp: iso(ms) }
  }
  message(message, slot, textLen, entryMs) {
    const e = this.base('message', entryMs)
    e.message = message
    return this.push(e, slot, textLen)
  }

  // --- entry kinds -------------------------------------------------------

  modelChange(model) {
    const e = this.base('model_change', this.clock)
    e.provider = model.provider
    e.modelId = model.model
    this.model = model
    return this.push(e)
  }
  thinkingLevel(level) {
    const e = this.base('thinking_level_change', this.clock)
    e.thinkingLevel = level
    return this.push(e)
  }
  user(text, image) {
    const ms = this.tick(this.entries.length < 4 ? 2000 : 90_000)
    const content = image ? [{ type: 'text', text }, { type: 'image', data: image, mimeType: 'image/png' }] : text
    const id = this.message({ role: 'user', content, timestamp: ms }, 'user', text.length, ms)
    this.turnStarts.push(id)
    return id
  }
  assistant(content, stopReason, errorMessage, textLen) {
    const started = this.tick(4000)
    const ms = this.tick(9000)
    const m = this.model
    const msg = { role: 'assistant', content, api: m.api, provider: m.provider, model: m.model, usage: usage(this.rng, m), stopReason, timestamp: started }
    if (m.provider !== 'google') msg.responseId = m.provider === 'anthropic' ? `msg_01${randomId(this.rng, 22)}` : `resp_${this.rng.hex8()}${this.rng.hex8()}`
    if (errorMessage) msg.errorMessage = errorMessage
    const hasText = content.some((b) => b.type === 'text')
    return this.message(msg, hasText ? 'assistant' : null, textLen, ms)
  }
  thinkingBlock() {
    const pool = this.ctx.base64
    const len = this.rng.range(200, 700)
    const at = this.rng.int(pool.length - len)
    return { type: 'thinking', thinking: prose(this.rng, this.P, 80, 900), thinkingSignature: pool.slice(at, at + len) }
  }
  toolResult(call, text, details, isError) {
    const ms = this.tick(call.name === 'bash' ? 6000 : 300)
    const msg = { role: 'toolResult', toolCallId: call.id, toolName: call.name, content: [{ type: 'text', text }], details, isError, timestamp: ms }
    const slot = PI_TOOLS.includes(call.name) ? 'toolResult' : call.name === 'fabric_exec' ? 'fabric' : null
    return this.message(msg, slot, text.length, ms)
  }
  bashExecution() {
    const r = this.rng
    const cmd = r.pick(BASH_BY_LANG[this.P.lang])
    const kind = r.weighted(['ok', 'fail', 'cancel'], [70, 20, 10])
    let [output, code] = bashOutput(r, this.P, cmd, kind === 'fail')
    if (kind === 'fail' && code === 0) code = 1
    if (kind === 'cancel') output = output.slice(0, r.int(output.length + 1))
    const truncated = output.length > 8000
    if (truncated) output = output.slice(0, 8000)
    const ms = this.tick(60_000)
    // Key order as Pi's recordBashResult; undefined keys are dropped by JSON.stringify.
    const msg = {
      role: 'bashExecution',
      command: cmd,
      output,
      exitCode: kind === 'cancel' ? undefined : code,
      cancelled: kind === 'cancel',
      truncated,
      fullOutputPath: truncated ? `/tmp/pi-bash-${r.hex8()}.log` : undefined,
      timestamp: ms,
      excludeFromContext: r.chance(0.15) ? true : undefined,
    }
    this.stats.bashExecutions++
    return this.message(msg, output ? 'bashExecution' : null, output.length, ms)
  }
  custom() {
    const r = this.rng
    const kind = r.int(4)
    const customType = ['todo-state', 'plan-mode', 'git-checkpoint', 'memory-index'][kind]
    const data =
      kind === 0
        ? { todos: Array.from({ length: r.range(1, 6) }, (_, i) => ({ id: i + 1, text: sentence(r, this.P, 3, 8), done: r.chance(0.5) })) }
        : kind === 1
          ? { enabled: r.chance(0.7), step: r.range(1, 9) }
          : kind === 2
            ? { commit: r.hex8() + r.hex8() + r.hex8() + r.hex8() + r.hex8(), entryId: this.leaf() }
            : { version: 1, sessions: r.int(400), updatedAt: this.clock }
    return this.push({ type: 'custom', customType, data, id: this.newId(), parentId: this.leaf(), timestamp: iso(this.tick(500)) })
  }
  customMessage() {
    const r = this.rng
    const customType = r.pick(['plan-mode-context', 'todo-reminder', 'file-watch', 'memory-recall'])
    const text = customType === 'file-watch' ? `Files changed on disk: ${[this.P.file(r), this.P.file(r)].join(', ')}` : prose(r, this.P, 60, 500)
    const content = r.chance(0.3) ? [{ type: 'text', text }] : text
    const obj = { type: 'custom_message', customType, content, display: r.chance(0.7), details: r.chance(0.5) ? { source: customType, n: r.int(10) } : undefined, id: this.newId(), parentId: this.leaf(), timestamp: iso(this.tick(500)) }
    return this.push(obj, 'customMessage', text.length)
  }
  label() {
    const r = this.rng
    if (this.labeled.length && r.chance(0.2)) {
      const targetId = this.labeled.splice(r.int(this.labeled.length), 1)[0]
      return this.push({ ...this.base('label', this.tick(500)), targetId })
    }
    const targetId = this.turnStarts.length && r.chance(0.7) ? r.pick(this.turnStarts) : r.pick(this.path)
    this.labeled.push(targetId)
    return this.push({ ...this.base('label', this.tick(500)), targetId, label: r.pick(['checkpoint', 'before-refactor', 'good-state', 'bug-repro', 'todo', 'важно', '重要', 'ready ✅', 'perf baseline']) })
  }
  sessionInfo() {
    return this.push({ ...this.base('session_info', this.tick(500)), name: CAP(shortPhrase(this.rng, this.P, this.rng.range(3, 7))) })
  }
  compaction() {
    const r = this.rng
    const starts = this.turnStarts
    const firstKeptEntryId = starts[Math.max(0, starts.length - 1 - r.int(3))]
    const readFiles = [...this.readFiles].filter((f) => !this.modifiedFiles.has(f)).sort().slice(0, 40)
    const modifiedFiles = [...this.modifiedFiles].sort().slice(0, 40)
    const P = this.P
    const bullets = (n, prefix) => Array.from({ length: n }, () => `${prefix}${sentence(r, P, 5, 14)}`).join('\n')
    const summary = [
      '## Goal', prose(r, P, 100, 300), '', '## Constraints & Preferences', bullets(r.range(1, 3), '- '), '', '## Progress', '### Done', bullets(r.range(2, 5), '- [x] '),
      '', '### In Progress', bullets(r.range(1, 3), '- [ ] '), '', '## Key Decisions', bullets(r.range(1, 3), '- **Decision**: '), '', '## Next Steps', bullets(r.range(1, 4), '1. '),
      '', '## Critical Context', bullets(r.range(1, 3), '- '), '', `<read-files>\n${readFiles.join('\n')}\n</read-files>`, '', `<modified-files>\n${modifiedFiles.join('\n')}\n</modified-files>`,
    ].join('\n')
    const e = this.base('compaction', this.tick(20_000))
    Object.assign(e, { summary, firstKeptEntryId, tokensBefore: r.range(80_000, 190_000), details: { readFiles, modifiedFiles }, fromHook: false })
    this.sinceCompaction = 0
    this.stats.compactions++
    return this.push(e, 'compaction', 0)
  }
  /** /tree navigation with a summary: the turns after an earlier turn end are abandoned. */
  branch() {
    const r = this.rng
    const k = Math.min(this.turnEnds.length - 1, r.range(1, 3))
    const fromId = this.turnEnds[this.turnEnds.length - 1 - k]
    const at = this.path.indexOf(fromId)
    const abandonedIds = this.path.slice(at + 1)
    for (const id of abandonedIds) this.abandoned.add(id)
    this.path.length = at + 1
    this.turnEnds = this.turnEnds.filter((id) => !this.abandoned.has(id))
    this.turnStarts = this.turnStarts.filter((id) => !this.abandoned.has(id))
    this.labeled = this.labeled.filter((id) => !this.abandoned.has(id))
    // Files touched on the abandoned branch (Pi's BranchSummaryDetails).
    const read = new Set()
    const modified = new Set()
    for (const id of abandonedIds) {
      const m = this.byId.get(id).message
      if (m?.role !== 'assistant') continue
      for (const b of m.content) {
        if (b.type !== 'toolCall' || typeof b.arguments.path !== 'string') continue
        if (b.name === 'read') read.add(b.arguments.path)
        if (b.name === 'edit' || b.name === 'write') modified.add(b.arguments.path)
      }
    }
    let details
    let fromHook = false
    if (r.chance(0.5)) {
      details = { readFiles: [...read].filter((f) => !modified.has(f)).sort(), modifiedFiles: [...modified].sort() }
    } else {
      details = this.fabricBranchDetails(abandonedIds)
      fromHook = true
    }
    const summary = `The user explored an alternative approach and then returned to an earlier point.\n\n${prose(r, this.P, 200, 700)}`
    const e = { type: 'branch_summary', id: this.newId(), parentId: fromId, timestamp: iso(this.tick(30_000)), fromId, summary, details, fromHook }
    this.branched = true
    this.stats.branchSummaries++
    return this.push(e, null, 0)
  }
  /** FabricBranchSummaryDetailsV2 built from the abandoned entries (never copies planted text). */
  fabricBranchDetails(abandonedIds) {
    const r = this.rng
    /** @type {Record<string, unknown>[]} */
    const facts = []
    for (const id of abandonedIds) {
      const obj = this.byId.get(id)
      const m = obj.message
      if (!m) continue
      if (m.role === 'user' && facts.length < 40) {
        const text = typeof m.content === 'string' ? m.content : m.content[0].text
        facts.push({ kind: 'user', entryId: id, subordinal: '0', address: `${id}/0`, text: text.slice(0, 300) })
      } else if (m.role === 'assistant' && facts.length < 40) {
        let sub = 1
        for (const b of m.content) {
          if (b.type !== 'toolCall') continue
          if (b.name === 'fabric_exec') {
            facts.push({ kind: 'fabricRun', entryId: id, subordinal: `call:${sub}`, address: `${id}/call:${sub}`, name: b.arguments.label, description: b.arguments.plan.slice(0, 200), outcome: r.chance(0.8) ? 'succeeded' : 'failed' })
          } else if (PI_TOOLS.includes(b.name)) {
            const args = b.name === 'write' ? { path: b.arguments.path } : b.name === 'edit' ? { path: b.arguments.path } : b.arguments
            facts.push({ kind: 'operation', entryId: id, subordinal: String(sub), address: `${id}/${sub}`, ref: `pi.${b.name}`, provider: 'pi', action: b.name, tool: b.name, args, outcome: r.chance(0.9) ? 'succeeded' : 'failed' })
          }
          sub++
        }
      }
    }
    if (facts.length) facts.splice(1, 0, { kind: 'phase', entryId: facts[0].entryId, subordinal: 'phase', address: `${facts[0].entryId}/phase`, phase: 'run' })
    return {
      kind: 'pi-fabric.branch-summary',
      version: 2,
      source: { firstEntryId: abandonedIds[0], lastEntryId: abandonedIds[abandonedIds.length - 1], entryCount: abandonedIds.length, oldLeafId: abandonedIds[abandonedIds.length - 1] },
      facts,
      omittedFacts: 0,
      sections: ['[Fabric Activity]'],
      request: { text: '', sourceBytes: 0, truncated: false },
    }
  }

  // --- a user turn -------------------------------------------------------

  userPrompt() {
    const r = this.rng
    const P = this.P
    const x = r.next()
    if (x < 0.12) return `I get this when running \`${r.pick(BASH_BY_LANG[P.lang])}\`:\n\n\`\`\`\n${buildErrors(r, P, P.lang)}\n\`\`\`\n\n${sentence(r, P)}`
    if (x < 0.2) return `${sentence(r, P)}\n\n\`\`\`\n${P.content(P.file(r)).split('\n').slice(0, r.range(4, 25)).join('\n')}\n\`\`\``
    return prose(r, P, 40, 420)
  }
  turn() {
    const r = this.rng
    const P = this.P
    const image = this.features.imageTurn && !this.stats.images && this.turnStarts.length >= 1 ? noisePngBase64(r, 40, 30) : null
    if (image) this.stats.images++
    this.user(image ? `Here is a screenshot of the problem. ${sentence(r, P)}` : this.userPrompt(), image)
    const rounds = r.weighted([0, 1, 2, 3, 4, 5, 6, 8], [14, 22, 20, 15, 11, 8, 6, 4])
    for (let i = 0; i < rounds; i++) {
      if (r.chance(0.015)) {
        // Aborted mid-stream (Esc): partial text or nothing, tool calls never executed.
        const content = r.chance(0.5) ? [{ type: 'text', text: sentence(r, P) }] : []
        this.assistant(content, 'aborted', 'Request was aborted', 100)
        this.stats.aborted++
        return
      }
      if (r.chance(0.004)) {
        this.assistant([], 'error', r.pick(['529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', 'terminated', 'Connection error.']), 0)
        this.stats.errors++
        return
      }
      const content = []
      let textLen = 0
      if (this.features.thinking && r.chance(0.35)) content.push(this.thinkingBlock())
      if (r.chance(0.55)) {
        const t = sentence(r, P, 5, 16)
        textLen += t.length
        content.push({ type: 'text', text: t })
      }
      const calls = []
      const nCalls = r.weighted([1, 2, 3], [75, 18, 7])
      for (let c = 0; c < nCalls; c++) {
        const fabric = this.features.fabric && (r.chance(0.05) || (this.fabricCarriers.length < this.features.minFabric && r.chance(0.35)))
        const name = fabric ? 'fabric_exec' : r.weighted(PI_TOOLS, [30, 5, 15, 22, this.features.grepWeight, 5, 5])
        const args = fabric ? { plan: sentence(r, P, 8, 20), label: `${rng2label(r, P)}` } : toolCallArgs(r, P, name)
        const call = { type: 'toolCall', id: this.model.callId(r), name, arguments: args }
        calls.push(call)
        content.push(call)
        textLen += 40 + JSON.stringify(args).length
        if (typeof args.path === 'string') {
          if (name === 'read') this.readFiles.add(args.path)
          if (name === 'edit' || name === 'write') this.modifiedFiles.add(args.path)
        }
      }
      this.assistant(content, 'toolUse', undefined, textLen)
      for (const call of calls) {
        if (call.name === 'fabric_exec') {
          const trace = fabricTrace(r, P)
          const id = this.toolResult(call, fabricSummary(trace), { trace }, trace.outcome !== 'succeeded')
          this.fabricCarriers.push(id)
          this.stats.fabricCarriers++
        } else {
          const res = toolResultFor(r, P, call.name, call.arguments)
          this.toolResult(call, res.text, res.details, res.isError)
        }
      }
    }
    const content = []
    if (this.features.thinking && r.chance(0.3)) content.push(this.thinkingBlock())
    const x = r.next()
    let text = prose(r, P, 150, 1200)
    if (x < 0.25) text += `\n\n${Array.from({ length: r.range(2, 6) }, () => `- ${sentence(r, P, 4, 12)}`).join('\n')}`
    else if (x < 0.35) text += `\n\n\`\`\`${EXT[P.lang][0]}\n${codeText(r, P, P.file(r).replace(/\.\w+$/, '.' + EXT[P.lang][0]), r.range(4, 30))}\`\`\``
    content.push({ type: 'text', text })
    this.turnEnds.push(this.assistant(content, 'stop', undefined, text.length))
  }

  // --- whole session -----------------------------------------------------

  generate() {
    const r = this.rng
    this.modelChange(this.model)
    this.thinkingLevel(this.features.thinking ? r.pick(THINKING_LEVELS.slice(1)) : 'off')
    const branchAt = this.features.branch ? Math.floor(this.target * (0.45 + 0.3 * r.next())) : Infinity
    let turns = 0
    let turnsAfterBranch = 0
    // A session hosting fabric plants goes on until its active path has a carrier for each (short `huge` sessions
    // may end first; longer sizes always had them by then, so their output is unchanged).
    const carriersShort = () => {
      if (!this.features.plantCarriers) return false
      const active = activePath(this.entries)
      return this.fabricCarriers.filter((id) => active.has(id)).length < this.features.plantCarriers
    }
    while (this.entries.length < this.target || (this.features.branch && (!this.branched || turnsAfterBranch < 1)) || carriersShort()) {
      if (turns > 0) {
        if (r.chance(this.features.bashExecutionRate)) this.bashExecution()
        if (r.chance(0.05)) this.custom()
        if (r.chance(this.features.customMessageRate)) this.customMessage()
        if (r.chance(0.05) && this.path.length > 4) this.label()
        if (r.chance(0.02)) this.thinkingLevel(r.pick(THINKING_LEVELS))
        if (r.chance(0.01)) this.modelChange(r.weighted(MODELS, MODELS.map((m) => m.weight)))
        if (r.chance(0.01)) this.sessionInfo()
        if (this.sinceCompaction >= this.compactEvery && this.turnStarts.length >= 2) this.compaction()
        if (!this.branched && this.entries.length >= branchAt && this.turnEnds.length >= 2) this.branch()
      }
      this.turn()
      turns++
      if (this.branched) turnsAfterBranch++
      if (turns === 1 && r.chance(0.5)) this.sessionInfo()
    }
    return this
  }
}

function rng2label(r, P) {
  return `${r.pick(['review', 'refactor', 'triage', 'audit', 'migrate', 'verify'])} ${r.pick(P.domain)}`
}

// ---------------------------------------------------------------------------
// Planting
// ---------------------------------------------------------------------------

/** Prepends `text` to the indexed text of the entry at `slot`; returns where it went. */
function plantText(obj, slot, text) {
  switch (slot) {
    case 'user': {
      const m = obj.message
      if (typeof m.content === 'string') m.content = `${text} ${m.content}`
      else m.content[0].text = `${text} ${m.content[0].text}`
      return 'message.content'
    }
    case 'assistant': {
      const b = obj.message.content.find((x) => x.type === 'text')
      b.text = `${text} ${b.text}`
      return 'message.content[text]'
    }
    case 'toolResult':
      obj.message.content[0].text = `${text}\n${obj.message.content[0].text}`
      return 'message.content[0].text'
    case 'bashExecution':
      obj.message.output = `${text}\n${obj.message.output}`
      return 'message.output'
    case 'customMessage':
      if (typeof obj.content === 'string') obj.content = `${text} ${obj.content}`
      else obj.content[0].text = `${text} ${obj.content[0].text}`
      return 'content'
    case 'compaction':
      obj.summary = `${text}\n${obj.summary}`
      return 'summary'
    case 'toolCallArg': {
      const call = obj.message.content.find((x) => x.type === 'toolCall' && x.name === 'grep')
      call.arguments.pattern = text
      return 'message.content[toolCall grep].arguments.pattern'
    }
  }
  throw new Error(slot)
}

const SLOT_FALLBACK = ['user', 'assistant', 'toolResult']

/** Whether entry `e` can take a plant in `slot` (active-path or abandoned, unused, short text). */
function plantable(e, slot, active, S, used) {
  const obj = e.obj
  if (used.has(obj.id) || S.activeSet.has(obj.id) !== active) return false
  if (e.textLen > 1200) return false // stays well inside the default max_entry_chars (2000)
  const m = obj.message
  // No thinking block before the text, so the plant stays near the start even with indexThinking.
  if (m?.role === 'assistant' && m.content.some((b) => b.type === 'thinking')) return false
  switch (slot) {
    case 'toolCallArg':
      return m?.role === 'assistant' && m.content.find((b) => b.type === 'toolCall')?.name === 'grep'
    case 'toolResult':
      return e.slot === 'toolResult' && !m.isError
    case 'user':
      return e.slot === 'user' && typeof m.content === 'string'
    default:
      return e.slot === slot
  }
}

/** Picks an unused entry of the session for a plant, falling back to other slots. */
function choosePlantEntry(S, prng, slot, active, used) {
  for (const s of [slot, ...SLOT_FALLBACK.filter((x) => x !== slot)]) {
    const candidates = S.entries.filter((e) => plantable(e, s, active, S, used))
    if (candidates.length) return { entry: candidates[prng.int(candidates.length)], slot: s }
  }
  throw new Error(`no entry for plant slot ${slot} in session ${S.index}`)
}

function activePath(entries) {
  const byId = new Map(entries.map((e) => [e.obj.id, e.obj]))
  const set = new Set()
  let cur = entries.length ? entries[entries.length - 1].obj : undefined
  while (cur && !set.has(cur.id)) {
    set.add(cur.id)
    cur = cur.parentId ? byId.get(cur.parentId) : undefined
  }
  return set
}

/** Ref of the normalized entry (mirrors src/session/normalize.rs). */
function entryRef(obj) {
  const m = obj.message
  if (!m) return null
  if (m.role === 'assistant') {
    const call = m.content.find((b) => b.type === 'toolCall')
    return call && PI_TOOLS.includes(call.name) ? `pi.${call.name}` : null
  }
  if (m.role === 'toolResult') return PI_TOOLS.includes(m.toolName) ? `pi.${m.toolName}` : null
  if (m.role === 'bashExecution') return 'pi.bash'
  return null
}

/** Per-ref counts of normalized entries: { [ref]: { [kind]: {active, all} } }. */
function refCounts(S) {
  const counts = {}
  const add = (ref, kind, active) => {
    const byKind = (counts[ref] ??= {})
    const c = (byKind[kind] ??= { active: 0, all: 0 })
    c.all++
    if (active) c.active++
  }
  for (const { obj } of S.entries) {
    const active = S.activeSet.has(obj.id)
    const ref = entryRef(obj)
    if (ref) add(ref, obj.message.role === 'assistant' ? 'toolCall' : obj.message.role, active)
    if (obj.message?.role === 'toolResult' && obj.message.toolName === 'fabric_exec') for (const op of obj.message.details.trace.operations) add(op.ref, 'fabricOp', active)
    if (obj.type === 'branch_summary' && obj.fromHook) for (const f of obj.details.facts) if (f.kind === 'operation') add(f.ref, 'branchFact', active)
  }
  return counts
}

// ---------------------------------------------------------------------------
// Corpus
// ---------------------------------------------------------------------------

function planNeedles(n) {
  // Ranks beyond the corpus (small sizes) are spread over its older half, not piled on the oldest session.
  let overflow = 0
  const idx = (rank) => {
    if (rank === Infinity) return 0
    if (rank < n) return n - 1 - rank
    return (overflow++ * 7) % Math.max(1, Math.ceil(n / 2))
  }
  const plans = new Map() // session index -> [plant]
  const add = (i, plant) => {
    if (!plans.has(i)) plans.set(i, [])
    plans.get(i).push(plant)
  }
  for (const t of RARE_TERMS) add(idx(t.rank), { category: 'rareTerms', token: t.token, text: t.token, slot: t.slot, active: true })
  PHRASES.forEach((p, k) => {
    const phrase = p.words.join(' ')
    add(idx(p.rank), { category: 'phrases', phraseIndex: k, role: 'phrase', text: phrase, slot: 'assistant', active: true })
    // Decoys: every word, never two of them adjacent in phrase order.
    const scrambled = [...p.words].reverse()
    for (let d = 0; d < 3; d++) {
      const text = scrambled.map((w, j) => (j === 0 ? w : `${['then', 'later', 'with', 'beside'][(j + d) % 4]} ${w}`)).join(' ')
      add(idx(p.rank + 7 + d * 40), { category: 'phrases', phraseIndex: k, role: 'decoy', text, slot: d === 1 ? 'user' : 'toolResult', active: true })
    }
    // Singles: each word alone in two more entries.
    p.words.forEach((w, j) => {
      for (let s = 0; s < 2; s++) add(idx(p.rank + 3 + j * 11 + s * 23), { category: 'phrases', phraseIndex: k, role: 'single', word: w, text: w, slot: s ? 'assistant' : 'user', active: true })
    })
  })
  STRUCTURAL.forEach((t, k) => {
    const i = idx(t.rank)
    add(i, { category: 'structural', structuralIndex: k, role: 'target', token: t.token, fabric: { ref: 'agents.run', outcome: 'failed' }, active: true })
    add(i, { category: 'structural', structuralIndex: k, role: 'lexical', token: t.token, fabric: { ref: 'agents.run', outcome: 'succeeded' }, active: true })
    add(idx(t.rank + 5), { category: 'structural', structuralIndex: k, role: 'lexical', token: t.token, fabric: { ref: 'pi.read', outcome: 'failed' }, active: true })
    add(idx(t.rank + 12), { category: 'structural', structuralIndex: k, role: 'lexical', token: t.token, text: t.token, slot: 'user', active: true })
  })
  ABANDONED.forEach((t, k) => add(-1 - k, { category: 'abandoned', token: t.token, text: t.token, slot: k ? 'assistant' : 'user', active: false, rank: t.rank }))
  add(idx(UNICODE_NEEDLE.rank), { category: 'unicode', token: UNICODE_NEEDLE.token, text: UNICODE_NEEDLE.token, slot: 'assistant', active: true })
  REGEX_NEEDLES.forEach((r, k) => add(idx(r.rank), { category: 'regex', regexIndex: k, token: r.match, text: `request ${r.match} failed:`, slot: 'bashExecution', active: true }))
  return plans
}

function sessionFeatures(ctx, i, plants) {
  const r = new Rng(hash32('features', ctx.seed, ctx.size, i))
  const n = ctx.n
  const needsFabric = plants.filter((p) => p.fabric).length
  return {
    project: i < PROJECTS.length ? i : PROJECTS.indexOf(r.weighted(PROJECTS, PROJECTS.map((p) => p.weight))),
    branch: i % 10 === 1 || plants.some((p) => p.category === 'abandoned'),
    fabric: needsFabric > 0 || r.chance(0.35) || i % 5 === 0,
    minFabric: needsFabric ? needsFabric + 1 : i % 5 === 0 ? 1 : 0,
    plantCarriers: needsFabric,
    imageTurn: r.chance(0.03) || i === Math.floor(n / 2),
    thinking: r.chance(0.6) && !plants.some((p) => p.slot === 'toolCallArg'),
    compactHeavy: i % 7 === 3 || plants.some((p) => p.slot === 'compaction'),
    // Sessions hosting a plant of some kind get more entries of that kind.
    grepWeight: plants.some((p) => p.slot === 'toolCallArg') ? 40 : 12,
    bashExecutionRate: plants.some((p) => p.slot === 'bashExecution') ? 0.3 : 0.08,
    customMessageRate: plants.some((p) => p.slot === 'customMessage') ? 0.2 : 0.04,
  }
}

function entriesTarget(ctx, i) {
  const spec = ctx.spec.entries
  const r = new Rng(hash32('length', ctx.seed, ctx.size, i))
  return spec.sigma ? r.logNormal(spec.mean, spec.sigma, spec.min, spec.max) : spec.mean
}

/**
 * Generates a corpus into `dir` and returns its manifest (also written to
 * `<dir>/corpus-manifest.json`). Refuses a `dir` whose `sessions/` is not empty
 * unless `overwrite: true` (then `sessions/` is deleted first).
 */
/** @param {{ dir: string, size?: string, seed?: number, onProgress?: (progress: { done: number, total: number, bytes: number, file: string }) => void, overwrite?: boolean }} options */
export function generateCorpus({ dir, size = 'medium', seed = 42, onProgress, overwrite = false }) {
  const spec = SIZES[size]
  if (!spec) throw new Error(`unknown corpus size ${size}; one of ${Object.keys(SIZES).join(', ')}`)
  if (!dir) throw new Error('generateCorpus: dir is required')
  dir = path.resolve(dir)
  const sessionsDir = path.join(dir, 'sessions')
  if (existsSync(sessionsDir) && readdirSync(sessionsDir).length) {
    if (!overwrite) throw new Error(`${sessionsDir} is not empty (pass overwrite: true to replace it)`)
    rmSync(sessionsDir, { recursive: true, force: true })
  }
  mkdirSync(sessionsDir, { recursive: true })

  const n = spec.sessions
  const vocab = new Vocabulary(seed)
  const ctx = { seed, size, spec, n, vocab, base64: base64Pool(seed) }
  ctx.projects = PROJECTS.map((p, k) => new Project(k, p, vocab, seed))
  for (const P of ctx.projects) mkdirSync(path.join(sessionsDir, encodeCwd(P.cwd)), { recursive: true })

  const plans = planNeedles(n)
  // Abandoned needles need a branched session: the one nearest the target rank.
  const branchedAt = (i) => i % 10 === 1
  ABANDONED.forEach((t, k) => {
    const want = n - 1 - Math.min(t.rank, n - 1)
    let best = -1
    for (let i = 0; i < n; i++) if ((branchedAt(i) || i === want) && (best < 0 || Math.abs(i - want) < Math.abs(best - want))) best = i
    const list = plans.get(-1 - k)
    plans.delete(-1 - k)
    if (!plans.has(best)) plans.set(best, [])
    plans.get(best).push(...list)
  })

  const needles = { rareTerms: [], phrases: PHRASES.map((p) => ({ phrase: p.words.join(' '), words: p.words, entry: null, decoys: [], singles: [] })), structural: STRUCTURAL.map((t) => ({ token: t.token, ref: 'agents.run', outcome: 'failed', target: null, lexicalOnly: [] })), abandoned: [], unicode: [], regex: [] }
  const refTotals = {}
  const sessions = []
  let clock = BASE_TIME
  let totalBytes = 0
  let totalEntries = 0
  const seen = new Set()

  for (let i = 0; i < n; i++) {
    const plants = plans.get(i) ?? []
    const features = sessionFeatures(ctx, i, plants)
    const start = clock
    const S = new SessionBuilder(ctx, i, start, entriesTarget(ctx, i), features).generate()
    S.activeSet = activePath(S.entries)
    const P = S.P
    const sessionId = uuidv7(start, new Rng(hash32('uuid', seed, size, i)))
    const file = path.join(sessionsDir, encodeCwd(P.cwd), `${iso(start).replace(/[:.]/g, '-')}_${sessionId}.jsonl`)
    const rank = n - 1 - i
    const where = (obj) => ({ file, sessionId, entryId: obj.id, rank, hot: rank < HOT_SESSIONS, activePath: S.activeSet.has(obj.id) })

    // Plants (their own PRNG, so they never perturb the generated content).
    const prng = new Rng(hash32('plants', seed, size, i))
    const used = new Set()
    for (const plant of plants) {
      if (plant.fabric) {
        const carriers = S.fabricCarriers.filter((id) => !used.has(id) && S.activeSet.has(id))
        if (!carriers.length) throw new Error(`session ${i}: no free fabric carrier for ${plant.token}`)
        const id = carriers[prng.int(carriers.length)]
        used.add(id)
        const obj = S.byId.get(id)
        const trace = obj.message.details.trace
        const args = plant.fabric.ref === 'agents.run' ? { task: `review the ${plant.token} rollout and report blockers`, agent: 'reviewer' } : { path: `src/${plant.token}/index.ts` }
        const op = fabricOp(prng, P, trace.operations[trace.operations.length - 1].sequence + 1, plant.fabric.ref, plant.fabric.outcome, args)
        trace.operations.push(op)
        const fixed = finishTrace(prng, trace.operations)
        fixed.phases = trace.phases
        obj.message.details.trace = fixed
        obj.message.content[0].text = fabricSummary(fixed)
        obj.message.isError = fixed.outcome !== 'succeeded'
        const rec = { ...where(obj), carrierEntryId: id, operationAddress: `${id}/${op.sequence}`, ref: op.ref, outcome: op.outcome }
        if (plant.role === 'target') needles.structural[plant.structuralIndex].target = rec
        else needles.structural[plant.structuralIndex].lexicalOnly.push({ ...rec, kind: 'fabricOp' })
        continue
      }
      const { entry, slot } = choosePlantEntry(S, prng, plant.slot, plant.active, used)
      used.add(entry.obj.id)
      const field = plantText(entry.obj, slot, plant.text)
      const rec = { ...where(entry.obj), type: entry.obj.type, role: entry.obj.message?.role ?? null, field }
      switch (plant.category) {
        case 'rareTerms':
          needles.rareTerms.push({ token: plant.token, ...rec })
          break
        case 'phrases': {
          const ph = needles.phrases[plant.phraseIndex]
          if (plant.role === 'phrase') ph.entry = rec
          else if (plant.role === 'decoy') ph.decoys.push({ text: plant.text, ...rec })
          else ph.singles.push({ word: plant.word, ...rec })
          break
        }
        case 'structural':
          needles.structural[plant.structuralIndex].lexicalOnly.push({ ...rec, kind: 'entry', operationAddress: null })
          break
        case 'abandoned':
          needles.abandoned.push({ token: plant.token, ...rec })
          break
        case 'unicode':
          needles.unicode.push({ token: UNICODE_NEEDLE.token, canonical: UNICODE_NEEDLE.canonical, queryForms: UNICODE_NEEDLE.queryForms, ...rec })
          break
        case 'regex':
          needles.regex.push({ pattern: REGEX_NEEDLES[plant.regexIndex].pattern, match: REGEX_NEEDLES[plant.regexIndex].match, ...rec })
          break
      }
    }
    for (const e of S.entries) if (e.obj.message?.role === 'toolResult' && e.obj.message.toolName === 'fabric_exec' && !isValidFabricTrace(e.obj.message.details.trace)) throw new Error(`invalid fabric trace in session ${i}`)

    // Serialize: header + one JSON line per entry, each ending in "\n" (as Pi appends).
    const header = { type: 'session', version: 3, id: sessionId, timestamp: iso(start), cwd: P.cwd }
    const lines = new Array(S.entries.length + 1)
    lines[0] = JSON.stringify(header)
    for (let k = 0; k < S.entries.length; k++) lines[k + 1] = JSON.stringify(S.entries[k].obj)
    const text = lines.join('\n') + '\n'
    writeFileSync(file, text)
    const bytes = Buffer.byteLength(text)
    let mtimeMs = MTIME_CEILING - (n - 1 - i) * MTIME_SPACING_MS
    while (seen.has(Math.floor(mtimeMs / 1000))) mtimeMs += 1000 // distinct whole seconds: unambiguous order
    seen.add(Math.floor(mtimeMs / 1000))
    utimesSync(file, new Date(mtimeMs), new Date(mtimeMs))
    clock = S.clock + 60_000 + Math.round(S.rng.exp(90 * 60_000))

    const counts = refCounts(S)
    for (const [ref, kinds] of Object.entries(counts)) for (const [kind, c] of Object.entries(kinds)) {
      const t = ((refTotals[ref] ??= {})[kind] ??= { active: 0, all: 0 })
      t.active += c.active
      t.all += c.all
    }
    totalBytes += bytes
    totalEntries += S.entries.length
    sessions.push({
      file,
      id: sessionId,
      cwd: P.cwd,
      bytes,
      entries: S.entries.length,
      mtimeMs,
      rank,
      hot: rank < HOT_SESSIONS,
      leafId: S.entries[S.entries.length - 1].obj.id,
      activeEntries: S.activeSet.size,
      features: { branch: S.branched, compactions: S.stats.compactions, fabricCarriers: S.stats.fabricCarriers, images: S.stats.images, aborted: S.stats.aborted, errorTurns: S.stats.errors, bashExecutions: S.stats.bashExecutions },
      refs: { 'pi.grep': counts['pi.grep'] ?? {}, 'agents.run': counts['agents.run'] ?? {} },
    })
    onProgress?.({ done: i + 1, total: n, bytes: totalBytes, file })
  }

  const manifest = {
    generatorVersion: GENERATOR_VERSION,
    size,
    seed,
    dir,
    agentDir: dir,
    sessionsDir,
    baseTime: iso(BASE_TIME),
    hotSessions: HOT_SESSIONS,
    projects: PROJECTS.map((p) => ({ cwd: p.cwd, sessionDir: path.join(sessionsDir, encodeCwd(p.cwd)), sessions: sessions.filter((s) => s.cwd === p.cwd).length })),
    totalBytes,
    totalEntries,
    sessions,
    needles: {
      ...needles,
      commonTerms: COMMON_TERMS,
      absentRefs: ABSENT_REFS,
      refTotals,
    },
  }
  writeFileSync(path.join(dir, 'corpus-manifest.json'), JSON.stringify(manifest, null, 1) + '\n')
  return manifest
}

/**
 * Returns the manifest of the corpus in `dir` when it was generated with the same
 * size, seed and generator version and every file still has its recorded size;
 * otherwise regenerates it (overwriting `sessions/`).
 */
/** @param {{ dir: string, size?: string, seed?: number, onProgress?: (progress: { done: number, total: number, bytes: number, file: string }) => void }} options */
export function loadOrGenerateCorpus({ dir, size = 'medium', seed = 42, onProgress }) {
  const manifestPath = path.join(path.resolve(dir), 'corpus-manifest.json')
  if (existsSync(manifestPath)) {
    try {
      const m = JSON.parse(readFileSync(manifestPath, 'utf8'))
      const fresh = m.generatorVersion === GENERATOR_VERSION && m.size === size && m.seed === seed && m.sessions.every((s) => existsSync(s.file) && statSync(s.file).size === s.bytes)
      if (fresh) {
        for (const s of m.sessions) utimesSync(s.file, new Date(s.mtimeMs), new Date(s.mtimeMs))
        return m
      }
    } catch {
      // fall through and regenerate
    }
  }
  return generateCorpus({ dir, size, seed, onProgress, overwrite: true })
}

// ---------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const [dir, size = 'medium', seed = '42'] = process.argv.slice(2)
  if (!dir) {
    console.error(`usage: node bench/corpus.mjs <dir> [${Object.keys(SIZES).join('|')}] [seed]`)
    process.exit(2)
  }
  const t0 = process.hrtime.bigint()
  const m = generateCorpus({ dir, size, seed: Number(seed), overwrite: true })
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  console.log(`${m.size} seed=${m.seed}: ${m.sessions.length} sessions, ${m.totalEntries} entries, ${(m.totalBytes / 1e6).toFixed(1)} MB in ${(ms / 1000).toFixed(2)} s -> ${m.dir}`)
}
