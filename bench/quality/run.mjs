// `node bench/run.mjs --quality`: retrieval quality of recall against plain BM25 over the same session files.
//   --quality-data <dir>       LoCoMo conversation JSON files (else $PFM_QUALITY_DATA; absent: that set is skipped)
//   --quality-only locomo|coding
//   --quality-questions N      at most N questions per set, spread evenly over the set (a quick run)
//   --quality-keep             keep the temp agent dirs (printed) for a look at the sessions
//   --config '<json>'          memory config merged into every engine's (e.g. '{"hotSessions":1000}')
//   --json <file>              the whole report, per question included
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Bm25 } from './bm25.mjs'
import { generateCodingSet } from './coding.mjs'
import { DEPTH, Engines, packSessions, rankSessions } from './engine.mjs'
import { CATEGORIES, HOW_TO_GET, findLocomoDir, loadLocomo } from './locomo.mjs'
import { aggregate, aggregatePacks, scoreRanking } from './metrics.mjs'
import { writeSet } from './pi-session.mjs'
import { formatSet } from './report.mjs'

/** @type {('project' | 'global')[]} */
const SCOPES = ['project', 'global']
const SYSTEMS = ['engine', 'bm25']
const PER_QUESTION = SCOPES.length * SYSTEMS.length
/** The engine's default `hotSessions`. */
const HOT_SESSIONS = 50

/** The kernel's CPU pressure (share of the last 10 s some task waited for a CPU): latencies are only comparable alike. */
const cpuPressure = () => (existsSync('/proc/pressure/cpu') ? Number(readFileSync('/proc/pressure/cpu', 'utf8').match(/avg10=([\d.]+)/)?.[1]) : null)

/** `n` questions spread evenly over the list (every type keeps its share), in their order. */
function spread(/** @type {any[]} */ questions, /** @type {number} */ n) {
  if (!(n < questions.length)) return questions
  return Array.from({ length: n }, (_, i) => questions[Math.floor((i * questions.length) / n)])
}

/** Waits until every file written is older than the engine's 2 s racy window, so no stamp forces a re-hash. */
const settle = (writtenAt) => new Promise((resolve) => setTimeout(resolve, Math.max(0, 2500 - (Date.now() - writtenAt))))

/** Groups `results` by `keyOf` and aggregates each group per system and scope. */
function grouped(results, keyOf, order) {
  const groups = {}
  for (const key of order) groups[key] = Object.fromEntries(SYSTEMS.map((system) => [system, Object.fromEntries(SCOPES.map((scope) => [scope, []]))]))
  for (const r of results) groups[keyOf(r)]?.[r.system][r.scope].push(r)
  for (const byScope of Object.values(groups)) for (const system of SYSTEMS) for (const scope of SCOPES) byScope[system][scope] = aggregate(byScope[system][scope])
  return groups
}

/** Writes, indexes and questions one set; returns its report (tables' figures and every question's rankings). */
async function evaluateSet(/** @type {import('./pi-session.mjs').QualitySet} */ set, options) {
  const root = mkdtempSync(path.join(tmpdir(), `pfm-quality-${set.name}-`))
  const agentDir = path.join(root, 'agent')
  try {
    const hotSessions = options.config.hotSessions ?? HOT_SESSIONS
    const written = writeSet(set, agentDir, hotSessions)
    const writtenAt = Date.now()
    const byKey = new Map(written.map((w) => [w.key, w]))
    const keyOf = new Map(written.map((w) => [w.sessionId, w.key]))
    const questions = spread(set.questions, options.maxQuestions)
    for (const q of questions) for (const a of q.answers) if (!byKey.has(a)) throw new Error(`${q.id}: answer ${a} is not a session of the set`)
    const cwds = [...new Set(written.map((w) => w.cwd))].sort()
    /** The hot tier's share of each scope's sessions (`project <cwd>`, `global`). */
    const share = (list) => list.filter((w) => w.hot).length / list.length
    const hotShare = new Map(cwds.map((cwd) => [`project ${cwd}`, share(written.filter((w) => w.cwd === cwd))]))
    hotShare.set('global', share(written))

    await settle(writtenAt)
    const engines = new Engines(agentDir, path.join(root, 'index'), options.config)
    const index = await engines.index(cwds[0])
    // A first call per engine loads its view of the index: not a question's latency.
    for (const cwd of new Set(questions.map((q) => q.cwd))) for (const scope of SCOPES) await engines.for(cwd).recall({ query: 'warmup', scope })
    const bm25 = new Bm25(written)

    /** @type {import('./metrics.mjs').QuestionResult[]} */
    const results = []
    let tierMismatches = 0
    const started = performance.now()
    for (const q of questions) {
      for (const scope of SCOPES) {
        const scopeName = scope === 'global' ? 'global' : `project ${q.cwd}`
        const base = { question: q.id, type: q.type, scope, answers: q.answers, scopeHotShare: hotShare.get(scopeName) }
        const e = await rankSessions(engines.for(q.cwd), q.query, scope, keyOf)
        e.packs = await packSessions(engines.for(q.cwd), q.query, scope, keyOf)
        tierMismatches += e.top.filter((t) => byKey.get(t.key)?.hot !== t.hot).length
        results.push({ ...base, system: 'engine', ...e, ...scoreRanking(e.top, q.answers) })
        const ranked = bm25.search(q.query, bm25.scope(scopeName, (d) => scope === 'global' || byKey.get(d.key).cwd === q.cwd))
        const top = ranked.slice(0, DEPTH).map(({ key }) => ({ key, hot: byKey.get(key).hot }))
        results.push({ ...base, system: 'bm25', top, zeroHits: ranked.length === 0, ...scoreRanking(top, q.answers) })
      }
      if (options.onProgress) options.onProgress(set.name, results.length / PER_QUESTION, questions.length)
    }
    const types = [...new Set([...(set.typeOrder ?? []), ...questions.map((q) => q.type)])].filter((t) => questions.some((q) => q.type === t))
    const answerTier = (r) => {
      const hot = r.answers.map((a) => byKey.get(a).hot)
      return hot.every(Boolean) ? 'all hot' : hot.some(Boolean) ? 'hot and cold' : 'all cold'
    }
    return {
      name: set.name,
      dir: options.keep ? agentDir : undefined,
      config: options.config,
      sessions: written.length,
      projects: cwds.length,
      hotSessions: written.filter((w) => w.hot).length,
      questions: questions.length,
      questionsAvailable: set.questions.length,
      questionsCapped: questions.length < set.questions.length,
      skipped: set.skipped,
      index,
      questionsMs: performance.now() - started,
      scopes: SCOPES,
      systems: SYSTEMS,
      types,
      overall: grouped(results, () => 'all', ['all']).all,
      packs: Object.fromEntries(SCOPES.map((scope) => [scope, aggregatePacks(results.filter((r) => r.system === 'engine' && r.scope === scope))])),
      byType: grouped(results, (r) => r.type, types),
      byAnswerTier: grouped(results, answerTier, ['all hot', 'hot and cold', 'all cold']),
      tierMismatches,
      sessionList: written.map((w) => ({ key: w.key, sessionId: w.sessionId, file: path.relative(agentDir, w.file), rank: w.rank, hot: w.hot })),
      perQuestion: questions.map((q, i) => ({
        ...q,
        answerRanks: Object.fromEntries(q.answers.map((a) => [a, byKey.get(a).rank])),
        // Each question's results were pushed together: SYSTEMS × SCOPES of them, in order.
        results: Object.fromEntries(results.slice(i * PER_QUESTION, (i + 1) * PER_QUESTION).map((r) => [`${r.system} ${r.scope}`, { top: r.top.map((t) => t.key), r5: r.r5, ndcg10: r.ndcg10, ms: r.ms, packs: r.packs?.map((p) => ({ maxTokens: p.maxTokens, tokens: p.tokens, cited: p.keys })) }])),
      })),
    }
  } finally {
    if (!options.keep) rmSync(root, { recursive: true, force: true })
  }
}

export async function runQuality(/** @type {string[]} */ argv) {
  const option = (name, fallback = undefined) => {
    const at = argv.indexOf(`--${name}`)
    return at >= 0 ? argv[at + 1] : fallback
  }
  const only = option('quality-only')
  if (only && only !== 'locomo' && only !== 'coding') throw new Error(`--quality-only takes locomo or coding, not ${only}`)
  const maxQuestions = option('quality-questions') === undefined ? Infinity : Number(option('quality-questions'))
  const options = {
    maxQuestions,
    config: JSON.parse(option('config', '{}')),
    keep: argv.includes('--quality-keep'),
    onProgress: process.stderr.isTTY ? (name, done, total) => process.stderr.write(`\r${name}: ${done}/${total} questions`) : undefined,
  }
  const started = performance.now()
  const report = { machine: { node: process.version, cpuPressure10s: [cpuPressure()] }, options: { only: only ?? null, maxQuestions: Number.isFinite(maxQuestions) ? maxQuestions : null }, sets: {} }
  /** @type {(() => import('./pi-session.mjs').QualitySet)[]} */
  const sets = []
  if (only !== 'coding') {
    const dir = findLocomoDir(option('quality-data'))
    if (dir) sets.push(() => Object.assign(loadLocomo(dir), { typeOrder: Object.values(CATEGORIES) }))
    else {
      console.log(`${HOW_TO_GET}\nSkipping the LoCoMo set.\n`)
      report.sets.locomo = { skipped: 'data not found' }
      if (only === 'locomo') process.exitCode = 1
    }
  }
  if (only !== 'locomo') sets.push(() => generateCodingSet())
  for (const load of sets) {
    const set = load()
    const s = await evaluateSet(set, options)
    if (options.onProgress) process.stderr.write('\n')
    report.sets[s.name] = s
    console.log(formatSet(s))
    if (s.dir) console.log(`sessions kept in ${s.dir}`)
    console.log('')
  }
  report.totalMs = performance.now() - started
  report.machine.cpuPressure10s.push(cpuPressure())
  console.log(`quality run: ${(report.totalMs / 1000).toFixed(1)} s (CPU pressure ${report.machine.cpuPressure10s.map((p) => `${p ?? '?'} %`).join(' → ')})`)
  const json = option('json')
  if (json) {
    mkdirSync(path.dirname(path.resolve(json)), { recursive: true })
    writeFileSync(json, JSON.stringify(report, null, 1) + '\n')
    console.log(`report: ${json}`)
  }
}
