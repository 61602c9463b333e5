/**
 * Dreaming's evidence check: before a candidate entry is staged, each Pi
 * session entry it cites is read through this package's own `memory.expand`
 * (never the JSONL directly) and must hold the candidate's distinctive
 * terms.
 *
 * The rule (README "Provenance"): the candidate's distinctive terms are its
 * words of 3+ letters or digits, lowercased, minus a fixed list of common
 * English words and of words every memory entry uses ("user", "project",
 * "prefers", …). A term is found in a cited entry's text when a word there
 * equals it or, both being 4+ characters, one starts with the other
 * ("deploys" / "deploy"). The candidate is verified when it has at least one
 * distinctive term, every citation resolves to entries with ids, the
 * entries of each citation (a transcript turn: its user and assistant
 * messages; or a pack citation or recall hit) hold at least one term, and all cited entries
 * together hold at least half of the terms (rounded up).
 */
import type { ExpandArgs, ExpandPage, MemoryCitation } from 'pi-fabric-memory/native'
import { readEntries, type Expand, type WalkEntry } from '../recall/walk.mjs'

/** Citations one candidate may give, and entries one citation may select. */
export const MAX_CITATIONS = 16
export const MAX_ENTRIES_PER_CITATION = 8
/** Expand pages read per citation (long entries arrive in chunks). */
const MAX_PAGES = 20

const COMMON = new Set(
  (
    'the and for are but not you all any can had her was one our out has him his how its may new now old see two way who did get got let put say she too use ' +
    'with that this from they will would there their what when where which while about after again also been before being both each every have into just like ' +
    'more most much must only other over same should some such than them then these those through under very were your yours does done doing here once ' +
    'user users project projects prefers prefer preferred uses used using always never please remember note noted fact facts entry memory wants want ' +
    'should could from now on instead make made keep kept'
  ).split(/\s+/),
)

const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []

/** The candidate's distinctive terms, in order of first appearance. */
export function distinctiveTerms(text: string): string[] {
  return [...new Set(words(text).filter((w) => w.length >= 3 && !COMMON.has(w)))]
}

/** Whether `term` is found among `tokens` (equal, or a 4+ character prefix either way). */
export function holds(tokens: Set<string>, term: string): boolean {
  if (tokens.has(term)) return true
  if (term.length < 4) return false
  for (const token of tokens) if (token.length >= 4 && (token.startsWith(term) || term.startsWith(token))) return true
  return false
}

export type Verified = { ok: true; citations: MemoryCitation[] } | { ok: false; reason: string }

/**
 * A citation as the agent gives it: `{session, entryId}`, `{session, entryIds}`, a pack citation's or recall hit's
 * `follow.args`, or a whole pack citation (its `follow.args` is read: the citation itself names no session).
 */
function expandArgs(raw: unknown): ExpandArgs | string {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return 'a citation must be an object with session and entryIds (or a pack citation\'s follow.args)'
  const follow = (raw as { follow?: { args?: unknown } }).follow
  const c = (follow?.args && typeof follow.args === 'object' ? follow.args : raw) as Record<string, unknown>
  if (typeof c.session !== 'string' || !c.session.trim()) return 'a citation needs its session (id or path)'
  const ids = typeof c.entryId === 'string' ? [c.entryId] : c.entryIds
  const validIds = Array.isArray(ids) && ids.length > 0 && ids.every((id) => typeof id === 'string')
  const validIndices = Array.isArray(c.indices) && c.indices.length > 0 && c.indices.every((i) => Number.isInteger(i))
  if (!validIds && !validIndices) return 'a citation must name its entries (entryIds, or indices from a pack citation)'
  const count = validIds ? (ids as unknown[]).length : (c.indices as unknown[]).length
  if (count > MAX_ENTRIES_PER_CITATION) return `a citation selects at most ${MAX_ENTRIES_PER_CITATION} entries`
  const pinned = ['expectedSourceHash', 'expectedSourceBytes', 'expectedLineageFingerprint', 'expectedLineageLeafId'] as const
  const args: ExpandArgs = { session: c.session, branches: c.branches === 'active' ? 'active' : 'all' }
  if (validIds) args.entryIds = ids as string[]
  else args.indices = c.indices as number[]
  for (const key of pinned) if (c[key] !== undefined) (args as Record<string, unknown>)[key] = c[key]
  return args
}

interface CitedEntry {
  session: string
  entryId: string | null
  text: string
}

/** The cited entries with their whole text (read as `memory.walk` reads pages), or why they cannot be read. */
async function readCitation(expand: Expand, args: ExpandArgs): Promise<CitedEntry[] | string> {
  const entries: CitedEntry[] = []
  const cite = (entry: WalkEntry, page: ExpandPage) => void entries.push({ session: page.sessionId ?? String(args.session), entryId: entry.entryId, text: entry.text })
  const read = await readEntries(expand, args, cite, { maxPages: MAX_PAGES })
  if (read.error) return `${read.error.code}: ${read.error.message}`
  if (entries.length === 0) return `no entry of session ${args.session} matches the citation`
  return entries
}

/**
 * Verifies `evidence` for `claim` (see the module comment); on success the
 * citations normalized to `{session: <session id>, entryId}`.
 */
export async function verifyEvidence(expand: Expand, claim: string, evidence: unknown): Promise<Verified> {
  const list = Array.isArray(evidence) ? evidence : evidence === undefined || evidence === null ? [] : [evidence]
  if (list.length === 0) return { ok: false, reason: 'no evidence cited: cite the session entries (session and entryIds) the fact comes from' }
  if (list.length > MAX_CITATIONS) return { ok: false, reason: `at most ${MAX_CITATIONS} citations` }
  const terms = distinctiveTerms(claim)
  if (terms.length === 0) return { ok: false, reason: 'the entry has no distinctive terms to check against its evidence' }
  const found = new Set<string>()
  const citations: MemoryCitation[] = []
  for (const raw of list) {
    const args = expandArgs(raw)
    if (typeof args === 'string') return { ok: false, reason: args }
    const cited = await readCitation(expand, args)
    if (typeof cited === 'string') return { ok: false, reason: `cited entry not found (${cited})` }
    const tokens = new Set(cited.flatMap((entry) => words(entry.text)))
    const held = terms.filter((term) => holds(tokens, term))
    const named = cited.map((e) => e.entryId).join(', ')
    if (held.length === 0) return { ok: false, reason: `cited entry ${named} of session ${cited[0].session} holds none of the entry's distinctive terms (${terms.join(', ')})` }
    held.forEach((term) => found.add(term))
    for (const entry of cited) {
      if (!entry.entryId) return { ok: false, reason: `cited entry of session ${entry.session} has no entry id` }
      if (!citations.some((c) => c.session === entry.session && c.entryId === entry.entryId)) citations.push({ session: entry.session, entryId: entry.entryId })
    }
  }
  const needed = Math.ceil(terms.length / 2)
  if (found.size < needed) {
    const missing = terms.filter((t) => !found.has(t))
    return { ok: false, reason: `the cited entries hold ${found.size} of the entry's ${terms.length} distinctive terms, ${needed} needed (missing: ${missing.join(', ')})` }
  }
  return { ok: true, citations: citations.slice(0, MAX_CITATIONS) }
}
