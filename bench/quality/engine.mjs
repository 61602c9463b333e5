// The engine side of a quality run: index a written set once, then turn each question into a ranked list of
// distinct sessions by following the recall's pages.
import { MemoryEngine } from 'pi-fabric-memory/native'

/** Distinct sessions wanted per question, and the most pages followed to get them. */
export const DEPTH = 10
export const MAX_PAGES = 10

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
  }
}
