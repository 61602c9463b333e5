// The session files of the multi-host suite and the writers that change them
// (an appender, a same-size rewriter, a deleter that also creates), each
// operation logged with process.hrtime.bigint() taken before and after it:
// CLOCK_MONOTONIC, the clock the reader processes stamp their queries with.
// Every planted term is a whole lowercase word used exactly once, ever, so a
// term names one entry of one session for as long as it is on disk.
import { execFileSync } from 'node:child_process'
import { appendFileSync, closeSync, ftruncateSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs'
import { basename, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { encodeCwd } from './helpers.mjs'

export const PROJECTS = { a: '/home/u/alpha', b: '/home/u/bravo' } as const
export type Project = keyof typeof PROJECTS

/** [t0, t1]: hrtime (ns) just before an operation started and just after it returned. */
export interface Span {
  t0: bigint
  t1: bigint
}

export interface TermFact {
  term: string
  sessionFile: string
  sessionId: string
  entryId: string
  project: Project
  planted: Span
  removed?: Span
  /** Every operation that touched the term's bytes or its whole file while it was planted (plant and removal too). */
  spans: Span[]
}

/** What happened to a whole session file, for judging follow calls bound before it. */
export type SessionEvent = (Span & { kind: 'rewrite'; offset: number }) | (Span & { kind: 'delete' })

interface Entry {
  id: string
  term: string
}

interface Session {
  file: string
  id: string
  project: Project
  content: string
  entries: Entry[]
  busy: boolean
  deleted: boolean
  /** A second hard link to the file, outside the sessions tree, once one is made. */
  link?: string
}

export interface WriterCounts {
  appends: number
  rewrites: number
  burstRewrites: number
  mtimeRestored: number
  creates: number
  chunkedCreates: number
  deletes: number
  links: number
  /** Appends and rewrites written through a session's second link. */
  throughLinks: number
}

const FILLER = 'the a build test fix error index cache query session file path branch merge commit deploy config timeout retry log parse write read lock watch event queue worker thread memory disk note plan check'.split(' ')
const TERM_LETTERS = 7

/** A small seeded PRNG (mulberry32): the writers' choices follow the seed. */
export function prng(seed: number): (n: number) => number {
  let state = seed >>> 0
  return (n: number) => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n)
  }
}

const now = () => process.hrtime.bigint()

export class World {
  readonly facts = new Map<string, TermFact>()
  readonly sessionEvents = new Map<string, SessionEvent[]>()
  readonly counts: WriterCounts = { appends: 0, rewrites: 0, burstRewrites: 0, mtimeRestored: 0, creates: 0, chunkedCreates: 0, deletes: 0, links: 0, throughLinks: 0 }
  /** Session file → t0 of the operation that made its second hard link. */
  readonly linkedAt = new Map<string, bigint>()
  /** Called with each newly planted term, after its write returned. */
  onPlant: (fact: TermFact) => void = () => {}
  private readonly sessions: Session[] = []
  private readonly random: (n: number) => number
  private termCount = 0
  private sessionCount = 0
  private stopping = false
  /** t0 of each operation under way: an answer stamped after one of them cannot be judged until it is logged. */
  private readonly inFlight = new Set<bigint>()

  /** `linkDir`: where backup links to sessions go (none are made without it). */
  constructor(
    readonly agentDir: string,
    seed: number,
    private readonly linkDir?: string,
  ) {
    this.random = prng(seed)
    for (const cwd of Object.values(PROJECTS)) mkdirSync(join(agentDir, 'sessions', encodeCwd(cwd)), { recursive: true })
    if (linkDir) mkdirSync(linkDir, { recursive: true })
  }

  /** `count` sessions, written before any reader starts, with mtimes spread over the last hours (so tiers differ). */
  seed(count: number, entriesEach: number): void {
    for (let i = 0; i < count; i++) {
      const session = this.newSession(i % 3 === 2 ? 'b' : 'a', entriesEach, 'i')
      const t0 = now()
      appendFileSync(session.file, session.content, { flag: 'wx' })
      const past = new Date(Date.now() - (count - i) * 600_000)
      utimesSync(session.file, past, past)
      this.planted(session, session.entries, { t0, t1: now() })
    }
  }

  /** Every operation that started at or before `t` has been logged. */
  settledThrough(t: bigint): boolean {
    for (const t0 of this.inFlight) if (t0 <= t) return false
    return true
  }

  /** Runs one operation between its two stamps; `t0` is taken, and known in flight, before it touches the disk. */
  private async op(write: () => void | Promise<void>): Promise<Span> {
    const t0 = now()
    this.inFlight.add(t0)
    try {
      await write()
      return { t0, t1: now() }
    } finally {
      this.inFlight.delete(t0)
    }
  }

  liveSessions(): number {
    return this.sessions.filter((s) => !s.deleted).length
  }

  /** Session ids on disk now, by project. */
  liveIds(project?: Project): string[] {
    return this.sessions.filter((s) => !s.deleted && (!project || s.project === project)).map((s) => s.id)
  }

  /** Every live file's bytes equal what the writers logged (a check on the harness itself). */
  diskMatchesLog(): string[] {
    return this.sessions.filter((s) => !s.deleted && readFileSync(s.file, 'utf8') !== s.content).map((s) => s.file)
  }

  /** Runs the three writers until stop(); resolves when each has finished its operation in flight. */
  run(): { stop: () => Promise<void> } {
    const loops = [this.loop([30, 90], () => this.append()), this.loop([250, 600], () => this.rewrite()), this.loop([700, 1500], () => this.createOrDelete())]
    return {
      stop: async () => {
        this.stopping = true
        await Promise.all(loops)
      },
    }
  }

  private async loop([min, max]: [number, number], step: () => Promise<void> | void): Promise<void> {
    while (!this.stopping) {
      await sleep(min + this.random(max - min))
      if (!this.stopping) await step()
    }
  }

  private term(kind: string): string {
    // An odd multiplier prime to 26 walks all 26^7 values, so terms never repeat.
    let n = (++this.termCount * 1_299_709) % 26 ** TERM_LETTERS
    let letters = ''
    for (let i = 0; i < TERM_LETTERS; i++, n = Math.floor(n / 26)) letters += String.fromCharCode(97 + (n % 26))
    return `zz${kind}${letters}`
  }

  private line(session: Session, kind: string): { text: string; entry: Entry } {
    const entry = { id: `${session.id.slice(0, 8)}e${session.entries.length}`, term: this.term(kind) }
    const words = (n: number) => Array.from({ length: n }, () => FILLER[this.random(FILLER.length)]).join(' ')
    const text = `${words(5)} ${entry.term} ${words(3)}`
    const parentId = session.entries.at(-1)?.id ?? null
    const timestamp = new Date().toISOString()
    const message =
      session.entries.length % 2 === 0
        ? { role: 'user', content: text, timestamp: Date.now() }
        : { role: 'assistant', content: [{ type: 'text', text }], api: 'faux', provider: 'faux', model: 'faux-1', usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 }, stopReason: 'stop', timestamp: Date.now() }
    session.entries.push(entry)
    return { text: JSON.stringify({ type: 'message', id: entry.id, parentId, timestamp, message }) + '\n', entry }
  }

  private newSession(project: Project, entries: number, kind: string): Session {
    const n = ++this.sessionCount
    const id = `0199${n.toString(16).padStart(4, '0')}-mhst-7000-8000-${(this.random(2 ** 31) * 4096 + n).toString(16).padStart(12, '0').slice(-12)}`
    const stamp = new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString().replace(/[:.]/g, '-')
    const file = join(this.agentDir, 'sessions', encodeCwd(PROJECTS[project]), `${stamp}_${id}.jsonl`)
    const session: Session = { file, id, project, content: '', entries: [], busy: false, deleted: false }
    session.content = JSON.stringify({ type: 'session', version: 3, id, timestamp: new Date().toISOString(), cwd: PROJECTS[project] }) + '\n'
    for (let i = 0; i < entries; i++) session.content += this.line(session, kind).text
    this.sessions.push(session)
    return session
  }

  private planted(session: Session, entries: Entry[], span: Span): void {
    for (const entry of entries) {
      const fact: TermFact = { term: entry.term, sessionFile: session.file, sessionId: session.id, entryId: entry.id, project: session.project, planted: span, spans: [span] }
      this.facts.set(entry.term, fact)
      this.onPlant(fact)
    }
  }

  private pick(): Session | undefined {
    const free = this.sessions.filter((s) => !s.deleted && !s.busy)
    return free.length ? free[this.random(free.length)] : undefined
  }

  private event(session: Session, event: SessionEvent): void {
    this.sessionEvents.set(session.file, [...(this.sessionEvents.get(session.file) ?? []), event])
  }

  /** The path a write goes through: the session's second link, when it has one, half the time. */
  private writePath(session: Session): string {
    if (!session.link || this.random(2)) return session.file
    this.counts.throughLinks++
    return session.link
  }

  /**
   * Pi's own write: one line appended to a session. Now and then (with a
   * link dir) a backup or sync tool's hard link to the session is made
   * instead, and later writes go through it half the time.
   */
  private async append(): Promise<void> {
    const session = this.pick()
    if (!session) return
    if (this.linkDir && !session.link && this.random(40) === 0) {
      const link = join(this.linkDir, basename(session.file))
      const span = await this.op(() => linkSync(session.file, link))
      session.link = link
      this.linkedAt.set(session.file, span.t0)
      this.counts.links++
      return
    }
    const { text, entry } = this.line(session, 'a')
    const path = this.writePath(session)
    const span = await this.op(() => appendFileSync(path, text))
    session.content += text
    this.counts.appends++
    this.planted(session, [entry], span)
  }

  /**
   * An external edit: one planted term replaced by a new term of the same
   * length, the file truncated and written again in two parts with a pause
   * between (the first part empty, inside the header or anywhere), half of
   * them saved many times over, and a third with the mtime put back
   * (to the nanosecond) as an editor that preserves times would.
   */
  private async rewrite(): Promise<void> {
    const session = this.pick()
    if (!session) return
    session.busy = true
    try {
      const entry = session.entries[this.random(session.entries.length)]
      const offset = session.content.indexOf(entry.term)
      const next = this.term('r')
      const content = session.content.slice(0, offset) + next + session.content.slice(offset + next.length)
      const restoreMtime = this.random(3) === 0
      // Half are bursts: the same save repeated for ~100–300 ms, as an editor or sync tool may.
      const saves = this.random(2) === 0 ? 20 + this.random(40) : 1
      const header = content.indexOf('\n') + 1
      const path = this.writePath(session)
      const span = await this.op(async () => {
        const mtime = statSync(path, { bigint: true }).mtimeNs
        for (let i = 0; i < saves; i++) {
          // Where the first write stops: nothing yet, inside the header line, or anywhere.
          const cut = [0, this.random(header), this.random(content.length)][this.random(3)]
          const fd = openSync(path, 'r+')
          try {
            ftruncateSync(fd, 0)
            writeSync(fd, content.slice(0, cut), 0)
            await sleep(this.random(saves > 1 ? 3 : 100))
            writeSync(fd, content.slice(cut), cut)
          } finally {
            closeSync(fd)
          }
          if (i < saves - 1) await sleep(this.random(6))
        }
        if (restoreMtime) execFileSync('touch', ['-m', '-d', `@${mtime / 1_000_000_000n}.${(mtime % 1_000_000_000n).toString().padStart(9, '0')}`, path])
      })
      session.content = content
      this.counts.rewrites++
      if (saves > 1) this.counts.burstRewrites++
      if (restoreMtime) this.counts.mtimeRestored++
      this.event(session, { kind: 'rewrite', offset, ...span })
      // The whole file was in flux: every term of it was touched.
      for (const other of session.entries) this.facts.get(other.term)!.spans.push(span)
      this.facts.get(entry.term)!.removed = span
      entry.term = next
      this.planted(session, [entry], span)
    } finally {
      session.busy = false
    }
  }

  /** Keeps 8–16 sessions: deletes one, or creates one (a third of them written in two parts, the header split). */
  private async createOrDelete(): Promise<void> {
    const live = this.liveSessions()
    if (live > 16 || (live > 8 && this.random(2) === 0)) {
      const session = this.pick()
      if (!session) return
      session.deleted = true
      const span = await this.op(() => [session.file, session.link].forEach((path) => path && unlinkSync(path)))
      this.counts.deletes++
      this.event(session, { kind: 'delete', ...span })
      for (const entry of session.entries) {
        const fact = this.facts.get(entry.term)!
        fact.removed = span
        fact.spans.push(span)
      }
      return
    }
    const session = this.newSession(this.random(3) === 2 ? 'b' : 'a', 2 + this.random(4), 'c')
    session.busy = true
    const chunked = this.random(3) === 0
    const cut = 1 + this.random(60)
    const span = await this.op(async () => {
      if (!chunked) return appendFileSync(session.file, session.content, { flag: 'wx' })
      appendFileSync(session.file, session.content.slice(0, cut), { flag: 'wx' })
      await sleep(this.random(40))
      appendFileSync(session.file, session.content.slice(cut))
    })
    session.busy = false
    this.counts.creates++
    if (chunked) this.counts.chunkedCreates++
    this.planted(session, session.entries, span)
  }
}
