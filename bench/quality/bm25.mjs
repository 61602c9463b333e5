// Plain BM25 over whole sessions: the baseline the engine's ranking is compared with.
import { sessionText, tokenize } from './text.mjs'

const K1 = 1.2
const B = 0.75

/**
 * One document per session; `search` ranks the sessions of a scope (a set of keys) with statistics (N, df,
 * average length) over that scope only, as the engine's IDF is over the call's universe.
 */
export class Bm25 {
  /** @param {{ key: string, mtimeMs: number, messages: Record<string, any>[] }[]} sessions */
  constructor(sessions, tokenizer = tokenize) {
    this.tokenizer = tokenizer
    /** @type {{ key: string, mtimeMs: number, length: number, tf: Map<string, number> }[]} */
    this.docs = sessions.map((s) => {
      const tf = new Map()
      const tokens = tokenizer(sessionText(s.messages))
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1)
      return { key: s.key, mtimeMs: s.mtimeMs, length: tokens.length, tf }
    })
    /** Statistics per scope, computed on first use. */
    this.scopes = new Map()
  }

  /** @param {string} name @param {(doc: { key: string }) => boolean} member */
  scope(name, member) {
    let s = this.scopes.get(name)
    if (!s) {
      const docs = this.docs.filter(member)
      const df = new Map()
      for (const d of docs) for (const t of d.tf.keys()) df.set(t, (df.get(t) ?? 0) + 1)
      const avgLength = docs.reduce((n, d) => n + d.length, 0) / Math.max(1, docs.length)
      s = { docs, df, avgLength }
      this.scopes.set(name, s)
    }
    return s
  }

  /**
   * Sessions of the scope holding any query term, best first; ties newest first (the engine's tie order), then key.
   * @returns {{ key: string, score: number }[]}
   */
  search(/** @type {string} */ query, /** @type {{ docs: any[], df: Map<string, number>, avgLength: number }} */ scope) {
    const terms = [...new Set(this.tokenizer(query, 'query'))]
    const n = scope.docs.length
    const scored = []
    for (const d of scope.docs) {
      let score = 0
      for (const t of terms) {
        const tf = d.tf.get(t)
        if (!tf) continue
        const df = scope.df.get(t)
        const idf = Math.log((n - df + 0.5) / (df + 0.5) + 1)
        score += (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * d.length) / scope.avgLength))
      }
      if (score > 0) scored.push({ key: d.key, score, mtimeMs: d.mtimeMs })
    }
    scored.sort((a, b) => b.score - a.score || b.mtimeMs - a.mtimeMs || (a.key < b.key ? -1 : 1))
    return scored.map(({ key, score }) => ({ key, score }))
  }
}
