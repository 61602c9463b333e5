/**
 * The text the model reads for a recall, expand or sessions page: the same
 * page as JSON, without what costs tokens and tells the model nothing.
 * `details` and `structuredContent` (scripts, renderers, hosts) keep the
 * whole page.
 *
 * - A hit's follow call is `{"memory_expand": {pin, indices}}`: the tool to
 *   call, keyed by its name, with its arguments; the session path and the two
 *   hashes are one `pin` (pin.mts), so integrity is kept in ~60 characters.
 * - Defaults and empties are left out (null fields, `isError: false`,
 *   `branches: "active"`, `type: "message"`, a complete `textRange` from 0,
 *   empty lists), timestamps are minutes (`2026-08-29 09:36`, UTC) and
 *   scores have three digits.
 * - Coverage is `{complete: true}` when nothing is missing; otherwise its
 *   reasons and non-zero counters. Either way `project` says when the
 *   project scope fell back to this folder only (ambiguous git evidence).
 * - The model's recall asks for 300-character snippets (the library's
 *   default is 480): ten hits stay under 5,000 characters, and a hit's
 *   whole entry is one call away.
 */
import type { ExpandPage, FabricCall, MemoryHit, RecallPage, SessionsPage } from '../native.mjs'
import { projectNote } from '../present/history.mjs'
import { minuteOf } from '../present/text.mjs'
import { PIN_SLOT, pinned } from './pin.mjs'

type Json = Record<string, unknown>

/** The snippet length of the model's recall calls (see above); stated only when a call asks for another. */
export const MODEL_SNIPPET_CHARS = 300

const minute = (ms: number | null | undefined) => (ms ? minuteOf(ms) : undefined)
const day = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString().slice(0, 10) : undefined)
const score = (n: number) => Number(n.toPrecision(3))

/** `value` without undefined, null, false, empty-string and empty-array members. */
function lean(value: Json): Json {
  const out: Json = {}
  for (const [key, member] of Object.entries(value)) {
    if (member === undefined || member === null || member === false || member === '') continue
    if (Array.isArray(member) && member.length === 0) continue
    out[key] = member
  }
  return out
}

/** A follow or next call as `{<tool>: args}`, its binding pinned. */
function call(token: FabricCall | null | undefined, sessionId: string | null | undefined): Json | undefined {
  if (!token) return undefined
  const slot = PIN_SLOT[token.tool]
  let args = token.args as Json
  if (slot) args = pinned(args, slot, sessionId)
  const { branches, snippetChars, ...rest } = args
  return {
    [token.tool]: {
      ...rest,
      ...(branches === undefined || branches === 'active' ? {} : { branches }),
      ...(snippetChars === undefined || snippetChars === MODEL_SNIPPET_CHARS ? {} : { snippetChars }),
    },
  }
}

function coverage(page: { coverage?: RecallPage['coverage'] }): Json | undefined {
  const c = page.coverage
  if (!c) return undefined
  const project = projectNote(c)
  if (c.complete && c.reasons.length === 0) return lean({ complete: true, project })
  const counts = lean({
    indexedSessions: c.indexedSessions,
    eligibleSessions: c.eligibleSessions,
    staleSessions: c.staleSessions || undefined,
    incompleteSessions: c.incompleteSessions || undefined,
    unavailableSessions: c.unavailableSessions || undefined,
  })
  return { complete: c.complete, ...lean({ reasons: c.reasons, project }), ...counts }
}

/** What an entry is, in the order a reader wants it. */
function entryFacts(entry: Json): Json {
  return lean({
    id: entry.entryId,
    type: entry.type === 'message' ? undefined : entry.type,
    role: entry.role,
    tool: entry.tool,
    ref: entry.ref !== undefined && entry.ref !== `pi.${entry.tool}` ? entry.ref : undefined,
    outcome: entry.outcome === 'succeeded' ? undefined : entry.outcome,
    error: entry.isError,
    at: minute(entry.timestamp as number | null),
    contextEdit: entry.contextEdit,
    threats: entry.threats,
  })
}

/** A hit's or row's project, unsaid when it is the cwd's own (`home`, from the page's coverage). */
const otherProject = (project: string | undefined, home: string | undefined) => (project === home ? undefined : project)

function hitView(hit: MemoryHit, cwd: string, home: string | undefined): Json {
  const follow = call(hit.follow, hit.sessionId)
  const project = otherProject(hit.project, home)
  if (hit.kind === 'session') {
    return lean({
      ...follow,
      project,
      cwd: hit.cwd === cwd ? undefined : hit.cwd,
      last: day(hit.lastTimestamp),
      terms: hit.matchedTerms,
      score: score(hit.score),
    })
  }
  // The entry id is left out: the pin names the entry (and its leaf is that id for most hits).
  const { id: _, ...facts } = entryFacts(hit as unknown as Json)
  return lean({ ...follow, project, ...facts, score: score(hit.score), snippet: hit.snippet })
}

/**
 * A recall page for the model; `cwd` is the project's (its sessions' cwd goes unsaid), and so is the
 * project of a hit from the cwd's own project (the coverage names it).
 */
export function recallText(page: RecallPage, cwd: string): string {
  if (page.error) return JSON.stringify(page)
  return JSON.stringify(
    lean({
      total: page.total,
      hits: page.hits.map((hit) => hitView(hit, cwd, page.coverage?.project?.name)),
      next: call(page.next, page.hits[0]?.sessionId),
      coverage: coverage(page),
    }),
  )
}

/** An expand page for the model: the session by id, entries lean, `next` pinned. */
export function expandText(page: ExpandPage): string {
  if (page.error) return JSON.stringify(page)
  const entries = page.entries.map((entry) => {
    const range = entry.textRange
    const whole = range.start === 0 && range.complete
    return lean({
      index: entry.index,
      ...entryFacts(entry as unknown as Json),
      anchor: entry.anchor,
      text: entry.text,
      textRange: whole ? undefined : range,
      filesTouched: entry.filesTouched,
    })
  })
  return JSON.stringify(
    lean({
      sessionId: page.sessionId,
      branches: page.branches === 'all' ? 'all' : undefined,
      entryCount: page.entryCount,
      entries,
      next: call(page.next, page.sessionId),
    }),
  )
}

/** A sessions page for the model: id, where, when and how long; no paths or hashes. */
export function sessionsText(page: SessionsPage, cwd: string): string {
  if (page.error) return JSON.stringify(page)
  const home = page.coverage?.project?.name
  const sessions = page.sessions.map((row) =>
    lean({
      id: row.id,
      project: otherProject(row.project, home),
      cwd: row.cwd === cwd ? undefined : row.cwd,
      modified: minute(row.mtime),
      entries: row.entryCount,
      name: (row as { name?: string }).name,
      firstPrompt: (row as { firstPrompt?: string }).firstPrompt,
    }),
  )
  return JSON.stringify(lean({ scope: page.scope, sessions, coverage: coverage(page) }))
}
