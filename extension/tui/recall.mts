/**
 * How the four recall tools look in Pi's TUI: a one-line header, a one-line
 * collapsed summary (or the error and what to do), and an expanded view in the
 * CLI's readable form, without hashes or follow arguments. Without renderers
 * Pi shows the result's JSON text, ~38 rows for six hits.
 *
 * Components are Pi's own `Text` (the package's Pi entry passes the running
 * Pi's `pi-tui`), so wrapping and width are Pi's; this file only makes strings.
 */
import { homedir } from 'node:os'
import { basename, dirname } from 'node:path'
import type { EvidencePack, ExpandPage, MemoryHit, RecallPage, SessionRow, SessionsPage } from 'pi-fabric-memory/native'
import { coverageText, entryLabel } from '../present/history.mjs'
import { minuteOf, oneLine, plural, shortId } from '../present/text.mjs'
import { PIN_SLOT, unpinned } from '../recall/pin.mjs'
import { quoted, resultText, type RenderContext, type RenderOptions, type Theme, type ToolResultView, type TuiModule } from './pi-tui.mjs'
import { encodeCwd } from '../shared/pi-paths.mjs'

type Page = { error?: { code: string; message: string } | null; coverage?: RecallPage['coverage'] }

/** What the model is told to do next for each contract error, shortened for people. */
const NEXT_STEP: Record<string, string> = {
  stale_pointer: 'the session changed since the pointer was made; recall again',
  address_not_found: 'the entry is not on the selected branch; try branches "all"',
  session_not_found: 'no such session; list them with memory_sessions',
  ambiguous_session: 'several sessions match; use the full id or path',
}

/**
 * A project's short name: the cwd's last component, or for a session file in
 * Pi's `sessions/--<cwd>--/` dir, that encoded cwd without the part it shares
 * with the current project's parent or the home dir (the encoding turns every
 * `/` into `-`, so only the current cwd decodes exactly).
 */
export function projectName(place: { cwd?: string; file?: string }, currentCwd?: string): string | undefined {
  if (place.cwd) return basename(place.cwd) || place.cwd
  if (!place.file) return undefined
  const dir = basename(dirname(place.file))
  if (!/^--.+--$/.test(dir)) return undefined
  if (currentCwd && dir === encodeCwd(currentCwd)) return basename(currentCwd) || currentCwd
  const inner = dir.slice(2, -2)
  const prefixes = [currentCwd && dirname(currentCwd), homedir()].filter(Boolean).map((d) => `${encodeCwd(d as string).slice(2, -2)}-`)
  const prefix = prefixes.find((p) => inner.startsWith(p) && inner.length > p.length)
  return prefix ? inner.slice(prefix.length) : inner
}

/** `webshop 019a0001-demo…` for a session path (Pi names files `<time>_<id>.jsonl`); an id or stem as given. */
function sessionLabel(session: string, currentCwd?: string): string {
  if (!/[/\\]|\.jsonl$/.test(session)) return session
  const stem = basename(session).replace(/\.jsonl$/, '')
  const id = shortId(stem.slice(stem.lastIndexOf('_') + 1))
  const project = projectName({ file: session }, currentCwd)
  return project ? `${project} ${id}` : id
}

/** A path with the home dir as `~`. */
const tildePath = (path: string) => {
  const home = homedir()
  return home && path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path
}

/** `3/3 sessions · complete`: how many sessions a recall read, and whether that is all of them. */
const sessionsRead = (coverage: RecallPage['coverage']) => `${coverage.indexedSessions}/${coverage.eligibleSessions} sessions · ${coverageText(coverage)}`

/** `memory_recall "bluefinch" · project · tool=bash`: the call as one line. */
export function callLine(tool: string, called: Record<string, unknown>, theme: Theme, currentCwd?: string): string {
  const args = shownArgs(tool, called)
  const filters = ['role', 'tool', 'ref', 'provider', 'action', 'outcome', 'since', 'until']
    .filter((key) => args[key] !== undefined)
    .map((key) => `${key}=${String(args[key])}`)
  const scope = String(args.scope ?? 'project')
  // A followed cold-session hit scopes recall to `session:<path>`: named like expand's session.
  const where =
    tool === 'memory_expand'
      ? args.session ? sessionLabel(String(args.session), currentCwd) : 'this session'
      : scope.startsWith('session:') ? `session ${sessionLabel(scope.slice('session:'.length), currentCwd)}` : scope
  const what = tool === 'memory_expand' ? selectorText(args) : ''
  const parts = [where, what, args.branches === 'all' ? 'all branches' : '', ...filters].filter(Boolean)
  return `${theme.fg('toolTitle', theme.bold(tool))}${theme.fg('accent', quoted(args.query))} ${theme.fg('muted', `· ${parts.join(' · ')}`)}`
}

/** The call as the addon gets it: a pinned call (the model's lean view) names its session by the pin's id. */
function shownArgs(tool: string, args: Record<string, unknown>): Record<string, unknown> {
  if (args.pin === undefined || !PIN_SLOT[tool]) return args
  try {
    return unpinned(args, PIN_SLOT[tool], tool)
  } catch {
    return args
  }
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

/** The collapsed one-line summary of a result. */
export function summaryLine(tool: string, page: unknown, theme: Theme): string {
  const p = page as Page
  const error = errorLine(p, theme)
  if (error) return error
  if (tool === 'memory_recall') {
    const r = page as RecallPage
    return `${plural(r.total, 'hit')} ${theme.fg('muted', `· ${sessionsRead(r.coverage)}${r.next ? ' · more' : ''}`)}`
  }
  if (tool === 'memory_expand') {
    const e = page as ExpandPage
    const first = e.entries[0]
    return `${plural(new Set(e.entries.map((c) => c.index)).size, 'entry')}${first ? ` ${theme.fg('muted', `· #${first.index}${e.entries.length > 1 ? `–#${e.entries.at(-1)!.index}` : ''}`)}` : ''}${e.next ? theme.fg('muted', ' · continues') : ''}`
  }
  if (tool === 'memory_pack') return packSummary(page as EvidencePack, theme)
  const s = page as SessionsPage
  return `${plural(s.sessions.length, 'session')} ${theme.fg('muted', `· ${coverageText(s.coverage)}`)}`
}

/** `5 excerpts from 3 sessions · 1,840/2,000 tokens · all verified · left out: 4 budget`. */
function packSummary(pack: EvidencePack, theme: Theme): string {
  const citations = pack.sessions.flatMap((s) => s.evidence)
  const unverified = citations.filter((c) => !c.verified).length
  const omitted = pack.omitted.map((o) => `${o.count} ${o.reason.replace(/_/g, ' ')}`).join(', ')
  const facts = [
    `${pack.tokens}/${pack.maxTokens} tokens`,
    unverified ? `${unverified} unverified` : citations.length ? 'all verified' : '',
    omitted ? `left out: ${omitted}` : '',
    coverageText(pack.coverage),
  ].filter(Boolean)
  return `${plural(citations.length, 'excerpt')} from ${plural(pack.sessions.length, 'session')} ${theme.fg('muted', `· ${facts.join(' · ')}`)}`
}

/** A pack readably: each session's title, then its excerpts with what they are. */
function packLines(pack: EvidencePack, theme: Theme): string[] {
  const lines: string[] = []
  for (const session of pack.sessions) {
    lines.push(`${theme.fg('accent', shortId(session.sessionId))} ${theme.fg('muted', `${minuteOf(session.lastTimestamp)} · ${basename(session.project) || session.project}`)} ${session.title ? `"${oneLine(session.title, 80)}"` : ''}`)
    for (const c of session.evidence) {
      const flags = [c.part, c.verified ? '' : `unverified: ${c.unverified}`, c.untrusted ? 'untrusted' : '', c.contextEdit ? `context ${c.contextEdit}` : ''].filter(Boolean)
      lines.push(`  #${c.index} ${theme.fg('muted', flags.join(' · '))}`, `    ${oneLine(c.text, 400)}`)
    }
  }
  return lines
}


/** The project of a hit, when the row should name it: every hit of a global call, and hits of another project. */
function hitProject(hit: MemoryHit, global: boolean, currentCwd: string | undefined): string | undefined {
  const cwd = (hit as { cwd?: unknown }).cwd
  const file = hit.kind === 'entry' ? hit.follow?.args?.session : undefined
  const project = projectName({ cwd: typeof cwd === 'string' ? cwd : undefined, file: typeof file === 'string' ? file : undefined }, currentCwd)
  if (!project || global) return project
  if (currentCwd === undefined) return undefined
  const own = typeof cwd === 'string' ? cwd === currentCwd : typeof file === 'string' && basename(dirname(file)) === encodeCwd(currentCwd)
  return own ? undefined : project
}

function hitLines(hit: MemoryHit, theme: Theme, project: string | undefined): string[] {
  const where = project ? `${project} · ` : ''
  if (hit.kind === 'session') {
    return [`${theme.fg('accent', hit.score.toFixed(2))} ${hit.sessionId} ${theme.fg('muted', `${where}cold session · matched ${hit.matchedTerms.join(', ') || 'typed entries'}`)}`]
  }
  return [
    `${theme.fg('accent', hit.score.toFixed(2))} ${shortId(hit.sessionId)} #${hit.index} ${theme.fg('muted', `${where}${minuteOf(hit.timestamp)} · ${entryLabel(hit)}`)}`,
    `  ${oneLine(hit.snippet, 400)}`,
  ]
}

/** Pi's session name, else the first prompt (fields the addon may not report yet). */
function sessionTitle(row: SessionRow): string {
  const { name, firstPrompt } = row as SessionRow & { name?: unknown; firstPrompt?: unknown }
  const title = typeof name === 'string' && name.trim() ? name : typeof firstPrompt === 'string' && firstPrompt.trim() ? firstPrompt : ''
  return title ? `"${oneLine(title, 80)}" ` : ''
}

/** The expanded view: the summary, then each hit, entry or session readably. */
export function detailText(tool: string, page: unknown, theme: Theme, context: RenderContext = {}): string {
  const lines = [summaryLine(tool, page, theme)]
  if ((page as Page).error) return lines.join('\n')
  if (tool === 'memory_recall') {
    const global = (context.args as { scope?: unknown } | undefined)?.scope === 'global'
    for (const hit of (page as RecallPage).hits) lines.push(...hitLines(hit, theme, hitProject(hit, global, context.cwd)))
  } else if (tool === 'memory_expand') {
    const file = (page as ExpandPage).session
    // The header names the session by short id and project; the path is here, to open the file.
    if (file) lines.push(theme.fg('dim', tildePath(file)))
    for (const chunk of (page as ExpandPage).entries) {
      lines.push(`${theme.fg('accent', `#${chunk.index}`)} ${theme.fg('muted', `${minuteOf(chunk.timestamp)} · ${entryLabel(chunk)}`)}`, ...chunk.text.split('\n').slice(0, 40).map((l) => `  ${l}`))
    }
  } else if (tool === 'memory_pack') {
    lines.push(...packLines(page as EvidencePack, theme))
  } else {
    for (const s of (page as SessionsPage).sessions) lines.push(`${minuteOf(s.mtime)}  ${s.id}  ${sessionTitle(s)}${theme.fg('muted', `${plural(s.entryCount, 'entry')} · ${s.cwd}`)}`)
  }
  return lines.join('\n')
}

/** A running call: the indexing it waits on (its tool update's line: sessions and MB done), as one line. */
function partialLine(result: ToolResultView): string {
  const indexing = (result.details as { indexing?: unknown } | undefined)?.indexing
  return indexing && Array.isArray(result.content) ? resultText(result) : 'reading session history…'
}

/** `renderCall` / `renderResult` for one recall tool, over Pi's `Text`. */
export function recallRenderers(tool: string, tui: TuiModule) {
  return {
    renderCall: (args: unknown, theme: Theme, context: RenderContext = {}) =>
      new tui.Text(callLine(tool, (args ?? {}) as Record<string, unknown>, theme, context.cwd), 0, 0),
    renderResult: (result: ToolResultView, options: RenderOptions, theme: Theme, context: RenderContext = {}) => {
      if (options.isPartial) {
        // Cut to the width it is drawn at, so the line never wraps.
        const line = partialLine(result)
        return { render: (width: number) => new tui.Text(theme.fg('muted', oneLine(line, Math.max(1, width))), 0, 0).render(width), invalidate() {} }
      }
      const page = result.details
      if (!page || typeof page !== 'object') return new tui.Text('', 0, 0)
      return new tui.Text(options.expanded ? detailText(tool, page, theme, context) : summaryLine(tool, page, theme), 0, 0)
    },
  }
}
