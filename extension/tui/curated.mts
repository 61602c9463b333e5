/**
 * How the curated-memory tools (`memory_add`, `memory_replace`,
 * `memory_remove`, `memory_read`, `memory_apply`) look in Pi's TUI: a one-line
 * header, a one-line summary (what changed and the usage, or the error and
 * what to do), and an expanded view with the entries changed (or, for a read,
 * the entries). Without renderers Pi shows the result's JSON text, the whole
 * entry list included.
 */
import type { MemoryOperationOutcome, MemoryStoreFailure, MemoryStoreSuccess } from 'pi-fabric-memory/native'
import { oneLine, plural } from '../present/text.mjs'
import { quoted, resultText, type RenderContext, type RenderOptions, type Theme, type ToolResultView, type TuiModule } from './pi-tui.mjs'

/** The curated tools, a closed set: anything else gets no renderers. */
export const CURATED_TOOLS = ['memory_add', 'memory_replace', 'memory_remove', 'memory_read', 'memory_apply'] as const
export type CuratedTool = (typeof CURATED_TOOLS)[number]

type Args = Record<string, unknown>
type Operation = { action?: unknown; content?: unknown; oldText?: unknown; newContent?: unknown }

/** What to do after each failure, shortened for people (the model gets the full `error`). */
const NEXT_STEP: Partial<Record<MemoryStoreFailure['code'], string>> = {
  no_match: 'no entry contains that text; memory_read the target',
  ambiguous_match: 'several entries match; use a longer substring',
  over_limit: 'over the size limit; consolidate entries',
  locked: 'another process is writing; retry',
  drift: 'the file changed on disk; reread it',
  stale: 'memory changed since it was read; reread it',
}

const str = (value: unknown) => (typeof value === 'string' ? value : '')
const operationsOf = (args: Args): Operation[] => (Array.isArray(args.operations) ? (args.operations as Operation[]) : [])

/** `memory_replace "old" → "new" · memory`: the call as one line. */
export function curatedCallLine(tool: CuratedTool, args: Args, theme: Theme): string {
  const quote = (value: unknown, max?: number) => theme.fg('accent', quoted(value, max))
  const what =
    tool === 'memory_add' ? quote(args.content)
    : tool === 'memory_replace' ? `${quote(args.oldText, 30)}${args.newContent === undefined ? '' : ` →${quote(args.newContent, 30)}`}`
    : tool === 'memory_remove' ? quote(args.oldText)
    : ''
  const ops = operationsOf(args)
  const parts = [
    str(args.target) || 'memory',
    tool === 'memory_read' && args.provenance === true ? 'provenance' : '',
    tool === 'memory_apply' && ops.length ? plural(ops.length, 'operation') : '',
  ].filter(Boolean)
  return `${theme.fg('toolTitle', theme.bold(tool))}${what} ${theme.fg('muted', `· ${parts.join(' · ')}`)}`
}

/** A result's details: a store result, or (for a thrown error) nothing Pi could give us. */
type Details = MemoryStoreSuccess | (MemoryStoreFailure & { target?: string }) | Record<string, never>

const isResult = (details: Details): details is MemoryStoreSuccess | MemoryStoreFailure => typeof (details as { success?: unknown }).success === 'boolean'

/** `1 added, 2 replaced`: what an apply's operations did. */
function outcomeCounts(operations: MemoryOperationOutcome[]): string {
  const counts = new Map<string, number>()
  for (const op of operations) counts.set(op.status, (counts.get(op.status) ?? 0) + 1)
  return [...counts].map(([status, n]) => `${n} ${status}`).join(', ')
}

function failureLine(result: MemoryStoreFailure, theme: Theme): string {
  const at = result.failedOperation ? ` (operation ${result.failedOperation.index + 1}${result.failedOperation.action ? ` ${result.failedOperation.action}` : ''})` : ''
  const next = NEXT_STEP[result.code]
  const usage = result.usage ? `; usage ${result.usage}` : ''
  return theme.fg('error', `${result.code}${at}: ${oneLine(result.error, 120)}`) + (next ? theme.fg('muted', ` — ${next}${usage}`) : '')
}

/** The collapsed one-line summary: what changed, the entry count and usage; or the error. */
export function curatedSummary(tool: CuratedTool, details: Details, theme: Theme, fallback = ''): string {
  if (!isResult(details)) return theme.fg('error', oneLine(fallback || 'no result', 160))
  if (!details.success) return failureLine(details, theme)
  const what =
    tool === 'memory_add' ? (/already/i.test(details.message ?? '') ? 'already saved' : 'added')
    : tool === 'memory_replace' ? `replaced${quoted(details.replacedEntry, 40)}`
    : tool === 'memory_remove' ? `removed${quoted(details.removedEntry, 40)}`
    : tool === 'memory_apply' ? plural(details.operations?.length ?? 0, 'operation') + (details.operations?.length ? `: ${outcomeCounts(details.operations)}` : '')
    : ''
  const review = details.proposed?.length ? ` · ${details.proposed.length} to review` : ''
  const rest = `${plural(details.entryCount, 'entry')} · ${details.usage}${review}`
  return what ? `${theme.fg('success', what)} ${theme.fg('muted', `· ${rest}`)}` : theme.fg('muted', rest)
}

const added = (theme: Theme, text: string) => `${theme.fg('success', '+')} ${text}`
const removed = (theme: Theme, text: string) => `${theme.fg('error', '-')} ${text}`

/** The lines of an apply: each operation as `+`, `-` or `=` with its entry text. */
function operationLines(outcomes: MemoryOperationOutcome[], ops: Operation[], theme: Theme): string[] {
  return outcomes.flatMap((outcome) => {
    const op = ops[outcome.index] ?? {}
    if (outcome.status === 'added') return [added(theme, str(op.content))]
    if (outcome.status === 'unchanged') return [`${theme.fg('muted', '=')} ${str(op.content) || str(op.oldText)}`]
    const gone = removed(theme, outcome.entry ?? str(op.oldText))
    return outcome.status === 'replaced' ? [gone, added(theme, str(op.newContent))] : [gone]
  })
}

function failureDetail(result: MemoryStoreFailure, theme: Theme): string[] {
  // The summary line holds the error cut to one line; the whole text only when that cut something.
  const lines = oneLine(result.error, 120) === result.error ? [] : [result.error]
  for (const match of result.matches ?? []) lines.push(`${theme.fg('warning', '~')} ${match}`)
  if (result.currentEntries) {
    lines.push(theme.fg('muted', `${plural(result.currentEntries.length, 'entry')} now${result.usage ? ` · ${result.usage}` : ''}:`))
    result.currentEntries.forEach((entry, i) => lines.push(`${theme.fg('muted', `${i + 1}.`)} ${entry}`))
  }
  if (result.remediation) lines.push(theme.fg('muted', result.remediation))
  if (result.driftBackup) lines.push(theme.fg('muted', `backup: ${result.driftBackup}`))
  return lines
}

/** The expanded view: the summary, then the entry changed (or the entries read, or what went wrong). */
export function curatedDetail(tool: CuratedTool, details: Details, theme: Theme, args: Args, fallback = ''): string {
  if (!isResult(details)) return theme.fg('error', fallback || 'no result')
  const lines = [curatedSummary(tool, details, theme)]
  if (!details.success) return [...lines, ...failureDetail(details, theme)].join('\n')
  if (tool === 'memory_add' && str(args.content)) lines.push(added(theme, str(args.content)))
  if (tool === 'memory_replace') lines.push(removed(theme, details.replacedEntry ?? str(args.oldText)), added(theme, str(args.newContent)))
  if (tool === 'memory_remove') lines.push(removed(theme, details.removedEntry ?? str(args.oldText)))
  if (tool === 'memory_apply') lines.push(...operationLines(details.operations ?? [], operationsOf(args), theme))
  if (tool === 'memory_read') {
    details.entries.forEach((entry, i) => {
      const cited = details.provenance?.[i]?.citations.length
      lines.push(`${theme.fg('muted', `${i + 1}.`)} ${entry}${cited ? theme.fg('dim', ` (cites ${plural(cited, 'session entry')})`) : ''}`)
    })
    if (details.provenanceError) lines.push(theme.fg('warning', details.provenanceError))
  }
  return lines.join('\n')
}

/** `renderCall` / `renderResult` for one curated tool, over Pi's `Text`; none for a tool outside the set. */
export function curatedRenderers(tool: string, tui: TuiModule) {
  if (!(CURATED_TOOLS as readonly string[]).includes(tool)) return {}
  const name = tool as CuratedTool
  return {
    renderCall: (args: unknown, theme: Theme) => new tui.Text(curatedCallLine(name, (args ?? {}) as Args, theme), 0, 0),
    renderResult: (result: ToolResultView, options: RenderOptions, theme: Theme, context: RenderContext = {}) => {
      if (options.isPartial) return new tui.Text(theme.fg('muted', name === 'memory_read' ? 'reading…' : 'writing…'), 0, 0)
      // A thrown error (no store loaded, a bad argument) arrives as text with empty details.
      const details = (result.details && typeof result.details === 'object' ? result.details : {}) as Details
      const args = (context.args ?? {}) as Args
      return new tui.Text(options.expanded ? curatedDetail(name, details, theme, args, resultText(result)) : curatedSummary(name, details, theme, resultText(result)), 0, 0)
    },
  }
}
