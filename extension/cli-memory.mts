/**
 * `memory status|read|add|replace|remove|review|why`: curated memory from the shell,
 * through the same store (lock, threat scanner, limits), settings and reply
 * texts as the memory tools and `/memory`.
 */
import type { MemoryStore, MemoryTarget } from 'pi-fabric-memory/native'
import { UsageError } from './cli-args.mjs'
import type { Command } from './cli-command.mjs'
import { citationReader, type CitationReader } from './cited.mjs'
import { openMemory, openStore, type Context } from './cli-context.mjs'
import { curatedSettings } from './curated-settings.mjs'
import { dreamingSettings, dreamingStatus, readsEveryProject } from './dreaming/index.mjs'
import { guarded } from './errors.mjs'
import { readReply, reviewReply, statusReply, whyReply, writeReply, type CommandReply, type WriteVerb } from './memory-command.mjs'
import { EXIT, printJson } from './cli-output.mjs'

const SUBCOMMANDS = ['status', 'read', 'add', 'replace', 'remove', 'review', 'why'] as const
const isTarget = (word: string | undefined): word is MemoryTarget => word === 'memory' || word === 'user'

/** A leading `memory`/`user` argument is the target, as in `/memory` (quote text that starts with one). */
function targetAndTexts(words: string[]): [MemoryTarget, string[]] {
  return isTarget(words[0]) ? [words[0], words.slice(1)] : ['memory', words]
}

/** Prints a reply; a warning or error is a failed command. */
function finish(reply: CommandReply): void {
  if (reply.level === 'info') return console.log(reply.text)
  console.error(reply.text)
  process.exitCode = EXIT.failure
}

async function status(ctx: Context, store: MemoryStore): Promise<void> {
  if (ctx.json) {
    const report = await guarded(() => store.status())
    printJson({ dir: store.dir, ...report })
    if (report.memory.error || report.user.error) process.exitCode = EXIT.failure
    return
  }
  const dreaming = dreamingStatus(store.dir, dreamingSettings(curatedSettings(ctx.cwd, ctx.trusted).dreaming), { includeGlobal: readsEveryProject(store.dir) })
  console.log(`Memory dir: ${store.dir}`)
  finish(await statusReply(store, dreaming))
}

async function read(ctx: Context, store: MemoryStore, words: string[]): Promise<void> {
  if (words.length > 1 || (words.length === 1 && !isTarget(words[0]))) throw new UsageError('memory read takes one target: memory or user', 'memory')
  const target = words[0] === 'user' ? 'user' : 'memory'
  if (!ctx.json) return finish(await readReply(store, target))
  const result = await guarded(() => store.read(target))
  printJson({ ...result, target })
  if (!result.success) process.exitCode = EXIT.failure
}

const USAGE: Record<WriteVerb, string> = {
  add: 'memory add [memory|user] <content…>',
  replace: 'memory replace [memory|user] <oldText> <newContent>',
  remove: 'memory remove [memory|user] <oldText…>',
}

async function write(ctx: Context, store: MemoryStore, verb: WriteVerb, words: string[]): Promise<void> {
  const [target, texts] = targetAndTexts(words)
  const valid = verb === 'replace' ? texts.length === 2 : texts.length >= 1
  if (!valid) throw new UsageError(`usage: pi-fabric-memory ${USAGE[verb]}`, 'memory')
  // Unquoted words are one text, as a shell user means them.
  const [text, newContent] = verb === 'replace' ? texts : [texts.join(' ')]
  const { result, reply } = await writeReply(verb, store, target, text, newContent)
  if (!ctx.json) return finish(reply)
  printJson({ ...result, target })
  if (!result.success) process.exitCode = EXIT.failure
}

const REVIEW_USAGE = 'usage: pi-fabric-memory memory review [apply|reject <n…>|all]'

/** The proposals `apply`/`reject` name: ids (`3`, `#3`) or `all`. */
function selection(words: string[]): number[] | 'all' {
  if (words.length === 1 && words[0] === 'all') return 'all'
  const ids = words.map((w) => Number(w.replace(/^#/, '')))
  if (ids.length === 0 || !ids.every((id) => Number.isInteger(id) && id > 0)) throw new UsageError(REVIEW_USAGE, 'memory')
  return ids
}

async function review(ctx: Context, store: MemoryStore, words: string[]): Promise<void> {
  const [verb, ...rest] = words
  if (verb !== undefined && verb !== 'apply' && verb !== 'reject') throw new UsageError(REVIEW_USAGE, 'memory')
  const chosen = verb === undefined ? undefined : selection(rest)
  if (!ctx.json) return finish(await reviewReply(store, words.join(' ')))
  if (chosen === undefined) {
    const listed = await guarded(() => store.proposals())
    printJson(listed)
    if (!listed.success) process.exitCode = EXIT.failure
    return
  }
  const report = await guarded(() => (verb === 'apply' ? store.applyProposals(chosen) : store.rejectProposals(chosen)))
  printJson(report)
  if (report.error || report.refused.length || report.missing.length) process.exitCode = EXIT.failure
}

/** Reads cited session entries as `/memory why` does; with settings recall cannot use, the citations stay ids. */
function reader(ctx: Context): CitationReader | undefined {
  try {
    return citationReader(openMemory(ctx).expand)
  } catch {
    return undefined
  }
}

async function why(ctx: Context, store: MemoryStore, words: string[]): Promise<void> {
  const [target, rest] = targetAndTexts(words)
  const n = rest.length === 1 && /^#?\d+$/.test(rest[0]) ? Number(rest[0].replace(/^#/, '')) : NaN
  if (Number.isNaN(n)) throw new UsageError('usage: pi-fabric-memory memory why [memory|user] <n> [--calls]', 'memory')
  const read = reader(ctx)
  if (!ctx.json) return finish(await whyReply(store, target, n, { read, calls: ctx.parsed.options.has('calls') }))
  const result = await guarded(() => store.read(target, { provenance: true }))
  if (!result.success) {
    printJson({ ...result, target })
    process.exitCode = EXIT.failure
    return
  }
  const found = n >= 1 && n <= result.entries.length
  const provenance = found ? (result.provenance?.[n - 1] ?? null) : null
  const cited = provenance && read ? { cited: await Promise.all(provenance.citations.map(read)) } : {}
  printJson({ target, n, entry: found ? result.entries[n - 1] : null, provenance, ...cited, ...(result.provenanceError ? { provenanceError: result.provenanceError } : {}) })
  if (!found || result.provenanceError) process.exitCode = EXIT.failure
}

async function memory(ctx: Context): Promise<void> {
  const [sub = 'status', ...words] = ctx.parsed.positional
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) {
    throw new UsageError(`unknown memory subcommand ${JSON.stringify(sub)} (${SUBCOMMANDS.join(', ')})`, 'memory')
  }
  if (ctx.parsed.options.has('calls') && sub !== 'why') throw new UsageError('--calls is for memory why', 'memory')
  const store = openStore(ctx)
  if (sub === 'status') {
    if (words.length) throw new UsageError('memory status takes no arguments', 'memory')
    return status(ctx, store)
  }
  if (sub === 'read') return read(ctx, store, words)
  if (sub === 'review') return review(ctx, store, words)
  if (sub === 'why') return why(ctx, store, words)
  return write(ctx, store, sub as WriteVerb, words)
}

export const MEMORY_COMMAND: Command = {
  name: 'memory',
  summary: 'curated memory (MEMORY.md, USER.md): status, read, add, replace, remove, review, why',
  usage: 'memory <status|read|add|replace|remove|review|why> [memory|user] [text…] [options]',
  details: [
    'Subcommands (target "memory" = MEMORY.md, the agent\'s notes; "user" = USER.md; default memory):',
    '  status                                   entry counts and usage of both files (the default)',
    '  read [memory|user]                       the live entries, numbered',
    '  add [memory|user] <content…>             append one entry (an exact duplicate is a no-op)',
    '  replace [memory|user] <oldText> <new>    replace the one entry containing oldText',
    '  remove [memory|user] <oldText…>          remove the one entry containing oldText',
    '  review [apply|reject <n…>|all]           dreaming\'s staged replacements/removals: list, apply or reject',
    '  why [memory|user] <n> [--calls]          entry n and the session words dreaming cited for it (--calls: the memory_expand calls)',
    'Writes take the same lock and threat scan as the memory tools; a refused write exits 1 with its reason.',
    'The directory is pi-memory.dataDir from Pi\'s settings, else <agentDir>/memories.',
  ].join('\n'),
  flags: ['json', 'calls'],
  examples: [
    'memory status',
    'memory add user "Prefers tabs over spaces"',
    'memory read user --json',
    'memory replace user "tabs over spaces" "Prefers 2-space indentation"',
    'memory remove "2-space"',
    'memory review',
    'memory review apply 1 3',
    'memory review reject all --json',
    'memory why user 1',
    'memory why 2 --calls',
  ],
  run: memory,
}
