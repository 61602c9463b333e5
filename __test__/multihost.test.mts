// Several hosts on one agent dir and one index dir (a user with three
// terminals): reader processes recall planted terms and follow their hits
// while this process appends to sessions, rewrites them in place (same size:
// truncated and written back, some saved dozens of times over, some with their
// mtime put back), deletes and creates them, gives some a second hard link (as
// backup and sync tools do) and writes through it, and SIGKILLs a reader every
// ~3 s (a fresh one takes its place on the shared index). Every answer is judged
// against the writers' log (multihost-judge.mts: only facts that held for the
// whole query, on the one monotonic clock); then a warm reader, a fresh process
// on the shared index dir and a fresh process on an empty index dir each recall
// every term ever planted and list the sessions, and must agree with the disk.
// Answers about hard-linked sessions are judged and counted apart (the watch
// sees a link made after it was armed only through the file's own inode watch;
// the last test is the minimal case). Hosts use the built
// package (dist/) through createMemory, not Pi. The figures
// (queries judged, wrong answers, kills, sweeps) are printed as diagnostics.
//
// CI size: 20 s, 3 readers. A long run:
//   PFM_MULTIHOST_SECONDS=600 node --import tsx --test __test__/multihost.test.mts
// PFM_MULTIHOST_READERS sets the readers, PFM_MULTIHOST_SEED the writers'
// choices (each run prints its seed; timing still differs between runs).
import assert from 'node:assert/strict'
import { fork, type ChildProcess } from 'node:child_process'
import { appendFileSync, linkSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { createMemory } from '../extension/index.mjs'
import { ROOT, tempAgent } from './helpers.mjs'
import { judgeFollow, judgeQuery, Tally, type FollowRecord, type QueryRecord } from './multihost-judge.mjs'
import { PROJECTS, World, type Project, type SessionEvent, type TermFact } from './multihost-world.mjs'

function setting(name: string, fallback: number, least: number): number {
  const raw = process.env[name]
  const value = raw === undefined ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < least) throw new Error(`${name} must be an integer ≥ ${least} (got ${JSON.stringify(raw)})`)
  return value
}

const SECONDS = setting('PFM_MULTIHOST_SECONDS', 20, 1)
const READERS = setting('PFM_MULTIHOST_READERS', 3, 1)
const SEED = setting('PFM_MULTIHOST_SEED', Math.floor(Math.random() * 2 ** 31), 0)
const KILL_EVERY_MS = 3_000
const HOT_SESSIONS = 4
const HOST = join(ROOT, '__test__/fixtures/multihost-host.mjs')
const ENTRY = join(ROOT, 'dist/extension/index.mjs')

interface Swept {
  answers: QueryRecord[]
  global: { ids: string[]; coverage: QueryRecord['coverage']; error?: string }
  project: { ids: string[]; coverage: QueryRecord['coverage']; error?: string }
}

/** A forked host: its messages go to `sink`; `next(type)` waits for its next message of that type. */
class Host {
  readonly child: ChildProcess
  readonly exited: Promise<NodeJS.Signals | null>
  private waiters: Array<{ type: string; resolve: (message: any) => void }> = []
  private killed = false

  constructor(
    readonly id: number,
    readonly project: Project,
    indexDir: string,
    agentDir: string,
    private readonly sink: (message: any) => void,
  ) {
    const options = { host: id, agentDir, cwd: PROJECTS[project], project, indexDir, hotSessions: HOT_SESSIONS }
    this.child = fork(HOST, [ENTRY, JSON.stringify(options)], { serialization: 'advanced', execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    this.exited = new Promise((resolve) => this.child.on('exit', (_code, signal) => resolve(signal)))
    this.child.on('message', (message: any) => {
      sink(message)
      const i = this.waiters.findIndex((w) => w.type === message.type)
      if (i >= 0) this.waiters.splice(i, 1)[0].resolve(message)
    })
  }

  next<T = any>(type: string): Promise<T> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ type, resolve })
      this.exited.then((signal) => reject(new Error(`host ${this.id} exited (${signal}) while waiting for ${type}`)))
    })
  }

  /** A message to the host; one to a host this suite killed is dropped (its channel may close under the write: EPIPE). */
  send(message: object): void {
    if (this.killed || !this.child.connected) return
    this.child.send(message, (error) => {
      if (error && !this.killed) this.sink({ type: 'threw', host: this.id, message: `send: ${error.message}` })
    })
  }

  kill(): void {
    this.killed = true
    this.child.kill('SIGKILL')
  }
}

/**
 * Was the term's session given a second hard link by `t`? Answers about those
 * sessions are counted apart: a warm process sees writes through a link made
 * after its watch was armed only through the file's own inode watch.
 */
function linkedBy(world: World, term: string, t: bigint): boolean {
  const fact = world.facts.get(term)
  const at = fact && world.linkedAt.get(fact.sessionFile)
  return at !== undefined && at <= t
}

interface Problem {
  term?: string
  why: string
}

/** A sweep is right only if every answer is right (settled files: nothing is excused) and the listings equal the disk. */
function sweepProblems(world: World, swept: Swept, project: Project): Problem[] {
  const problems: Problem[] = swept.answers.flatMap((answer) => {
    const verdict = judgeQuery(world.facts, answer)
    return verdict.kind === 'right' ? [] : [{ term: answer.term, why: `${answer.term}: ${verdict.kind === 'unjudged' ? 'unjudged' : verdict.why}` }]
  })
  for (const [scope, listing, truth] of [['global', swept.global, world.liveIds()], ['project', swept.project, world.liveIds(project)]] as const) {
    if (listing.error || !listing.coverage.complete) problems.push({ why: `sessions ${scope}: error ${listing.error}, complete ${listing.coverage.complete}` })
    if (JSON.stringify(listing.ids) !== JSON.stringify([...truth].sort())) problems.push({ why: `sessions ${scope}: listed ${listing.ids.length}, on disk ${truth.length}` })
  }
  return problems
}

test('judging: a miss is wrong only when complete; a query that raced a write of its term is not judged; a follow across a rewrite must be stale_pointer', () => {
  const span = (t0: number, t1: number) => ({ t0: BigInt(t0), t1: BigInt(t1) })
  const fact: TermFact = { term: 'zzaterm', sessionFile: '/s.jsonl', sessionId: 's', entryId: 'e1', project: 'a', planted: span(10, 20), spans: [span(10, 20)] }
  const facts = new Map([[fact.term, fact]])
  const coverage = { complete: true, staleSessions: 0, unavailableSessions: 0, incompleteSessions: 0, reasons: [] }
  const query = (q0: number, q1: number, hits: QueryRecord['hits'], complete = true): QueryRecord => ({
    host: 1, seq: 1, term: fact.term, scope: 'global', project: 'a', q0: BigInt(q0), q1: BigInt(q1), total: hits.length, hits, coverage: { ...coverage, complete },
  })
  const hit = { kind: 'entry' as const, sessionId: 's', entryId: 'e1', tier: 'hot', hasTerm: true, boundBytes: 100 }
  assert.equal(judgeQuery(facts, query(30, 40, [])).kind, 'wrong')
  assert.equal(judgeQuery(facts, query(30, 40, [], false)).kind, 'excused')
  assert.equal(judgeQuery(facts, query(15, 40, [])).kind, 'unjudged')
  assert.equal(judgeQuery(facts, query(0, 5, [hit])).kind, 'wrong', 'a hit before the term was written')
  assert.equal(judgeQuery(facts, query(30, 40, [hit])).kind, 'right')
  assert.equal(judgeQuery(facts, query(30, 40, [{ ...hit, entryId: 'e2' }])).kind, 'wrong')
  assert.equal(judgeQuery(facts, { ...query(30, 40, [hit]), scope: 'project', project: 'b' }).kind, 'wrong', 'a hit outside the scope')
  const events = new Map<string, SessionEvent[]>([['/s.jsonl', [{ kind: 'rewrite', offset: 50, ...span(50, 60) }]]])
  const bound = query(30, 40, [hit])
  const follow = (f0: number, f1: number, error?: string, items: FollowRecord['items'] = [], by = bound): FollowRecord => ({ host: 1, query: by, hit: 0, f0: BigInt(f0), f1: BigInt(f1), error, items })
  const entry = [{ entryId: 'e1', hasTerm: true }]
  assert.equal(judgeFollow(facts, events, follow(70, 80, undefined, entry)).kind, 'wrong', 'content after a bound byte changed')
  assert.equal(judgeFollow(facts, events, follow(70, 80, 'stale_pointer')).kind, 'right')
  assert.equal(judgeFollow(facts, events, follow(55, 80, 'stale_pointer')).kind, 'unjudged')
  assert.equal(judgeFollow(facts, events, follow(41, 45, 'stale_pointer')).kind, 'wrong', 'stale before any rewrite')
  assert.equal(judgeFollow(facts, events, follow(70, 80, undefined, entry, query(30, 40, [{ ...hit, boundBytes: 40 }]))).kind, 'right', 'the rewrite was past the bound prefix')
})

test(`${READERS} reader hosts, an appender, a rewriter, a deleter and SIGKILLs for ${SECONDS} s: no wrong answer; warm, fresh and empty-index sweeps agree with the disk`, { timeout: SECONDS * 1000 + 180_000 }, async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'pfm-multihost-'))
  const agentDir = join(root, 'agent')
  const indexDir = join(root, 'index')
  const hosts: Host[] = []
  try {
    const world = new World(agentDir, SEED, join(root, 'backup'))
    world.seed(12, 6)
    const terms = [...world.facts.keys()]
    const queries = new Tally()
    const follows = new Tally()
    /** Queries and follows about sessions with a second hard link (linkedBy). */
    const linked = new Tally()
    const found = { hot: 0, cold: 0 }
    const followed = { entry: 0, stale: 0, gone: 0 }
    const served = new Map<number, number>()
    const threw: string[] = []
    const show = (record: object) => JSON.stringify(record, (_k, x) => (typeof x === 'bigint' ? x.toString() : x))
    const context = (term: string) => {
      const fact = world.facts.get(term)
      return { fact, events: fact && world.sessionEvents.get(fact.sessionFile) }
    }
    // An answer is judged once every write that began before it ended is logged.
    let pending: Array<{ until: bigint; judge: () => void }> = []
    const settle = () => {
      const ready = pending.filter((p) => world.settledThrough(p.until))
      pending = pending.filter((p) => !ready.includes(p))
      for (const p of ready) p.judge()
    }
    const judgeQueryRecord = (query: QueryRecord) => {
      const verdict = judgeQuery(world.facts, query)
      const tally = linkedBy(world, query.term, query.q1) ? linked : queries
      tally.add(verdict, () => show({ query, ...context(query.term) }))
      if (tally === queries && verdict.kind === 'right' && query.hits.length) found[query.hits[0].tier as 'hot' | 'cold']++
    }
    const judgeFollowRecord = (follow: FollowRecord) => {
      const verdict = judgeFollow(world.facts, world.sessionEvents, follow)
      const tally = linkedBy(world, follow.query.term, follow.f1) ? linked : follows
      tally.add(verdict, () => show({ follow, ...context(follow.query.term) }))
      if (tally === follows && verdict.kind === 'right') followed[!follow.error ? 'entry' : follow.error === 'stale_pointer' ? 'stale' : 'gone']++
    }
    const sink = (message: any) => {
      if (message.type === 'query') {
        served.set(message.host, (served.get(message.host) ?? 0) + 1)
        pending.push({ until: message.q1, judge: () => judgeQueryRecord(message) })
      } else if (message.type === 'follow') pending.push({ until: message.f1, judge: () => judgeFollowRecord(message) })
      else if (message.type === 'threw') threw.push(`host ${message.host}: ${message.message}`)
    }
    let nextId = 0
    const start = async (project: Project, dir = indexDir) => {
      const host = new Host(++nextId, project, dir, agentDir, sink)
      hosts.push(host)
      await host.next('ready')
      return host
    }
    const readers: Host[] = []
    for (let i = 0; i < READERS; i++) readers.push(await start(i % 2 ? 'b' : 'a'))
    world.onPlant = (fact) => {
      terms.push(fact.term)
      for (const reader of readers) reader.send({ type: 'terms', terms: [fact.term] })
    }
    for (const reader of readers) reader.send({ type: 'terms', terms }), reader.send({ type: 'start' })

    const writers = world.run()
    const settling = setInterval(settle, 50)
    const deadline = Date.now() + SECONDS * 1000
    let kills = 0
    while (Date.now() < deadline) {
      await sleep(Math.min(KILL_EVERY_MS - 1000 + Math.random() * 2000, Math.max(0, deadline - Date.now())))
      if (Date.now() >= deadline) break
      const i = Math.floor(Math.random() * readers.length)
      const victim = readers[i]
      victim.kill()
      if ((await victim.exited) === 'SIGKILL') kills++
      readers[i] = await start(victim.project)
      readers[i].send({ type: 'terms', terms: [...terms] })
      readers[i].send({ type: 'start' })
    }
    await writers.stop()
    await Promise.all(readers.map((reader) => (reader.send({ type: 'stop' }), reader.next('stopped'))))
    clearInterval(settling)
    settle()
    assert.equal(pending.length, 0)
    assert.deepEqual(world.diskMatchesLog(), [], 'the harness: every live file holds what the writers logged')

    // The sweep, one process after the other (a record another process replaces under a query is legitimately
    // incomplete): the busiest surviving reader (warm), a fresh process on the shared index dir, one on an empty dir.
    const warm = readers.reduce((a, b) => ((served.get(a.id) ?? 0) >= (served.get(b.id) ?? 0) ? a : b))
    const probes = ['zznonever', 'zznoneverb', 'zznoneverc']
    const sweeps: Array<{ name: string; swept: Swept; problems: Problem[]; linkedProblems: Problem[] }> = []
    for (const [name, host] of [
      ['warm', async () => warm],
      ['fresh on the shared index', () => start(warm.project)],
      ['fresh on an empty index', () => start(warm.project, join(root, 'index-empty'))],
    ] as const) {
      const sweeper = await host()
      sweeper.send({ type: 'sweep', terms: [...terms, ...probes] })
      const swept = await sweeper.next<Swept>('swept')
      const problems = sweepProblems(world, swept, warm.project)
      const isLinked = (p: Problem) => p.term !== undefined && world.linkedAt.has(world.facts.get(p.term)?.sessionFile ?? '')
      sweeps.push({ name, swept, problems: problems.filter((p) => !isLinked(p)), linkedProblems: problems.filter(isLinked) })
    }

    const c = world.counts
    t.diagnostic(`multihost: seed ${SEED}, ${SECONDS} s, ${READERS} readers, hotSessions ${HOT_SESSIONS}, ${nextId} hosts started`)
    t.diagnostic(`writers: ${c.appends} appends, ${c.rewrites} same-size rewrites (${c.burstRewrites} saved several times, ${c.mtimeRestored} with mtime put back), ${c.creates} creates (${c.chunkedCreates} in two parts), ${c.deletes} deletes, ${c.links} hard links made (${c.throughLinks} writes through one); ${world.liveSessions()} sessions on disk, ${terms.length} terms planted`)
    t.diagnostic(`kills: ${kills} SIGKILLs of readers, each replaced by a fresh process on the shared index`)
    t.diagnostic(`queries: ${queries.total} answered, ${queries.judged} judged (${found.hot + found.cold} found where the log puts them: ${found.hot} hot, ${found.cold} cold), ${queries.counts.unjudged} unjudged (raced a write of their term), ${queries.counts.excused} excused (${queries.excused()}), ${queries.counts.wrong} wrong`)
    t.diagnostic(`follows: ${follows.total} dispatched, ${follows.judged} judged (${followed.entry} read their entry, ${followed.stale} stale_pointer after a rewrite, ${followed.gone} refused after a delete), ${follows.counts.wrong} wrong`)
    for (const { name, swept: s, problems, linkedProblems } of sweeps) {
      t.diagnostic(`sweep ${name}: ${s.answers.length} terms, ${problems.filter((p) => p.term).length} wrong (${linkedProblems.length} more in linked sessions); sessions ${s.global.ids.length} global, ${s.project.ids.length} in its project, ${problems.filter((p) => !p.term).length} wrong`)
    }
    t.diagnostic(`sessions with a second hard link (counted apart): ${linked.total} queries and follows, ${linked.judged} judged, ${linked.counts.wrong} wrong`)

    assert.deepEqual(threw, [], 'no host threw')
    assert.deepEqual([...queries.wrongs, ...follows.wrongs], [], `wrong answers (seed ${SEED})`)
    for (const { name, problems } of sweeps) assert.deepEqual(problems.slice(0, 10).map((p) => p.why), [], `sweep ${name} disagrees with the disk (seed ${SEED})`)
    // Not vacuous: most answers were judged, both tiers found terms, follows were judged both ways, readers were killed.
    assert.ok(queries.judged >= queries.total / 2 && found.hot >= 10 && found.cold >= 10, `${queries.judged} of ${queries.total} queries judged, found ${found.hot} hot, ${found.cold} cold`)
    assert.ok(followed.entry >= 10 && followed.stale >= 1, `follows judged: ${JSON.stringify(followed)}`)
    assert.ok(kills >= Math.min(3, Math.floor(SECONDS / 4)), `${kills} kills`)
    await t.test('answers about sessions written through a second hard link', () => {
      assert.deepEqual([...linked.wrongs, ...sweeps.flatMap((s) => s.linkedProblems.map((p) => `sweep ${s.name}: ${p.why}`))].slice(0, 10), [])
    })
  } finally {
    for (const host of hosts) host.kill()
    await Promise.all(hosts.map((host) => host.exited))
    rmSync(root, { recursive: true, force: true })
  }
})

test('minimal: a write through a hard link made after the watch is armed is seen by the next recall, as without the watch', async () => {
  const line = (id: string, parentId: string | null, text: string) =>
    JSON.stringify({ type: 'message', id, parentId, timestamp: '2026-01-01T00:00:01.000Z', message: { role: 'user', content: text, timestamp: 1 } }) + '\n'
  const totals: Record<string, number[]> = {}
  for (const watchSessions of [false, true]) {
    const agent = tempAgent()
    try {
      const file = agent.write('a.jsonl', JSON.stringify({ type: 'session', version: 3, id: 'a', timestamp: '2026-01-01T00:00:00.000Z', cwd: agent.cwd }) + '\n' + line('a-0', null, 'first words'))
      const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { indexDir: join(agent.root, 'index'), watchSessions } })
      const first = (await memory.recall({ query: 'first', scope: 'global' })).total
      const link = join(agent.root, 'a-backup.jsonl')
      linkSync(file, link)
      appendFileSync(link, line('a-1', 'a-0', 'appended zebra'))
      const page = await memory.recall({ query: 'zebra', scope: 'global' })
      totals[`watchSessions ${watchSessions}`] = [first, page.total]
    } finally {
      agent.cleanup()
    }
  }
  assert.deepEqual(totals, { 'watchSessions false': [1, 1], 'watchSessions true': [1, 1] })
})
