// Judging the multi-host suite's answers against the writers' log. A query is
// judged only on a term whose state did not change while it ran: no operation
// that touched the term or its whole file overlaps [q0, q1] on the monotonic
// clock both sides stamp with, so the term was on disk (or not) for the whole
// query. A follow call is judged only when no rewrite or delete of its file
// overlaps the query that bound it or the follow itself. Everything else is
// counted as unjudged, never guessed.
import type { Project, SessionEvent, TermFact } from './multihost-world.mjs'

export interface HitSummary {
  kind: 'entry' | 'session'
  sessionId: string
  entryId: string | null
  tier: string
  /** The entry hit's snippet holds the term, or the session hit's matchedTerms do. */
  hasTerm: boolean
  /** The follow call's expectedSourceBytes. */
  boundBytes?: number
}

export interface CoverageSummary {
  complete: boolean
  staleSessions: number
  unavailableSessions: number
  incompleteSessions: number
  reasons: string[]
}

/** One recall of one term, as a host reports it (q0/q1: its hrtime before the call and after it resolved). */
export interface QueryRecord {
  host: number
  seq: number
  term: string
  scope: 'global' | 'project'
  project: Project
  q0: bigint
  q1: bigint
  total: number
  hits: HitSummary[]
  coverage: CoverageSummary
  error?: string
}

/** A hit's follow call, dispatched later by the host whose query bound it. */
export interface FollowRecord {
  host: number
  query: QueryRecord
  /** The hit of `query` whose follow call this was. */
  hit: number
  f0: bigint
  f1: bigint
  error?: string
  /** The expanded entries, or the hits of a session recall. */
  items: Array<{ entryId: string | null; hasTerm: boolean }>
}

export type Verdict = { kind: 'unjudged' } | { kind: 'right' } | { kind: 'excused'; why: string } | { kind: 'wrong'; why: string }

const overlaps = (span: { t0: bigint; t1: bigint }, from: bigint, to: bigint) => span.t0 <= to && span.t1 >= from
const wrong = (why: string): Verdict => ({ kind: 'wrong', why })

/** The term's state throughout [from, to], or undefined when an operation on it overlaps that window. */
export function stableState(fact: TermFact | undefined, from: bigint, to: bigint): 'present' | 'absent' | undefined {
  if (!fact) return 'absent' // never planted: a probe term no writer uses
  if (fact.spans.some((span) => overlaps(span, from, to))) return undefined
  return fact.planted.t1 < from && !(fact.removed && fact.removed.t1 < from) ? 'present' : 'absent'
}

/** Whether a hit names the one place the term has ever been. */
export const hitsFact = (hit: HitSummary, fact: TermFact | undefined) =>
  !!fact && hit.sessionId === fact.sessionId && (hit.kind === 'session' || hit.entryId === fact.entryId)

export function judgeQuery(facts: ReadonlyMap<string, TermFact>, query: QueryRecord): Verdict {
  if (query.error) return wrong(`recall returned error ${query.error}`)
  const fact = facts.get(query.term)
  const state = stableState(fact, query.q0, query.q1)
  if (!state) return { kind: 'unjudged' }
  const visible = state === 'present' && (query.scope === 'global' || fact!.project === query.project)
  const at = query.hits.filter((hit) => hitsFact(hit, fact))
  if (!visible) {
    if (query.total === 0 && query.hits.length === 0) return { kind: 'right' }
    if (state === 'present') return wrong(`hit outside scope ${query.scope} of project ${query.project}`)
    // Content no longer (or never) on disk may be named only by an answer that says it is not complete.
    if (at.length === query.hits.length && !query.coverage.complete) return { kind: 'excused', why: 'stale hit, coverage incomplete' }
    return wrong(`${at.length ? 'hit names content no longer on disk' : 'hit names a place the term never was'} (complete: ${query.coverage.complete})`)
  }
  if (at.length < query.hits.length) return wrong('hit names a place the term never was')
  if (at.length === 0) {
    return query.coverage.complete ? wrong('planted term missed with coverage.complete: true') : { kind: 'excused', why: `miss, incomplete: ${query.coverage.reasons.join(',')}` }
  }
  if (at.length > 1 || query.total !== 1) return wrong(`${at.length} hits, total ${query.total}, for a term in one entry`)
  if (!at[0].hasTerm) return wrong(`${at[0].kind} hit without the term in its ${at[0].kind === 'entry' ? 'snippet' : 'matchedTerms'}`)
  return { kind: 'right' }
}

/**
 * A follow call bound by a rightly answered query: it must read the entry
 * when nothing but appends happened to its file since, be `stale_pointer`
 * with no content when a rewrite changed a bound byte, and return no content
 * once its file is deleted.
 */
export function judgeFollow(facts: ReadonlyMap<string, TermFact>, events: ReadonlyMap<string, SessionEvent[]>, follow: FollowRecord): Verdict {
  const query = follow.query
  const fact = facts.get(query.term)
  const hit = query.hits[follow.hit]
  if (!fact || !hit || !hitsFact(hit, fact) || judgeQuery(facts, query).kind !== 'right') return { kind: 'unjudged' }
  if (hit.boundBytes === undefined) return { kind: 'unjudged' } // a whole-file binding: appends would matter too
  const between = (events.get(fact.sessionFile) ?? []).filter((event) => overlaps(event, query.q0, follow.f1))
  if (between.some((event) => overlaps(event, query.q0, query.q1) || overlaps(event, follow.f0, follow.f1))) return { kind: 'unjudged' }
  const deleted = between.some((event) => event.kind === 'delete')
  const rewritten = between.some((event) => event.kind === 'rewrite' && event.offset < hit.boundBytes!)
  if (deleted) return follow.items.length ? wrong('follow read a deleted session') : { kind: 'right' }
  if (rewritten) {
    return follow.error === 'stale_pointer' && follow.items.length === 0 ? { kind: 'right' } : wrong(`follow after a rewrite of a bound byte: ${follow.error ?? `${follow.items.length} items`}, not stale_pointer`)
  }
  if (follow.error) return wrong(`follow failed with ${follow.error} while its bound bytes were unchanged`)
  return follow.items.some((item) => item.entryId === fact.entryId && item.hasTerm) ? { kind: 'right' } : wrong('follow did not return the bound entry with the term')
}

/** Verdicts counted as they come (a long run answers millions of queries): counts, excuses by reason, the first wrong ones in full. */
export class Tally {
  readonly counts = { right: 0, excused: 0, wrong: 0, unjudged: 0 }
  readonly excuses = new Map<string, number>()
  readonly wrongs: string[] = []

  add(verdict: Verdict, detail: () => string): void {
    this.counts[verdict.kind]++
    if (verdict.kind === 'excused') this.excuses.set(verdict.why, (this.excuses.get(verdict.why) ?? 0) + 1)
    if (verdict.kind === 'wrong' && this.wrongs.length < 20) this.wrongs.push(`${verdict.why}: ${detail()}`)
  }

  get judged(): number {
    return this.counts.right + this.counts.excused + this.counts.wrong
  }

  get total(): number {
    return this.judged + this.counts.unjudged
  }

  excused(): string {
    return [...this.excuses].map(([why, n]) => `${n}× ${why}`).join('; ') || 'none'
  }
}
