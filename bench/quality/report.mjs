// The readable tables of a quality report.

const f3 = (v) => (v === null || v === undefined ? '–' : v.toFixed(3))
const pct = (v) => (v === null || v === undefined ? '–' : `${(v * 100).toFixed(1)}%`)
const ms = (v) => (v === null || v === undefined ? '–' : v.toFixed(2))

/** Left-aligned first column(s), right-aligned numbers. */
function table(/** @type {string[]} */ head, /** @type {string[][]} */ rows, leftColumns = 1) {
  const width = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)))
  const line = (r) => r.map((cell, c) => (c < leftColumns ? cell.padEnd(width[c]) : cell.padStart(width[c]))).join('  ')
  return [line(head), line(width.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')
}

/** The tables of one set's evaluation (see run.mjs `evaluateSet` for the shape). */
export function formatSet(/** @type {any} */ s) {
  const out = []
  out.push(`== ${s.name}: ${s.sessions} sessions in ${s.projects} projects (${s.hotSessions} hot), ${s.questions} questions${s.questionsCapped ? ` (capped from ${s.questionsAvailable})` : ''}; index built in ${(s.index.ms / 1000).toFixed(1)} s${Object.keys(s.config ?? {}).length ? `; config ${JSON.stringify(s.config)}` : ''} ==`)
  const overall = []
  for (const scope of s.scopes)
    for (const system of s.systems) {
      const a = s.overall[system][scope]
      overall.push([system, scope, String(a.n), f3(a.r1), f3(a.r5), f3(a.r10), f3(a.ndcg10), pct(a.zeroHits), `${pct(a.hotShareTop5)} / ${pct(a.hotShareScope)}`, ms(a.latencyMs?.p50), ms(a.latencyMs?.p95), a.pages === null ? '–' : a.pages.toFixed(2), system === 'engine' ? String(a.incomplete) : '–'])
    }
  out.push(table(['system', 'scope', 'n', 'R@1', 'R@5', 'R@10', 'NDCG@10', 'zero hits', 'hot top-5 / scope', 'p50 ms', 'p95 ms', 'pages', 'incomplete'], overall, 2))
  out.push('')
  out.push('per question type (engine | bm25):')
  const perType = []
  for (const type of s.types)
    for (const scope of s.scopes) {
      const [e, b] = s.systems.map((system) => s.byType[type][system][scope])
      perType.push([type, scope, String(e.n), f3(e.r1), f3(e.r5), f3(e.r10), f3(e.ndcg10), '|', f3(b.r1), f3(b.r5), f3(b.r10), f3(b.ndcg10), (e.ndcg10 - b.ndcg10 >= 0 ? '+' : '') + (e.ndcg10 - b.ndcg10).toFixed(3)])
    }
  out.push(table(['type', 'scope', 'n', 'R@1', 'R@5', 'R@10', 'NDCG@10', '|', 'R@1', 'R@5', 'R@10', 'NDCG@10', 'Δ NDCG'], perType, 2))
  out.push('')
  out.push('by where the answers are (engine | bm25):')
  const byTier = []
  for (const tier of Object.keys(s.byAnswerTier))
    for (const scope of s.scopes) {
      const [e, b] = s.systems.map((system) => s.byAnswerTier[tier][system][scope])
      byTier.push([tier, scope, String(e.n), f3(e.r5), f3(e.ndcg10), '|', f3(b.r5), f3(b.ndcg10)])
    }
  out.push(table(['answers', 'scope', 'n', 'R@5', 'NDCG@10', '|', 'R@5', 'NDCG@10'], byTier, 2))
  out.push('')
  out.push('evidence packs (memory.pack) against the first recall page: questions with an answer session cited (all of them), median tokens (JSON chars / 4):')
  const packs = []
  for (const scope of s.scopes) {
    const p = s.packs[scope]
    for (const b of p.budgets) packs.push([`pack ${b.maxTokens}`, scope, String(p.n), pct(b.cited), pct(b.citedAll), String(b.tokensP50), b.sessionsMean.toFixed(2), String(b.unverified), String(b.errors)])
    packs.push(['10-hit page', scope, String(p.n), pct(p.page.cited), pct(p.page.citedAll), String(p.page.tokensP50), '–', '–', '–'])
  }
  out.push(table(['context', 'scope', 'n', 'cited', 'all cited', 'p50 tokens', 'sessions', 'unverified', 'errors'], packs, 2))
  const reasons = s.scopes.map((scope) => `${scope}: ${Object.entries(s.overall.engine[scope].reasons).map(([r, n]) => `${r} ${n}`).join(', ') || 'none'}`)
  out.push('')
  out.push(`engine coverage.complete false (first pages): ${s.scopes.map((scope) => `${scope} ${s.overall.engine[scope].incomplete}/${s.overall.engine[scope].n}`).join(', ')}; reasons: ${reasons.join('; ')}`)
  out.push(`hit tier vs file mtime rank: ${s.tierMismatches} mismatches; errors: ${s.scopes.map((scope) => s.overall.engine[scope].errors).join('/')}`)
  return out.join('\n')
}
