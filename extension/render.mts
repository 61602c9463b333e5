/**
 * How the three recall tools look in Pi's TUI: a one-line header, a one-line
 * collapsed summary (or the error and what to do), and an expanded view in the
 * CLI's readable form, without hashes or follow arguments. Without renderers
 * Pi shows the result's JSON text, ~38 rows for six hits.
 *
 * Components are Pi's own `Text` (the package's Pi entry passes the running
 * Pi's `pi-tui`), so wrapping and width are Pi's; this file only makes strings.
 */
import type { ExpandPage, MemoryHit, RecallPage, SessionsPage } from 'pi-fabric-memory/native'
import { minuteOf, oneLine } from './cli-output.mjs'

/** The part of `@earendil-works/pi-tui` the renderers use. */
export interface TuiModule {
  Text: new (text: string, paddingX: number, paddingY: number) => { render(width: number): string[] }
}

/** The part of Pi's theme the renderers use. */
interface Theme {
  fg(color: 'toolTitle' | 'muted' | 'dim' | 'accent' | 'error' | 'warning' | 'success' | 'text', text: string): string
  bold(text: string): string
}

type Page = { error?: { code: string; message: string } | null; coverage?: RecallPage['coverage'] }

/** What the model is told to do next for each contract error, shortened for people. */
const NEXT_STEP: Record<string, string> = {
  stale_pointer: 'the session changed since the pointer was made; recall again',
  address_not_found: 'the entry is not on the selected branch; try branches "all"',
  session_not_found: 'no such session; list them with memory_sessions',
  ambiguous_session: 'several sessions match; use the full id or path',
}

const quoted = (value: unknown) => (typeof value === 'string' && value ? ` "${oneLine(value, 60)}"` : '')

const coverageText = (coverage: RecallPage['coverage']) =>
  `${coverage.indexedSessions}/${coverage.eligibleSessions} sessions · ${coverage.complete ? 'complete' : `incomplete: ${coverage.reasons.join(', ')}`}`

/** `memory_recall "bluefinch" · project · tool=bash`: the call as one line. */
export function callLine(tool: string, args: Record<string, unknown>, theme: Theme): string {
  const filters = ['role', 'tool', 'ref', 'provider', 'action', 'outcome', 'since', 'until']
    .filter((key) => args[key] !== undefined)
    .map((key) => `${key}=${String(args[key])}`)
  const where = tool === 'memory_expand' ? (args.session ? String(args.session) : 'this session') : String(args.scope ?? 'project')
  const what = tool === 'memory_expand' ? selectorText(args) : ''
  const parts = [where, what, args.branches === 'all' ? 'all branches' : '', ...filters].filter(Boolean)
  return `${theme.fg('toolTitle', theme.bold(tool))}${theme.fg('accent', quoted(args.query))} ${theme.fg('muted', `· ${parts.join(' · ')}`)}`
}

function selectorText(args: Record<string, unknown>): string {
  const list = (key: string) => (Array.isArray(args[key]) ? (args[key] as unknown[]).join(',') : '')
  if (list('indices')) return `#${list('indices')}`
  if (list('entryIds')) return `ids ${list('entryIds')}`
  if (list('operationAddresses')) return list('operationAddresses')
  const range = args.entryRange as { first?: number; last?: number } | undefined
  return range ? `#${range.first}–${range.last}` : ''
}

function errorLine(page: Page, theme: Theme): string | undefined {
  if (!page.error) return undefined
  const next = NEXT_STEP[page.error.code]
  return theme.fg('error', `${page.error.code}: ${oneLine(page.error.message, 160)}`) + (next ? theme.fg('muted', ` — ${next}`) : '')
}

const plural = (n: number, word: string) => `${n} ${n === 1 ? word : word.endsWith('y') ? `${word.slice(0, -1)}ies` : `${word}s`}`

/** The collapsed one-line summary of a result. */
export function summaryLine(tool: string, page: unknown, theme: Theme): string {
  const p = page as Page
  const error = errorLine(p, theme)
  if (error) return error
  if (tool === 'memory_recall') {
    const r = page as RecallPage
    return `${plural(r.total, 'hit')} ${theme.fg('muted', `· ${coverageText(r.coverage)}${r.next ? ' · more' : ''}`)}`
  }
  if (tool === 'memory_expand') {
    const e = page as ExpandPage
    const first = e.entries[0]
    return `${plural(new Set(e.entries.map((c) => c.index)).size, 'entry')}${first ? ` ${theme.fg('muted', `· #${first.index}${e.entries.length > 1 ? `–#${e.entries.at(-1)!.index}` : ''}`)}` : ''}${e.next ? theme.fg('muted', ' · continues') : ''}`
  }
  const s = page as SessionsPage
  return `${plural(s.sessions.length, 'session')} ${theme.fg('muted', `· ${s.coverage.complete ? 'complete' : `incomplete: ${s.coverage.reasons.join(', ')}`}`)}`
}


function hitLines(hit: MemoryHit, theme: Theme): string[] {
  if (hit.kind === 'session') {
    return [`${theme.fg('accent', hit.score.toFixed(2))} ${hit.sessionId} ${theme.fg('muted', `cold session · matched ${hit.matchedTerms.join(', ') || 'typed entries'}`)}`]
  }
  const what = [hit.role, hit.tool && `tool=${hit.tool}`, hit.outcome && `outcome=${hit.outcome}`].filter(Boolean).join(' ')
  return [
    `${theme.fg('accent', hit.score.toFixed(2))} ${hit.sessionId.slice(0, 13)}… #${hit.index} ${theme.fg('muted', `${minuteOf(hit.timestamp)} · ${what}`)}`,
    `  ${oneLine(hit.snippet, 400)}`,
  ]
}

/** The expanded view: the summary, then each hit, entry or session readably. */
export function detailText(tool: string, page: unknown, theme: Theme): string {
  const lines = [summaryLine(tool, page, theme)]
  if ((page as Page).error) return lines.join('\n')
  if (tool === 'memory_recall') for (const hit of (page as RecallPage).hits) lines.push(...hitLines(hit, theme))
  else if (tool === 'memory_expand') {
    for (const chunk of (page as ExpandPage).entries) {
      const what = [chunk.role, chunk.tool && `tool=${chunk.tool}`, chunk.outcome && `outcome=${chunk.outcome}`].filter(Boolean).join(' ')
      lines.push(`${theme.fg('accent', `#${chunk.index}`)} ${theme.fg('muted', `${minuteOf(chunk.timestamp)} · ${what}`)}`, ...chunk.text.split('\n').slice(0, 40).map((l) => `  ${l}`))
    }
  } else {
    for (const s of (page as SessionsPage).sessions) lines.push(`${minuteOf(s.mtime)}  ${s.id}  ${theme.fg('muted', `${plural(s.entryCount, 'entry')} · ${s.cwd}`)}`)
  }
  return lines.join('\n')
}

/** A running call: the indexing it waits on (its tool update's line: sessions and MB done), as one line. */
function partialLine(result: { content?: unknown; details?: unknown }): string {
  const indexing = (result.details as { indexing?: unknown } | undefined)?.indexing
  const text = Array.isArray(result.content) ? (result.content[0] as { text?: unknown } | undefined)?.text : undefined
  return indexing && typeof text === 'string' ? text : 'reading session history…'
}

/** `renderCall` / `renderResult` for one recall tool, over Pi's `Text`. */
export function recallRenderers(tool: string, tui: TuiModule) {
  return {
    renderCall: (args: unknown, theme: Theme) => new tui.Text(callLine(tool, (args ?? {}) as Record<string, unknown>, theme), 0, 0),
    renderResult: (result: { content?: unknown; details?: unknown }, options: { expanded?: boolean; isPartial?: boolean }, theme: Theme) => {
      if (options.isPartial) {
        // Cut to the width it is drawn at, so the line never wraps.
        const line = partialLine(result)
        return { render: (width: number) => new tui.Text(theme.fg('muted', oneLine(line, Math.max(1, width))), 0, 0).render(width), invalidate() {} }
      }
      const page = result.details
      if (!page || typeof page !== 'object') return new tui.Text('', 0, 0)
      return new tui.Text(options.expanded ? detailText(tool, page, theme) : summaryLine(tool, page, theme), 0, 0)
    },
  }
}
