// Ranking metrics over the first distinct sessions of a hit stream, and their aggregation.

/**
 * @typedef {{ key: string, hot: boolean }} Ranked
 * @typedef {{ question: string, type: string, system: string, scope: string, top: Ranked[], answers: string[],
 *   r1: number, r5: number, r10: number, ndcg10: number, zeroHits: boolean, scopeHotShare: number,
 *   ms?: number, msAllPages?: number, pages?: number, complete?: boolean, reasons?: string[], error?: string,
 *   firstPage?: { tokens: number, keys: string[] }, packs?: Packed[] }} QuestionResult
 * @typedef {{ maxTokens: number, tokens: number, keys: string[], unverified: number, error?: string }} Packed
 */

/** Share of `answers` among the first `k` ranked sessions. */
const recallAt = (keys, answers, k) => keys.slice(0, k).filter((key) => answers.has(key)).length / answers.size

/** Binary-relevance NDCG@10; the ideal ranking puts min(|answers|, 10) answers first. */
function ndcgAt10(keys, answers) {
  let dcg = 0
  keys.slice(0, 10).forEach((key, i) => {
    if (answers.has(key)) dcg += 1 / Math.log2(i + 2)
  })
  let ideal = 0
  for (let i = 0; i < Math.min(answers.size, 10); i++) ideal += 1 / Math.log2(i + 2)
  return dcg / ideal
}

/** R@1, R@5, R@10 and NDCG@10 of distinct sessions `top` (best first) against the question's answer sessions. */
export function scoreRanking(/** @type {Ranked[]} */ top, /** @type {string[]} */ answerKeys) {
  const keys = top.map((t) => t.key)
  const answers = new Set(answerKeys)
  return { r1: recallAt(keys, answers, 1), r5: recallAt(keys, answers, 5), r10: recallAt(keys, answers, 10), ndcg10: ndcgAt10(keys, answers) }
}

/** Nearest-rank percentile. */
export function percentile(/** @type {number[]} */ samples, /** @type {number} */ q) {
  if (!samples.length) return null
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]
}

const mean = (values) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : null)

/** The figures of a group of results (one system, one scope, maybe one question type). */
export function aggregate(/** @type {QuestionResult[]} */ results) {
  const top5 = results.flatMap((r) => r.top.slice(0, 5))
  const timed = results.filter((r) => r.ms !== undefined)
  const reasons = {}
  for (const r of results) for (const reason of r.reasons ?? []) reasons[reason] = (reasons[reason] ?? 0) + 1
  return {
    n: results.length,
    r1: mean(results.map((r) => r.r1)),
    r5: mean(results.map((r) => r.r5)),
    r10: mean(results.map((r) => r.r10)),
    ndcg10: mean(results.map((r) => r.ndcg10)),
    zeroHits: mean(results.map((r) => (r.zeroHits ? 1 : 0))),
    // The hot tier's share of the top-5 slots filled, against its share of the sessions each question's scope holds.
    hotShareTop5: top5.length ? top5.filter((t) => t.hot).length / top5.length : null,
    hotShareScope: mean(results.map((r) => r.scopeHotShare)),
    latencyMs: timed.length ? { p50: percentile(timed.map((r) => r.ms), 0.5), p95: percentile(timed.map((r) => r.ms), 0.95) } : null,
    latencyAllPagesMs: timed.length ? { p50: percentile(timed.map((r) => r.msAllPages), 0.5), p95: percentile(timed.map((r) => r.msAllPages), 0.95) } : null,
    pages: timed.length ? mean(timed.map((r) => r.pages)) : null,
    incomplete: results.filter((r) => r.complete === false).length,
    errors: results.filter((r) => r.error).length,
    reasons,
  }
}

/**
 * The pack figures of a group of engine results: per budget, the share of questions with an answer session cited
 * (`cited`; every one of them: `citedAll`) and the median pack tokens; the same share and median for the first
 * recall page, the 10 hits a model would read instead.
 */
export function aggregatePacks(/** @type {QuestionResult[]} */ results) {
  const shares = (/** @type {(r: QuestionResult) => string[]} */ keysOf) => {
    const found = results.map((r) => r.answers.filter((a) => keysOf(r).includes(a)).length)
    return { cited: mean(found.map((n) => (n > 0 ? 1 : 0))), citedAll: mean(found.map((n, i) => (n === results[i].answers.length ? 1 : 0))) }
  }
  const budgets = results[0]?.packs?.map((p) => p.maxTokens) ?? []
  return {
    n: results.length,
    budgets: budgets.map((maxTokens, b) => ({
      maxTokens,
      ...shares((r) => r.packs[b].keys),
      tokensP50: percentile(results.map((r) => r.packs[b].tokens), 0.5),
      sessionsMean: mean(results.map((r) => r.packs[b].keys.length)),
      unverified: results.reduce((sum, r) => sum + r.packs[b].unverified, 0),
      errors: results.filter((r) => r.packs[b].error).length,
    })),
    page: { ...shares((r) => r.firstPage.keys), tokensP50: percentile(results.map((r) => r.firstPage.tokens), 0.5) },
  }
}
