// The engine side of a quality run: index a written set once, then turn each question into a ranked list of
// distinct sessions by following the recall's pages, and into evidence packs at a few budgets.
import { MemoryEngine } from 'pi-fabric-memory/native'

/** Distinct sessions wanted per question, and the most pages followed to get them. */
export const DEPTH = 10
export const MAX_PAGES = 10
/** The pack budgets measured (issue 37: the answer session's share cited at each, against the 10-hit page). */
export const PACK_BUDGETS = [500, 1000, 2000, 4000]

/** The pack's own token rule (docs/api.md "memory.pack"): compact JSON length / 4, rounded up. */
export const tokensOf = (result) => Math.ceil(JSON.stringify(result).length / 4)

/** One engine per cwd (a `project` recall is the engine's cwd), all on one agent dir and one index dir. */
export class Engines {
  constructor(/** @type {string} */ agentDir, /** @type {string} */ indexDir, config = {}) {
    this.agentDir = agentDir
    this.config = { indexDir, maxSessions: 100000, ...config }
    /** @type {Map<string, MemoryEngine>} */
    this.byCwd = new Map()
  }

  for(/** @type {string} */ cwd) {
    let engine = this.byCwd.get(cwd)
    if (!engine) {
      engine = new MemoryEngine({ agentDir: this.agentDir, cwd, config: this.config })
      this.byCwd.set(cwd, engine)
    }
    return engine
  }

  /** Builds the index: global `sessions` calls until no session is stale (each call is budgeted). */
  async index(/** @type {string} */ cwd) {
    const started = performance.now()
    let page
    for (let calls = 0; calls < 1000; calls++) {
      page = await this.for(cwd).sessions({ scope: 'global', limit: 1 })
      if (page.coverage.staleSessions === 0) break
    }
    return { ms: performance.now() - started, coverage: page.coverage }
  }
}

/**
 * Runs one question in one scope: the first page, then `next` pages until DEPTH distinct sessions or no more
 * hits. An entry hit comes from a hot session, a session hit from a cold one (`tier` says which).
 * @param {MemoryEngine} engine
 * @param {Map<string, string>} keyOf session id → session key
 */
export async function rankSessions(engine, query, scope, keyOf) {
  const started = performance.now()
  let page = await engine.recall({ query, scope })
  const ms = performance.now() - started
  const first = page
  /** @type {Map<string, boolean>} session key → hot */
  const seen = new Map()
  let pages = 1
  for (;;) {
    for (const hit of page.hits) {
      const key = keyOf.get(hit.sessionId) ?? `unknown:${hit.sessionId}`
      if (!seen.has(key)) seen.set(key, hit.tier === 'hot')
      if (seen.size >= DEPTH) break
    }
    if (seen.size >= DEPTH || !page.next || pages >= MAX_PAGES) break
    page = await engine.recall(/** @type {any} */ (page.next.args))
    pages++
  }
  return {
    top: [...seen].map(([key, hot]) => ({ key, hot })),
    ms,
    msAllPages: performance.now() - started,
    pages,
    zeroHits: first.hits.length === 0,
    complete: first.coverage.complete,
    reasons: first.coverage.reasons,
    error: first.error?.code ?? page.error?.code,
    // The page a model would read instead of a pack: what it costs and which sessions it shows.
    firstPage: { tokens: tokensOf(first), keys: [...new Set(first.hits.map((hit) => keyOf.get(hit.sessionId) ?? `unknown:${hit.sessionId}`))] },
  }
}

/**
 * Packs one question in one scope at each of PACK_BUDGETS: the sessions each cites (as keys) and its tokens.
 * @param {MemoryEngine} engine
 * @param {Map<string, string>} keyOf session id → session key
 */
export async function packSessions(engine, query, scope, keyOf) {
  const packs = []
  for (const maxTokens of PACK_BUDGETS) {
    const pack = await engine.pack({ query, scope, maxTokens })
    packs.push({
      maxTokens,
      tokens: pack.tokens,
      keys: pack.sessions.map((s) => keyOf.get(s.sessionId) ?? `unknown:${s.sessionId}`),
      unverified: pack.sessions.flatMap((s) => s.evidence).filter((c) => !c.verified).length,
      error: pack.error?.code,
    })
  }
  return packs
}
