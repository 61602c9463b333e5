/**
 * `/memory`: `status`, `read [user]`, `add`, `replace`, `remove`, `dream`,
 * `review` (dreaming's proposals: list, `apply <n…>|all`,
 * `reject <n…>|all`), `why [user] <n> [--calls]` (entry n's provenance:
 * the cited words, and the `memory_expand` calls with `--calls`) and
 * `forget|unforget <session> [<entryId>]` (sessions, or entries, recall must never surface) for the
 * user, over the same store as the tools.
 * Arguments keep their spacing, and `replace` splits at the first `->` only.
 */
import type { ExtensionAPI, ExtensionContext } from '@earendil-works/pi-coding-agent'
import type { CitationReader, CitedWords } from './cited.mjs'
import { minuteOf, oneLine, plural, shortId } from '../present/text.mjs'
import type { DreamOutcome } from '../dreaming/index.mjs'
import type { MemoryCitation, MemoryProposal, MemoryProvenance, MemoryReviewReport, MemoryStore, MemoryStoreResult, MemoryTarget } from 'pi-fabric-memory/native'
import { guarded } from '../shared/errors.mjs'
import type { Memory } from '../recall/create-memory.mjs'
import { forgottenLine, forgottenName, forgottenText } from '../present/forgotten.mjs'

export interface CommandReply {
  text: string
  level: 'info' | 'warning' | 'error'
}

const SUBCOMMANDS = ['status', 'read', 'add', 'replace', 'remove', 'dream', 'review', 'why', 'forget', 'unforget']

/** What `/memory` reaches beyond the store: dreaming (`status`, `dream`), the history dreaming cited (`why`) and forgetting. */
export interface SessionCommands {
  /** One line: last run, whether one is due, which model and sessions it reads. */
  status(ctx?: ExtensionContext): string
  /** Runs a consolidation now (no time gate; the lock still applies). */
  dream(ctx: ExtensionContext): Promise<DreamOutcome>
  /** Reads the session entries dreaming cited, for `/memory why`; without it only their ids are shown. */
  cited?(ctx?: ExtensionContext): CitationReader | undefined
  /** The session history's forget API (`forget`, `unforget`, and the forgotten list `status` shows). */
  history?(ctx?: ExtensionContext): Pick<Memory, 'forget' | 'unforget' | 'forgotten'> | undefined
}
const USAGE = {
  add: 'Usage: /memory add [user|memory|project] <content>',
  replace: 'Usage: /memory replace [user|memory|project] <oldText> -> <newContent>',
  remove: 'Usage: /memory remove [user|memory|project] <substring>',
  review: 'Usage: /memory review | /memory review apply <n…>|all | /memory review reject <n…>|all',
  why: 'Usage: /memory why [user|memory|project] <n> [--calls] (n as numbered by /memory read; --calls adds the memory_expand calls)',
}

/** The first whitespace-separated word and the untouched (trimmed) rest. */
function firstWord(text: string): [string, string] {
  const match = /^(\S+)\s*([\s\S]*)$/.exec(text.trim())
  return match ? [match[1], match[2].trim()] : ['', '']
}

/**
 * An optional leading `user`/`memory`/`project` target, default `memory`: the
 * user's own command names the file (`memory` is the global MEMORY.md,
 * `project` this project's), where the model's tools default to the project.
 */
function targetAndText(rest: string): [MemoryTarget, string] {
  const [word, after] = firstWord(rest)
  return word === 'user' || word === 'memory' || word === 'project' ? [word, after] : ['memory', rest]
}

/** A store failure as one clause: its code, then the message without a repeated leading label ("Blocked: …"). */
const failure = (verb: string, target: MemoryTarget, result: { error: string; code?: string }) =>
  `Not ${verb} ${target}${result.code ? ` [${result.code}]` : ''}: ${result.error.replace(/^[A-Z][a-z]+: /, '')}`

const info = (text: string): CommandReply => ({ text, level: 'info' })
const warning = (text: string): CommandReply => ({ text, level: 'warning' })

/** Entry counts and usage per file, plus the dreaming line when given (`/memory status`, `pi-fabric-memory memory status`). */
export async function statusReply(store: MemoryStore, dreamingLine?: string, history?: Pick<Memory, 'forgotten'>): Promise<CommandReply> {
  const report = await guarded(() => store.status())
  const line = (file: string, s: typeof report.memory) =>
    s.error ? `${file}: unreadable — ${s.error}` : `${file}: ${plural(s.entryCount, 'entry')} (${s.usage})`
  const project = report.project && store.project ? line(`project MEMORY.md (${store.project.name})`, report.project) : undefined
  const forgotten = history ? await history.forgotten() : undefined
  const forgottenPart = forgotten?.error ? `Forgotten sessions: unreadable — ${forgotten.error.message}` : forgotten && forgotten.forgotten.length ? forgottenText(forgotten.forgotten) : undefined
  const text = [line('MEMORY.md', report.memory), line('USER.md', report.user), project, dreamingLine, forgottenPart].filter(Boolean).join('\n')
  return report.memory.error || report.user.error || report.project?.error || forgotten?.error ? warning(text) : info(text)
}

/** `/memory forget <session> [<entryId>]` and `/memory unforget <session> [<entryId>]`. */
async function forgetReply(verb: 'forget' | 'unforget', history: Pick<Memory, 'forget' | 'unforget'> | undefined, rest: string): Promise<CommandReply> {
  const [session, entryId, extra] = rest.trim().split(/\s+/).filter(Boolean)
  if (!history) return warning('Session history is not available here.')
  if (!session || extra !== undefined) return warning(`Usage: /memory ${verb} <session id, id prefix or file> [<entry id>]`)
  const result = await history[verb](entryId === undefined ? { session } : { session, entryId })
  if (result.error) return warning(`${result.error.code}: ${result.error.message}`)
  if (verb === 'unforget') return info(`Remembered again: ${result.changed.map(forgottenName).join(', ')}. Recall indexes it again on its next call.`)
  if (result.changed.length === 0) return info(entryId === undefined ? 'That session is already forgotten.' : 'That entry is already forgotten.')
  return info(`Forgot ${forgottenLine(result.changed[0])}\nRecall, expand and packs never surface it (${plural(result.recordsRemoved, 'index record')} removed); Pi's file is untouched. /memory unforget takes it back.`)
}

async function dreamNow(dreaming: SessionCommands | undefined, ctx: ExtensionContext | undefined): Promise<CommandReply> {
  if (!dreaming || !ctx) return warning('Dreaming is not available here.')
  const outcome = await dreaming.dream(ctx)
  const text = outcome.summary ? `${outcome.message}\n${outcome.summary}` : outcome.message
  return { text, level: outcome.status === 'done' ? 'info' : outcome.status === 'failed' ? 'error' : 'warning' }
}

/** One target's live entries, numbered. */
export async function readReply(store: MemoryStore, target: MemoryTarget): Promise<CommandReply> {
  const result = await guarded(() => store.read(target))
  if (!result.success) return warning(failure('read from', target, result))
  if (result.entries.length === 0) return info(`${target}: (empty)`)
  return info(`${target} [${result.usage}]:\n${result.entries.map((entry, i) => `${i + 1}. ${entry}`).join('\n')}`)
}

export type WriteVerb = 'add' | 'replace' | 'remove'

/** One write as the tools do it: the store's result and its one-line reply. */
export async function writeReply(
  verb: WriteVerb,
  store: MemoryStore,
  target: MemoryTarget,
  text: string,
  newContent = '',
): Promise<{ result: MemoryStoreResult; reply: CommandReply }> {
  const result = await guarded(() =>
    verb === 'add' ? store.add(target, text) : verb === 'replace' ? store.replace(target, text, newContent) : store.remove(target, text),
  )
  return { result, reply: writeMessage(verb, target, result) }
}

async function write(verb: WriteVerb, store: MemoryStore, rest: string): Promise<CommandReply> {
  const [target, text] = targetAndText(rest)
  const arrow = text.indexOf('->')
  const [oldText, newContent] = arrow < 0 ? [text, ''] : [text.slice(0, arrow).trim(), text.slice(arrow + 2).trim()]
  const incomplete = verb === 'replace' ? !oldText || !newContent || arrow < 0 : !text
  if (incomplete) return warning(USAGE[verb])
  return (await writeReply(verb, store, target, verb === 'replace' ? oldText : text, newContent)).reply
}

function writeMessage(verb: WriteVerb, target: MemoryTarget, result: MemoryStoreResult): CommandReply {
  if (!result.success) return warning(failure({ add: 'added to', replace: 'replaced in', remove: 'removed from' }[verb], target, result))
  if (result.message === 'Entry already exists (no duplicate added).') return info(`Already in ${target} (no duplicate added).`)
  const done = { add: 'Added to', replace: 'Replaced in', remove: 'Removed from' }[verb]
  return info(`${done} ${target}.`)
}

/** The `memory_expand` call that reads one citation. */
const expandCall = (c: MemoryCitation) => `memory_expand ${JSON.stringify({ session: c.session, entryIds: [c.entryId] })}`

/** One citation, with the call that reads it. */
const describeCitation = (c: MemoryCitation) => `session ${c.session}, entry ${c.entryId} (${expandCall(c)})`

/** One proposal as a line of `/memory review` (its evidence indented below). */
export function describeProposal(p: MemoryProposal): string {
  const body = p.action === 'add' ? p.content : p.action === 'replace' ? `${p.oldText} -> ${p.newContent}` : p.oldText
  const evidence = (p.evidence ?? []).map((c) => `\n   evidence: ${describeCitation(c)}`).join('')
  const target = p.target === 'project' ? `project ${p.project?.name ?? '?'}` : p.target
  return `#${p.id} ${p.action} [${target}]: ${body}${evidence}`
}

/** A cited entry as `/memory why` shows it: the session's short id, the time, who said it and an excerpt of the words. */
export function describeCited(words: CitedWords): string {
  if (!words.ok) return `${shortId(words.sessionId)} entry ${words.entryId}: not readable (${words.error})`
  return `${shortId(words.sessionId)} ${minuteOf(words.timestamp)} ${words.role ?? 'entry'}: "${oneLine(words.text, 160)}"`
}

export interface WhyOptions {
  /** Reads each cited entry (`memory.expand`); without it the citations are shown as ids. */
  read?: CitationReader
  /** Adds each citation's `memory_expand` call. */
  calls?: boolean
}

/** An entry's provenance as `/memory why` shows it: the cited words, one line per cited entry. */
export async function describeProvenance(provenance: MemoryProvenance | null | undefined, options: WhyOptions = {}): Promise<string> {
  if (!provenance) return 'No provenance: written by hand or by the model directly (only dreaming records evidence).'
  const via = provenance.proposal !== undefined ? `, applied from proposal #${provenance.proposal}` : ''
  const lines = [`Provenance: recorded ${minuteOf(provenance.recordedAt)} by dreaming${via}, from:`]
  for (const c of provenance.citations) {
    lines.push(`- ${options.read ? describeCited(await options.read(c)) : `session ${c.session}, entry ${c.entryId}`}`)
    if (options.calls) lines.push(`  ${expandCall(c)}`)
  }
  return lines.join('\n')
}

/** `/memory why [target] <n>`: entry n (1-based, as `/memory read` numbers it) and its provenance. */
export async function whyReply(store: MemoryStore, target: MemoryTarget, n: number, options: WhyOptions = {}): Promise<CommandReply> {
  const result = await guarded(() => store.read(target, { provenance: true }))
  if (!result.success) return warning(failure('read from', target, result))
  if (!Number.isInteger(n) || n < 1 || n > result.entries.length) {
    return warning(`No entry ${n} in ${target} (${plural(result.entries.length, 'entry')}). ${USAGE.why}`)
  }
  const lines = [`${target} #${n}: ${result.entries[n - 1]}`, await describeProvenance(result.provenance?.[n - 1], options)]
  if (result.provenanceError) lines.push(result.provenanceError)
  return result.provenanceError ? warning(lines.join('\n')) : info(lines.join('\n'))
}

async function why(store: MemoryStore, rest: string, read?: CitationReader): Promise<CommandReply> {
  const words = rest.split(/\s+/).filter(Boolean)
  const [target, text] = targetAndText(words.filter((word) => word !== '--calls').join(' '))
  if (!/^#?\d+$/.test(text)) return warning(USAGE.why)
  return whyReply(store, target, Number(text.replace(/^#/, '')), { read, calls: words.includes('--calls') })
}

function describeReport(verb: 'Applied' | 'Rejected', report: MemoryReviewReport): CommandReply {
  if (report.error) return warning(`Failed: ${report.error}`)
  const ids = (list: { id: number }[]) => list.map((s) => `#${s.id}`).join(', ')
  const lines = [report.settled.length ? `${verb} ${ids(report.settled)}.` : `${verb} nothing.`]
  for (const refused of report.refused) lines.push(`Refused #${refused.id} (${refused.code}): ${refused.error}`)
  if (report.missing.length) lines.push(`No such proposal: ${report.missing.map((id) => `#${id}`).join(', ')}.`)
  lines.push(`${report.remaining} proposal(s) awaiting review.`)
  return { text: lines.join('\n'), level: report.refused.length || report.missing.length ? 'warning' : 'info' }
}

/** `/memory review [apply|reject <n…>|all]` (the CLI's `memory review` too). */
export async function reviewReply(store: MemoryStore, rest: string): Promise<CommandReply> {
  const [verb, args] = firstWord(rest)
  if (!verb) {
    const listed = await guarded(() => store.proposals())
    if (!listed.success) return warning(`Failed: ${listed.error}`)
    if (listed.proposals.length === 0) return info('No proposals awaiting review.')
    const lines = listed.proposals.map(describeProposal)
    return info([`Proposals awaiting review (${lines.length}):`, ...lines, 'Apply: /memory review apply <n…>|all · Reject: /memory review reject <n…>|all'].join('\n'))
  }
  const words = args.split(/[\s,]+/).filter(Boolean)
  const ids = words.map((w) => Number(w.replace(/^#/, '')))
  const selection = words.length === 1 && words[0] === 'all' ? ('all' as const) : ids
  const valid = selection === 'all' || (ids.length > 0 && ids.every((id) => Number.isInteger(id) && id > 0))
  if ((verb !== 'apply' && verb !== 'reject') || !valid) return warning(USAGE.review)
  if (verb === 'apply') return describeReport('Applied', await guarded(() => store.applyProposals(selection)))
  return describeReport('Rejected', await guarded(() => store.rejectProposals(selection)))
}

/** Runs one `/memory` command line (without the `/memory` word). */
export async function runMemoryCommand(
  store: MemoryStore,
  args: string,
  dreaming?: SessionCommands,
  ctx?: ExtensionContext,
): Promise<CommandReply> {
  const [sub, rest] = firstWord(args)
  switch (sub || 'status') {
    case 'status':
      return statusReply(store, dreaming?.status(ctx), dreaming?.history?.(ctx))
    case 'forget':
    case 'unforget':
      return forgetReply(sub as 'forget' | 'unforget', dreaming?.history?.(ctx), rest)
    case 'dream':
      return dreamNow(dreaming, ctx)
    case 'review':
      return reviewReply(store, rest)
    case 'why':
      return why(store, rest, dreaming?.cited?.(ctx))
    case 'read':
      return readReply(store, targetAndText(rest)[0])
    case 'add':
    case 'replace':
    case 'remove':
      return write(sub as WriteVerb, store, rest)
    default:
      return warning(`Unknown subcommand. Available: ${SUBCOMMANDS.join(', ')}.`)
  }
}

export function registerMemoryCommand(
  pi: ExtensionAPI,
  store: () => MemoryStore | undefined,
  dreaming?: SessionCommands,
  /** Called after every command, e.g. to refresh the footer's live count. */
  afterCommand?: (ctx: ExtensionContext) => void | Promise<void>,
): void {
  pi.registerCommand('memory', {
    description: 'Curated memory: /memory status | read [user|project] | add|replace|remove [user|memory|project] … | dream | review [apply|reject <n…>|all] | why [user|project] <n> [--calls] | forget|unforget <session> [<entryId>]',
    // Nothing to offer once the subcommand is complete: a menu would make Enter pick it instead of running it.
    getArgumentCompletions: (prefix) => {
      const word = prefix.trimStart()
      if (/\s/.test(word) || SUBCOMMANDS.includes(word)) return null
      const names = SUBCOMMANDS.filter((name) => name.startsWith(word))
      return names.length ? names.map((name) => ({ value: name, label: name })) : null
    },
    async handler(args, ctx) {
      const current = store()
      const reply = current
        ? await runMemoryCommand(current, args, dreaming, ctx).catch((error: unknown): CommandReply => ({
            text: `Failed: ${error instanceof Error ? error.message : String(error)}`,
            level: 'error',
          }))
        : warning('pi-memory is not loaded.')
      ctx.ui.notify(reply.text, reply.level)
      await afterCommand?.(ctx)
    },
  })
}
