/**
 * `memory status|read|add|replace|remove|review|why`: curated memory from the shell,
 * through the same store (lock, threat scanner, limits), settings and reply
 * texts as the memory tools and `/memory`.
 */
import { mkdirSync } from 'node:fs'
import type { MemoryStore, MemoryStoreResult, MemoryTarget } from 'pi-fabric-memory/native'
import { option, UsageError } from './args.mjs'
import type { Command } from './command.mjs'
import { citationReader, type CitationReader } from '../curated/cited.mjs'
import { isDir, openMemory, openStore, type Context } from './context.mjs'
import { curatedSettings } from '../curated/settings.mjs'
import { dreamingSettings, dreamingStatus, readsEveryProject } from '../dreaming/index.mjs'
import { guarded } from '../shared/errors.mjs'
import { readReply, reviewReply, statusReply, whyReply, writeReply, type CommandReply, type WriteVerb } from '../curated/command.mjs'
import { CliError, EXIT, printJson } from './output.mjs'

const SUBCOMMANDS = ['status', 'read', 'add', 'replace', 'remove', 'review', 'why'] as const
const isTarget = (word: string | undefined): word is MemoryTarget => word === 'memory' || word === 'user' || word === 'project'

/**
 * `--target`, checked, with `--scope`: `--scope project` is `--target project`
 * (this directory's project MEMORY.md), `--scope global` the global files;
 * undefined when neither is given.
 */
function targetFlag(ctx: Context): MemoryTarget | undefined {
  const flag = option(ctx.parsed, 'target')
  if (flag !== undefined && !isTarget(flag)) throw new UsageError(`--target must be memory, user or project, got ${JSON.stringify(flag)}`, 'memory')
  const scope = option(ctx.parsed, 'scope')
  if (scope === undefined) return flag
  if (scope !== 'global' && scope !== 'project') throw new UsageError(`memory: --scope must be global or project, got ${JSON.stringify(scope)}`, 'memory')
  if (scope === 'project' && flag === 'user') throw new UsageError('memory: USER.md is global only: --target user takes no --scope project', 'memory')
  if (scope === 'global' && flag === 'project') throw new UsageError('memory: --target project and --scope global name different files', 'memory')
  return scope === 'project' ? 'project' : (flag ?? 'memory')
}

/**
 * `read` and `why`: `--target`, or a leading `memory`/`user` word as in
 * `/memory` (nothing else could be meant there: read takes no text, why a number).
 */
function targetAndRest(ctx: Context, words: string[]): [MemoryTarget, string[]] {
  const flag = targetFlag(ctx)
  if (!isTarget(words[0])) return [flag ?? 'memory', words]
  if (flag !== undefined && flag !== words[0]) throw new UsageError(`--target ${flag} and the word ${words[0]} name different targets`, 'memory')
  return [words[0], words.slice(1)]
}

/**
 * `add`, `replace`, `remove`: the target is `--target` only, and every word is
 * text. A leading `memory`/`user` word without `--target` is refused, not
 * guessed: it was the target in earlier versions, and either reading of
 * `add memory leaks are checked…` would store something the user did not mean.
 */
function writeTarget(ctx: Context, verb: WriteVerb, words: string[]): MemoryTarget {
  const flag = targetFlag(ctx)
  if (flag === undefined && isTarget(words[0])) {
    const file = words[0] === 'user' ? 'USER.md' : words[0] === 'project' ? "the project's MEMORY.md" : 'MEMORY.md'
    throw new UsageError(
      `memory ${verb}: the first word "${words[0]}" is not taken as the target: to write ${file} without it, drop it and give --target ${words[0]}; to ${verb === 'add' ? 'store' : 'match'} the words as written, give --target explicitly`,
      'memory',
    )
  }
  return flag ?? 'memory'
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
    printJson({ dir: store.dir, ...report, ...(store.project ? { projectIdentity: store.project } : {}) })
    if (report.memory.error || report.user.error || report.project?.error) process.exitCode = EXIT.failure
    return
  }
  const dreaming = dreamingStatus(store.dir, dreamingSettings(curatedSettings(ctx.cwd, ctx.trusted).dreaming), { includeGlobal: readsEveryProject(store.dir) })
  console.log(`Memory dir: ${store.dir}`)
  finish(await statusReply(store, dreaming))
}

async function read(ctx: Context, store: MemoryStore, words: string[]): Promise<void> {
  const [target, rest] = targetAndRest(ctx, words)
  if (rest.length) throw new UsageError('memory read takes one target: --target memory|user|project (or the word memory, user or project)', 'memory')
  if (!ctx.json) return finish(await readReply(store, target))
  const result = await guarded(() => store.read(target))
  printJson({ ...result, target })
  if (!result.success) process.exitCode = EXIT.failure
}

const USAGE: Record<WriteVerb, string> = {
  add: 'memory add [--target memory|user|project] <content…>',
  replace: 'memory replace [--target memory|user|project] <oldText> <newContent>',
  remove: 'memory remove [--target memory|user|project] <oldText…>',
}

/** An entry's text under a label, continuation lines indented to match. */
const labelled = (label: string, text: string) => `  ${label.padEnd(9)}${text.replace(/\n/g, `\n${' '.repeat(11)}`)}`

/** Which entry a replace or remove changed: its text before, and after a replace (the store trims and joins CRLF). */
function changedEntry(result: MemoryStoreResult, newContent: string): string[] {
  if (!result.success) return []
  if (result.replacedEntry !== undefined) return [labelled('before:', result.replacedEntry), labelled('after:', newContent.replace(/\r\n?/g, '\n').trim())]
  if (result.removedEntry !== undefined) return [labelled('removed:', result.removedEntry)]
  return []
}

async function write(ctx: Context, store: MemoryStore, verb: WriteVerb, words: string[]): Promise<void> {
  const target = writeTarget(ctx, verb, words)
  const valid = verb === 'replace' ? words.length === 2 : words.length >= 1
  if (!valid) throw new UsageError(`usage: pi-fabric-memory ${USAGE[verb]}`, 'memory')
  // Unquoted words are one text, as a shell user means them.
  const [text, newContent = ''] = verb === 'replace' ? words : [words.join(' ')]
  const { result, reply } = await writeReply(verb, store, target, text, newContent)
  if (!ctx.json) return finish({ ...reply, text: [reply.text, ...changedEntry(result, newContent)].join('\n') })
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
  const [target, rest] = targetAndRest(ctx, words)
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

const ORIGIN_TEXT = { flag: '--agent-dir', env: 'PI_CODING_AGENT_DIR', default: 'the default' } as const

/**
 * A write into an agent dir that does not exist is most likely a typo'd
 * `--agent-dir`: it would create `<typo>/memories/` while every other command
 * reports no sessions there. It is refused unless `--create` says it is meant.
 */
function requireAgentDir(ctx: Context, write: boolean): void {
  const create = ctx.parsed.options.has('create')
  if (!write) {
    if (create) throw new UsageError('--create applies to writes only (add, replace, remove, review apply|reject)', 'memory')
    return
  }
  if (isDir(ctx.agentDir)) return
  if (create) return void mkdirSync(ctx.agentDir, { recursive: true })
  throw new CliError(
    `the agent dir ${ctx.agentDir} (${ORIGIN_TEXT[ctx.agentDirOrigin]}) does not exist: nothing written`,
    'no_agent_dir',
    EXIT.usage,
    'check the path, or pass --create to create it',
  )
}

async function memory(ctx: Context): Promise<void> {
  const [sub = 'status', ...words] = ctx.parsed.positional
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) {
    throw new UsageError(`unknown memory subcommand ${JSON.stringify(sub)} (${SUBCOMMANDS.join(', ')})`, 'memory')
  }
  if ((sub === 'status' || sub === 'review') && (ctx.parsed.options.has('target') || ctx.parsed.options.has('scope'))) {
    throw new UsageError(`memory ${sub} covers every file: it takes no --target or --scope`, 'memory')
  }
  requireAgentDir(ctx, sub === 'add' || sub === 'replace' || sub === 'remove' || (sub === 'review' && words.length > 0))
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
  usage: 'memory <status|read|add|replace|remove|review|why> [--target memory|user|project] [--scope global|project] [text…] [options]',
  details: [
    'Subcommands (--target memory = MEMORY.md, the agent\'s notes, the default; --target user = USER.md;',
    '--target project or --scope project = the MEMORY.md of the current directory\'s project, a git repository or one',
    'named by memory.projectKey, in <memory dir>/projects/<name>-<key>/):',
    '  status                         entry counts and usage of both files (the default)',
    '  read                           the live entries, numbered',
    '  add <content…>                 append one entry (an exact duplicate is a no-op)',
    '  replace <oldText> <new>        replace the one entry containing oldText; prints it before and after',
    '  remove <oldText…>              remove the one entry containing oldText; prints it',
    '  review [apply|reject <n…>|all] dreaming\'s staged replacements/removals: list, apply or reject',
    '  why <n> [--calls]              entry n and the session words dreaming cited for it (--calls: the memory_expand calls)',
    'Every word after add/replace/remove is text; a first word memory or user without --target is refused',
    '(it was the target once): give --target. read and why also take the target as a word, as /memory does.',
    'Writes take the same lock and threat scan as the memory tools; a refused write exits 1 with its reason.',
    'A write into an agent dir that does not exist exits 2 (no_agent_dir), nothing created, unless --create.',
    'The directory is pi-memory.dataDir from Pi\'s settings, else <agentDir>/memories.',
  ].join('\n'),
  flags: ['target', 'scope', 'create', 'json', 'calls'],
  examples: [
    'memory status',
    'memory add --target user "Prefers tabs over spaces"',
    'memory add --scope project "Uses pnpm, never npm"',
    'memory add memory leaks are checked with valgrind --target memory',
    'memory read --target user --json',
    'memory replace --target user "tabs over spaces" "Prefers 2-space indentation"',
    'memory remove "2-space"',
    'memory review',
    'memory review apply 1 3',
    'memory review reject all --json',
    'memory why --target user 1',
    'memory why 2 --calls',
  ],
  run: memory,
}
