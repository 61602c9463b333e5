/** `recall`, `pack`, `expand`, `sessions`: session history for humans (and `--json` for scripts). */
import type { EvidencePack, ExpandArgs, ExpandedEntry, ExpandPage, MemoryError, MemoryHit, PackArgs, RecallArgs, RecallPage, SessionsPage } from 'pi-fabric-memory/native'
import { integerOption, option, UsageError } from './args.mjs'
import { openMemory, requireSessions, sessionFiles, type Context } from './context.mjs'
import { bold, CliError, dim, EXIT, mark, printJson, table } from './output.mjs'
import { coverageText, entryLabel } from '../present/history.mjs'
import { minuteOf, oneLine, shortId } from '../present/text.mjs'
import { commandLine, type Command } from './command.mjs'
import type { Memory } from '../recall/create-memory.mjs'
import { readEntries } from '../recall/walk.mjs'

const SCOPED = ['scope', 'branches-all', 'json']

/** Highlights the query's words in a snippet (display only). */
function highlight(text: string, query: string | undefined): string {
  const words = (query ?? '').toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []
  if (words.length === 0) return text
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})(?![\\p{L}\\p{N}_])`, 'giu')
  return text.replace(pattern, (match) => mark(match))
}

const branchesOf = (ctx: Context): 'active' | 'all' => (ctx.parsed.options.has('branches-all') ? 'all' : 'active')

/**
 * A contract error of a page as a failed command (exit 1), shown with its
 * code; an ambiguous session lists its candidates, so the next try can name one.
 */
export function pageFailure(error: MemoryError): CliError {
  const candidates = Array.isArray(error.candidates) ? (error.candidates as unknown[]).map(String) : []
  const hint = candidates.length ? `candidates (name one by a longer id prefix or its path):\n${candidates.map((c) => `  ${c}`).join('\n')}` : undefined
  return new CliError(error.message, error.code, EXIT.failure, hint)
}

function failOn(error: MemoryError | undefined): void {
  if (error) throw pageFailure(error)
}

/** `--json`: the page exactly as the API returned it; a contract error in it still exits 1. */
function printPage(page: { error?: MemoryError }): void {
  printJson(page)
  if (page.error) process.exitCode = EXIT.failure
}

function printHit(hit: MemoryHit, query: string | undefined): void {
  if (hit.kind === 'session') {
    console.log(`${bold(hit.score.toFixed(2).padStart(6))}  ${hit.sessionId}  ${dim(`cold session${hit.project ? ` ${hit.project}` : ''}`)}  matched: ${hit.matchedTerms.join(', ') || `${hit.matchedStructuralEntries} typed entries`}`)
    console.log(dim(`        follow: ${hit.follow.ref} ${JSON.stringify(hit.follow.args.scope)}`))
    return
  }
  const when = minuteOf(hit.timestamp)
  console.log(`${bold(hit.score.toFixed(2).padStart(6))}  ${shortId(hit.sessionId)} #${hit.index}  ${dim(`${when} ${hit.tier}${hit.project ? ` ${hit.project}` : ''}`)}  ${entryLabel(hit)}`)
  console.log(`        ${highlight(oneLine(hit.snippet, 240), query)}`)
}

/** Where a page is in the CLI's walk: its number and the command that prints the next one. */
export interface Paging {
  page: number
  nextCommand: string
}

export function printRecall(page: RecallPage, query: string | undefined, paging?: Paging): void {
  failOn(page.error)
  page.hits.forEach((hit) => printHit(hit, query))
  const c = page.coverage
  const numbered = paging && (paging.page > 1 || page.next) ? ` · page ${paging.page}` : ''
  console.log(dim(`${page.hits.length} of ${page.total} hits${numbered} · ${c.indexedSessions}/${c.eligibleSessions} sessions indexed · coverage ${coverageText(c)}`))
  if (page.next && paging) console.log(dim(`next page: ${paging.nextCommand}`))
}

/** An empty scope is not an answer: say which sessions exist and how to reach them. */
export function emptyScopeHint(ctx: Context, scope: string): string {
  const all = sessionFiles(ctx).reduce((sum, p) => sum + p.sessions, 0)
  return `no sessions in scope ${scope} for ${ctx.cwd} (${all} in the agent dir: --scope global searches them all, --cwd DIR picks a project)`
}

/** What `recall` and `pack` search: the query words, scope, branches and filters of the command line. */
function searchArgs(ctx: Context): RecallArgs & PackArgs {
  const parsed = ctx.parsed
  const args: RecallArgs & PackArgs = {
    query: parsed.positional.join(' ') || undefined,
    scope: (option(parsed, 'scope') ?? 'project') as RecallArgs['scope'],
    queryMode: option(parsed, 'mode') as RecallArgs['queryMode'],
    queryMatch: parsed.options.has('all') ? 'all' : undefined,
    branches: branchesOf(ctx),
    role: option(parsed, 'role'),
    tool: option(parsed, 'tool'),
    ref: option(parsed, 'ref'),
    provider: option(parsed, 'provider'),
    action: option(parsed, 'action'),
    outcome: option(parsed, 'outcome') as RecallArgs['outcome'],
    since: option(parsed, 'since'),
    until: option(parsed, 'until'),
  }
  return Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined))
}

async function recall(ctx: Context): Promise<void> {
  requireSessions(ctx)
  const parsed = ctx.parsed
  const { query, scope } = searchArgs(ctx)
  const pageSize = integerOption(parsed, 'page-size')
  const clean: RecallArgs = { ...searchArgs(ctx), ...(pageSize === undefined ? {} : { pageSize }) }
  const wanted = integerOption(parsed, 'page') ?? 1
  if (wanted < 1) throw new UsageError('--page counts from 1', 'recall')
  const memory = openMemory(ctx)
  // Page n is where n - 1 `next` calls lead: a page holds fewer than page-size hits when they would not fit.
  let page = await memory.recall(clean)
  for (let n = 1; n < wanted && !page.error; n++) {
    if (!page.next) throw new UsageError(`no page ${wanted}: the ${page.total} hits end on page ${n}`, 'recall')
    page = await memory.recall(page.next.args as RecallArgs)
  }
  if (ctx.json) return printPage(page)
  if (!page.error && page.coverage.eligibleSessions === 0) return console.log(emptyScopeHint(ctx, String(scope)))
  const following = new Map(parsed.options).set('page', String(wanted + 1))
  printRecall(page, query, { page: wanted, nextCommand: commandLine('recall', { ...parsed, options: following }) })
}

/** A pack for people: per session its title, then each cited excerpt and what it is; then what was left out. */
export function printPack(pack: EvidencePack): void {
  failOn(pack.error)
  for (const session of pack.sessions) {
    console.log(`${bold(shortId(session.sessionId))}  ${dim(`${minuteOf(session.lastTimestamp)} · ${session.project}`)}  ${session.title ? `"${oneLine(session.title, 80)}"` : ''}`)
    for (const c of session.evidence) {
      const flags = [c.part, c.verified ? 'verified' : `unverified: ${c.unverified}`, c.untrusted ? 'untrusted' : '', c.contextEdit ? `context ${c.contextEdit}` : '']
      console.log(`  #${c.index} ${dim(flags.filter(Boolean).join(' · '))}`)
      console.log(`    ${highlight(oneLine(c.text, 400), pack.query ?? undefined)}`)
    }
  }
  const omitted = pack.omitted.map((o) => `${o.count} ${o.reason.replace(/_/g, ' ')}`).join(', ')
  const cited = pack.sessions.reduce((n, s) => n + s.evidence.length, 0)
  console.log(dim(`${cited} excerpts from ${pack.sessions.length} sessions · ${pack.tokens}/${pack.maxTokens} tokens${omitted ? ` · left out: ${omitted}` : ''} · coverage ${coverageText(pack.coverage)}`))
}

async function pack(ctx: Context): Promise<void> {
  requireSessions(ctx)
  const bounds = { maxTokens: integerOption(ctx.parsed, 'max-tokens'), maxSessions: integerOption(ctx.parsed, 'max-sessions') }
  const args: PackArgs = { ...searchArgs(ctx), ...Object.fromEntries(Object.entries(bounds).filter(([, v]) => v !== undefined)) }
  const result = await openMemory(ctx).pack(args)
  if (ctx.json) return printPage(result)
  if (!result.error && result.coverage.eligibleSessions === 0) return console.log(emptyScopeHint(ctx, String(args.scope)))
  printPack(result)
}

export function printSessions(page: SessionsPage): void {
  failOn(page.error)
  const rows = page.sessions.map((s) => [new Date(s.mtime).toISOString().slice(0, 16).replace('T', ' '), s.id, String(s.entryCount), s.project ?? '', s.cwd])
  console.log(table([['modified', 'session', 'entries', 'project', 'cwd'].map(bold), ...rows]))
}

async function sessions(ctx: Context): Promise<void> {
  requireSessions(ctx)
  const scope = (option(ctx.parsed, 'scope') ?? 'project') as RecallArgs['scope']
  const page = await openMemory(ctx).sessions({ scope, branches: branchesOf(ctx) })
  if (ctx.json) return printPage(page)
  if (!page.error && page.coverage.eligibleSessions === 0) return console.log(emptyScopeHint(ctx, String(scope)))
  printSessions(page)
}

export function printEntry(entry: ExpandedEntry): void {
  console.log(`${bold(`#${entry.index}`)} ${dim(entry.entryId ?? '')} ${entryLabel(entry)}${entry.anchor ? ' ◀' : ''}`)
  if (entry.text) console.log(`  ${oneLine(entry.text, 400)}`)
  if (entry.filesTouched.length) console.log(dim(`  files: ${entry.filesTouched.join(', ')}`))
}

/**
 * The first page with every selected entry whole: its pages read as
 * `memory.walk` reads them (`readEntries`). A contract error is the page
 * that carries it, as the API returned it; a discontinuity or an entry left
 * open is the first page with that error and no entries.
 */
export async function expandAll(memory: Pick<Memory, 'expand'>, args: ExpandArgs): Promise<ExpandPage> {
  const pages: ExpandPage[] = []
  const entries: ExpandedEntry[] = []
  const expand = async (page: ExpandArgs) => pages[pages.push(await memory.expand(page)) - 1]
  const read = await readEntries(expand, args, (entry) => void entries.push(entry))
  const last = pages.at(-1)!
  if (last.error) return last
  if (read.error) return { ...pages[0], entries: [], next: null, error: read.error }
  return { ...pages[0], entries, next: null }
}

async function expand(ctx: Context): Promise<void> {
  const [session, address] = ctx.parsed.positional
  if (!session || address === undefined) throw new UsageError('expand needs <session> and <index|entryId>', 'expand')
  // A session file named by path needs no agent dir.
  if (!/[/\\]|\.jsonl$/.test(session)) requireSessions(ctx)
  const selector = /^\d+$/.test(address) ? { indices: [Number(address)] } : { entryIds: [address] }
  const context = ['before', 'after'].filter((k) => ctx.parsed.options.has(k)).map((k) => [k, integerOption(ctx.parsed, k)])
  const args = { session, branches: branchesOf(ctx), ...selector, ...Object.fromEntries(context) }
  const page = await expandAll(openMemory(ctx), args)
  if (ctx.json) return printPage(page)
  failOn(page.error)
  page.entries.forEach(printEntry)
}

export const HISTORY_COMMANDS: Command[] = [
  {
    name: 'recall',
    summary: 'search session history: ranked hits with their session and entry index',
    usage: 'recall [<query…>] [options]',
    flags: [...SCOPED, 'mode', 'all', 'role', 'tool', 'ref', 'provider', 'action', 'outcome', 'since', 'until', 'page-size', 'page'],
    examples: [
      'recall checkout timeout',
      'recall "connection refused" --mode phrase --scope global',
      'recall --ref pi.bash --outcome failed --since 2026-11-01',
      'recall checkout timeout --page 2',
      'recall pricing --json | jq ".hits[0].follow"',
    ],
    run: recall,
  },
  {
    name: 'pack',
    summary: 'what the history says about a query: cited, verified excerpts within a token budget',
    usage: 'pack [<query…>] [options]',
    flags: [...SCOPED, 'mode', 'all', 'role', 'tool', 'ref', 'provider', 'action', 'outcome', 'since', 'until', 'max-tokens', 'max-sessions'],
    examples: ['pack checkout timeout', 'pack "connection refused" --mode phrase --scope global --max-tokens 1000', 'pack pricing --json | jq ".sessions[0].evidence[0].follow"'],
    run: pack,
  },
  {
    name: 'expand',
    summary: 'read whole entries of a session, with context around one',
    usage: 'expand <session> <index|entryId> [options]',
    details: '<session> is a session id, a unique prefix of one (at least 8 characters, as recall prints them) or a\nsession file\'s path. A prefix two sessions share is ambiguous_session, listing both.',
    flags: ['before', 'after', 'branches-all', 'json'],
    examples: ['expand 019a0001-demo 4 --before 1 --after 1', 'expand ~/.pi/agent/sessions/--home-me-app--/s.jsonl a1b2c3d4 --json'],
    run: expand,
  },
  {
    name: 'sessions',
    summary: 'list the sessions of a scope, newest first',
    usage: 'sessions [options]',
    flags: SCOPED,
    examples: ['sessions', 'sessions --scope global --json'],
    run: sessions,
  },
]
