#!/usr/bin/env node
/**
 * `pi-fabric-memory`: the command line over Pi session history.
 *   sessions [--scope S] [--all] [--json]     list sessions, newest first
 *   expand <session> <index|entryId> [--before N] [--after N] [--all] [--json]
 *   demo                                       index a synthetic agent dir and show what memory sees
 * Global options: --agent-dir DIR (default PI_CODING_AGENT_DIR or ~/.pi/agent), --cwd DIR.
 */
import { mkdtempSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEMO_CWD, writeDemoAgentDir } from './demo.mjs'
import { createMemory, type Memory } from './memory.mjs'
import type { ExpandedEntry, ExpandPage, SessionsPage } from 'pi-fabric-memory'

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
    const takesValue = ['scope', 'agent-dir', 'cwd', 'before', 'after'].includes(key)
    options.set(key, inline ?? (takesValue ? argv[++i] ?? '' : true))
  }
  return { positional, options }
}

const tty = process.stdout.isTTY
const bold = (s: string) => (tty ? `\x1b[1m${s}\x1b[0m` : s)
const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[0m` : s)

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
  const args = { session, branches: flags.options.has('all') ? 'all' : 'active', ...selector, ...Object.fromEntries(context) }
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
  const memory = () =>
    createMemory({
      agentDir: flags.options.get('agent-dir') as string | undefined,
      cwd: flags.options.get('cwd') as string | undefined,
    })
  switch (command) {
    case 'demo':
      return demo()
    case 'sessions': {
      const page = await memory().sessions({ scope: (flags.options.get('scope') as never) ?? 'project', branches: flags.options.has('all') ? 'all' : 'active' })
      return flags.options.has('json') ? console.log(JSON.stringify(page, null, 2)) : printSessions(page)
    }
    case 'expand':
      return expandCommand(memory(), flags)
    default:
      console.log('usage: pi-fabric-memory <demo | sessions | expand <session> <index|entryId>> [--agent-dir DIR] [--cwd DIR] [--all] [--json]')
      if (command !== 'help') process.exitCode = 2
  }
}

main(process.argv.slice(2)).catch((error: Error & { code?: string }) => {
  console.error(`pi-fabric-memory: ${error.code ? `[${error.code}] ` : ''}${error.message}`)
  process.exitCode = 1
})
