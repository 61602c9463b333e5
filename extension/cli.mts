#!/usr/bin/env node
/**
 * `pi-fabric-memory`: the command line over Pi session history.
 *   recall <query> [--scope S] [--role R] [--tool T] [--ref R] [--outcome O] [--since D] [--until D]
 *                  [--mode literal|phrase|regex] [--all] [--branches-all] [--json]
 *   expand <session> <index|entryId> [--before N] [--after N] [--branches-all] [--json]
 *   sessions [--scope S] [--branches-all] [--json]
 *   index [--scope S]                          build or refresh the on-disk index, with progress
 *   demo                                       index a synthetic agent dir and show what memory sees
 * Global options: --agent-dir DIR (default PI_CODING_AGENT_DIR or ~/.pi/agent), --cwd DIR,
 * --session-dir DIR (default PI_CODING_AGENT_SESSION_DIR, else the global settings' sessionDir).
 */
import { mkdtempSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { DEMO_CWD, writeDemoAgentDir } from './demo.mjs'
import { createMemory, type Memory } from './memory.mjs'
import { agentDir as defaultAgentDir, sessionDirSetting } from './settings.mjs'
import type { ExpandedEntry, ExpandPage, MemoryHit, RecallArgs, RecallPage, SessionsPage } from 'pi-fabric-memory/native'

type Flags = { positional: string[]; options: Map<string, string | true> }

function parseFlags(argv: string[]): Flags {
  const positional: string[] = []
  const options = new Map<string, string | true>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (!arg.startsWith('--')) {
      positional.push(arg)
      continue
    }
    const [key, inline] = arg.slice(2).split('=', 2)
    const takesValue = ['scope', 'agent-dir', 'cwd', 'session-dir', 'before', 'after', 'role', 'tool', 'ref', 'provider', 'action', 'outcome', 'since', 'until', 'mode', 'page-size'].includes(key)
    options.set(key, inline ?? (takesValue ? argv[++i] ?? '' : true))
  }
  return { positional, options }
}

const tty = process.stdout.isTTY
const bold = (s: string) => (tty ? `\x1b[1m${s}\x1b[0m` : s)
const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[0m` : s)
const mark = (s: string) => (tty ? `\x1b[7m${s}\x1b[27m` : `[${s}]`)

/** Highlights the query's words in a snippet (display only). */
function highlight(text: string, query: string | undefined): string {
  const words = (query ?? '').toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []
  if (words.length === 0) return text
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})(?![\\p{L}\\p{N}_])`, 'giu')
  return text.replace(pattern, (match) => mark(match))
}

function branchesOf(flags: Flags): 'active' | 'all' {
  return flags.options.has('branches-all') ? 'all' : 'active'
}

function printHit(hit: MemoryHit, query: string | undefined): void {
  if (hit.kind === 'session') {
    console.log(`${bold(hit.score.toFixed(2).padStart(6))}  ${hit.sessionId}  ${dim('cold session')}  matched: ${hit.matchedTerms.join(', ') || `${hit.matchedStructuralEntries} typed entries`}`)
    console.log(dim(`        follow: ${hit.follow.ref} ${JSON.stringify(hit.follow.args.scope)}`))
    return
  }
  const when = hit.timestamp ? new Date(hit.timestamp).toISOString().slice(0, 16).replace('T', ' ') : '—'
  const what = [hit.role, hit.tool && `tool=${hit.tool}`, hit.outcome && `outcome=${hit.outcome}`].filter(Boolean).join(' ')
  console.log(`${bold(hit.score.toFixed(2).padStart(6))}  ${hit.sessionId.slice(0, 13)}… #${hit.index}  ${dim(`${when} ${hit.tier}`)}  ${what}`)
  console.log(`        ${highlight(oneLine(hit.snippet, 240), query)}`)
}

function printRecall(page: RecallPage, query: string | undefined): void {
  if (page.error) throw Object.assign(new Error(page.error.message), { code: page.error.code })
  page.hits.forEach((hit) => printHit(hit, query))
  const c = page.coverage
  const status = c.complete ? 'complete' : `incomplete: ${c.reasons.join(', ')}`
  console.log(dim(`${page.hits.length} of ${page.total} hits · ${c.indexedSessions}/${c.eligibleSessions} sessions indexed · coverage ${status}${page.next ? ' · more with --json next' : ''}`))
}

async function recallCommand(memory: Memory, flags: Flags): Promise<void> {
  const query = flags.positional.slice(1).join(' ') || undefined
  const option = (key: string) => flags.options.get(key) as string | undefined
  const args: RecallArgs = {
    query,
    scope: (option('scope') as never) ?? 'project',
    queryMode: option('mode') as never,
    queryMatch: flags.options.has('all') ? 'all' : undefined,
    branches: branchesOf(flags),
    role: option('role'),
    tool: option('tool'),
    ref: option('ref'),
    provider: option('provider'),
    action: option('action'),
    outcome: option('outcome') as never,
    since: option('since'),
    until: option('until'),
    pageSize: option('page-size') ? Number(option('page-size')) : undefined,
  }
  const clean = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)) as RecallArgs
  const page = await memory.recall(clean)
  if (flags.options.has('json')) return console.log(JSON.stringify(page, null, 2))
  printRecall(page, query)
}

/**
 * Where the sessions are: `--agent-dir`, `--cwd` and Pi's custom session dir
 * (`--session-dir`, else `PI_CODING_AGENT_SESSION_DIR`, else `sessionDir` of
 * the agent dir's settings; a project's own `sessionDir` needs Pi's trust,
 * which the CLI cannot see, so pass it with `--session-dir`).
 */
function location(flags: Flags): { agentDir?: string; cwd?: string; sessionDir?: string } {
  const agentDir = flags.options.get('agent-dir') as string | undefined
  const cwd = flags.options.get('cwd') as string | undefined
  const flag = flags.options.get('session-dir') as string | undefined
  // The flag is relative to the shell's directory, as Pi's; a setting to the project's (the engine resolves it).
  const sessionDir = flag ? resolve(flag) : sessionDirSetting(agentDir ?? defaultAgentDir(), cwd ?? process.cwd(), false)
  return { agentDir, cwd, sessionDir }
}

/** Indexes in budgeted steps so progress can be shown as it goes. */
async function indexCommand(flags: Flags): Promise<void> {
  const step = 25
  const scope = (flags.options.get('scope') as never) ?? 'global'
  const started = Date.now()
  for (;;) {
    const memory = createMemory({ ...location(flags), config: { maxSyncSessions: step } })
    const { coverage } = await memory.sessions({ scope, limit: 1 })
    const done = coverage.indexedSessions
    const total = coverage.eligibleSessions
    const budgetOnly = coverage.reasons.every((r) => r === 'max_sync_sessions')
    if (Date.now() - started > 300 || done < total) {
      const width = 30
      const filled = total ? Math.round((done / total) * width) : width
      process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} sessions`)
    }
    if (done >= total || !budgetOnly) {
      if (Date.now() - started > 300) process.stderr.write('\n')
      const status = coverage.complete ? 'complete' : `incomplete: ${coverage.reasons.join(', ')}`
      console.log(`indexed ${done} of ${total} sessions in ${Date.now() - started} ms · coverage ${status}`)
      return
    }
  }
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)))
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd()).join('\n')
}

function printSessions(page: SessionsPage): void {
  if (page.error) throw Object.assign(new Error(page.error.message), { code: page.error.code })
  const rows = page.sessions.map((s) => [new Date(s.mtime).toISOString().slice(0, 16).replace('T', ' '), s.id, String(s.entryCount), s.cwd])
  console.log(table([['modified', 'session', 'entries', 'cwd'].map(bold), ...rows]))
}

function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

function printEntry(entry: ExpandedEntry): void {
  const what = [entry.role, entry.tool && `tool=${entry.tool}`, entry.outcome && `outcome=${entry.outcome}`].filter(Boolean).join(' ')
  console.log(`${bold(`#${entry.index}`)} ${dim(entry.entryId ?? '')} ${what}${entry.anchor ? ' ◀' : ''}`)
  if (entry.text) console.log(`  ${oneLine(entry.text, 400)}`)
  if (entry.filesTouched.length) console.log(dim(`  files: ${entry.filesTouched.join(', ')}`))
}

async function expandAll(memory: Memory, args: Record<string, unknown>): Promise<ExpandPage> {
  let page = await memory.expand(args)
  const first = page
  const texts = new Map<number, ExpandedEntry>()
  for (;;) {
    if (page.error) return page
    for (const chunk of page.entries) {
      const seen = texts.get(chunk.index)
      if (seen) seen.text += chunk.text
      else texts.set(chunk.index, { ...chunk })
    }
    if (!page.next) break
    page = await memory.expand(page.next.args)
  }
  return { ...first, entries: [...texts.values()], next: null }
}

async function expandCommand(memory: Memory, flags: Flags): Promise<void> {
  const [session, address] = flags.positional.slice(1)
  if (!session || address === undefined) throw new Error('usage: pi-fabric-memory expand <session> <index|entryId>')
  const selector = /^\d+$/.test(address) ? { indices: [Number(address)] } : { entryIds: [address] }
  const context = ['before', 'after'].filter((k) => flags.options.has(k)).map((k) => [k, Number(flags.options.get(k))])
  const args = { session, branches: branchesOf(flags), ...selector, ...Object.fromEntries(context) }
  const page = await expandAll(memory, args)
  if (flags.options.has('json')) return console.log(JSON.stringify(page, null, 2))
  if (page.error) throw Object.assign(new Error(page.error.message), { code: page.error.code })
  page.entries.forEach(printEntry)
}

async function demo(): Promise<void> {
  const agentDir = join(mkdtempSync(join(tmpdir(), 'pi-fabric-memory-demo-')), 'agent')
  const files = writeDemoAgentDir(agentDir)
  // Give the files their sessions' ages, so "newest first" means something.
  files.forEach((file, i) => utimesSync(file, new Date(Date.UTC(2026, 10, 20 + i, 18)), new Date(Date.UTC(2026, 10, 20 + i, 18))))
  const memory = createMemory({ agentDir, cwd: DEMO_CWD })
  console.log(`${bold('Demo agent dir')} ${agentDir}\n`)
  console.log(bold('memory.sessions({scope: "project"})'))
  printSessions(await memory.sessions())
  console.log(`\n${bold('memory.recall({query: "timeout"})')}`)
  printRecall(await memory.recall({ query: 'timeout' }), 'timeout')
  console.log(`\n${bold('memory.recall({ref: "pi.bash", outcome: "failed"})')} ${dim('(typed fields only, no words)')}`)
  printRecall(await memory.recall({ ref: 'pi.bash', outcome: 'failed' }), undefined)
  console.log(`\n${bold('memory.expand')} the failed test run, with one entry of context on each side`)
  const checkout = (await memory.sessions()).sessions.at(-1)!
  const failed = await expandAll(memory, { session: checkout.id, indices: [4], before: 1, after: 1 })
  failed.entries.forEach(printEntry)
  console.log(`\n${bold('memory.walk')} the search session: active branch vs all branches`)
  const search = (await memory.sessions()).sessions[1]
  for (const branches of ['active', 'all'] as const) {
    const roles: string[] = []
    const walk = await memory.walk({ session: search.id, branches }, (entry) => void roles.push(entry.role ?? '?'))
    console.log(`  ${branches.padEnd(6)} visited ${walk.visited} entries: ${roles.join(' → ')}`)
  }
  const files2 = new Set<string>()
  await memory.walk({ session: checkout.id }, (entry) => {
    if (entry.role === 'assistant') entry.filesTouched.forEach((f) => files2.add(f))
  })
  console.log(`\n${bold('Files the agent touched')} in ${checkout.id.slice(0, 13)}…: ${[...files2].join(', ')}`)
  console.log(dim(`\nTry: pi-fabric-memory sessions --agent-dir ${agentDir} --cwd ${DEMO_CWD}`))
}

async function main(argv: string[]): Promise<void> {
  const flags = parseFlags(argv)
  const command = flags.positional[0] ?? 'help'
  const memory = () => createMemory(location(flags))
  switch (command) {
    case 'demo':
      return demo()
    case 'recall':
      return recallCommand(memory(), flags)
    case 'index':
      return indexCommand(flags)
    case 'sessions': {
      const page = await memory().sessions({ scope: (flags.options.get('scope') as never) ?? 'project', branches: branchesOf(flags) })
      return flags.options.has('json') ? console.log(JSON.stringify(page, null, 2)) : printSessions(page)
    }
    case 'expand':
      return expandCommand(memory(), flags)
    default:
      console.log(
        'usage: pi-fabric-memory <recall <query> | expand <session> <index|entryId> | sessions | index | demo>\n' +
          '       [--scope S] [--role R] [--tool T] [--ref R] [--outcome O] [--since D] [--until D] [--mode M] [--all]\n' +
          '       [--branches-all] [--json] [--agent-dir DIR] [--cwd DIR] [--session-dir DIR]',
      )
      if (command !== 'help') process.exitCode = 2
  }
}

// `… | head` closes stdout early: that is the reader's choice, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0)
  throw error
})

main(process.argv.slice(2)).catch((error: Error & { code?: string }) => {
  console.error(`pi-fabric-memory: ${error.code ? `[${error.code}] ` : ''}${error.message}`)
  process.exitCode = 1
})
