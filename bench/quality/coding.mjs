// The coding set: a seeded generator of coding-agent sessions over five projects, with planted answers and the
// questions a developer asks of them later. Labels come from construction and are checked against the text:
//   topic            an incident's session (the developer's own words for the problem)
//   identifier       every session whose assistant text or edits name the identifier
//   identifier-part  the same, for every incident identifier holding all the words typed
//   error            the incident's session; its error text occurs in no other session
//   path             every session that read, edited or wrote the file, or whose user named it
//   non-english      the session in that language whose text holds every query word (no other holds them all)
//   long-entry       the session with a long log holding the word past its first 2,000 characters (nowhere else)
//   echo             an incident's session, asked for later by a newer "recall <X>" session of the same project
import { Rng, hash32 } from '../corpus.mjs'
import { LONG_LOGS, NON_ENGLISH, PHRASES } from './coding-extras.mjs'
import { INCIDENTS } from './coding-incidents.mjs'
import { PROJECTS } from './coding-projects.mjs'
import { editableLines, fileContent, fill, gitDiff, grepOutput, lintRun, longLog, prose, slots, testFileContent, testRun, varName } from './coding-text.mjs'
import { tokenize } from './text.mjs'

export const TYPE_ORDER = ['topic', 'identifier', 'identifier-part', 'error', 'path', 'non-english', 'long-entry', 'echo']
/** The first session starts here; the set spans about ten weeks after it, all in the past. */
const FIRST_START = Date.UTC(2026, 2, 2, 8, 0)
const FILLERS_PER_PROJECT = 16
const SECOND = 1000
const MINUTE = 60 * SECOND

/** Nothing a generated (filler) edit may touch: the planted identifiers, lines and words. */
const RESERVED = [...INCIDENTS.flatMap((i) => [i.ident, i.before]), ...LONG_LOGS.map((l) => l.needle)]
/** The incidents' edited files get their `before` line (inside `wrap` for an existing function). */
const WRAP = { U5: 'detectMimeType', S1: 'parseSessionHeader', S2: 'readJsonlLines', S5: 'watchSessionDir', M1: 'build_feature_matrix', M2: 'train_model', M3: 'resolve_s3_prefix', M4: 'write_parquet_partition', M5: 'next_run_at' }
const projectOf = (key) => PROJECTS.find((p) => p.key === key)

/** A file's content as sessions see it: generated, with the incident's line planted where one is fixed. */
function contentOf(P, path) {
  const incident = INCIDENTS.find((i) => i.project === P.key && i.file === path)
  return fileContent(P, path, incident && { before: incident.before, wrap: WRAP[incident.id] })
}

/** Builds one session's turns; times are offsets from its start until the timeline places it. */
class Script {
  constructor(/** @type {Rng} */ rng, P) {
    this.rng = rng
    this.P = P
    /** @type {(import('./pi-session.mjs').Turn & { at: number })[]} */
    this.turns = []
    this.at = 0
  }
  push(turn, gapMs) {
    this.at += this.turns.length ? gapMs : 0
    this.turns.push({ ...turn, at: this.at })
  }
  user(text) {
    this.push({ role: 'user', text }, this.rng.range(1, 12) * MINUTE)
  }
  assistant(text, calls = []) {
    this.push({ role: 'assistant', ...(text ? { text } : {}), ...(calls.length ? { calls } : {}) }, this.rng.range(4, 40) * SECOND)
  }
  result(text, isError = false) {
    this.push({ role: 'toolResult', text, ...(isError ? { isError } : {}) }, this.rng.range(1, 25) * SECOND)
  }
  /** One tool call and its result. */
  tool(say, name, args, text, isError = false) {
    this.assistant(say, [{ name, arguments: args }])
    this.result(text, isError)
  }
  read(say, path) {
    this.tool(say, 'read', { path }, contentOf(this.P, path))
  }
  bash(say, command, { text, isError }) {
    this.tool(say, 'bash', { command }, text, isError)
  }
  edit(say, path, oldText, newText) {
    this.tool(say, 'edit', { path, edits: [{ oldText, newText }] }, `Successfully replaced 1 block(s) in ${path}.`)
  }
  write(say, path, content) {
    this.tool(say, 'write', { path, content }, `Successfully wrote ${Buffer.byteLength(content)} bytes to ${path}`)
  }
  /** A small generated edit of `path`: one plain line gets a neighbour. */
  tweak(say, path) {
    const lines = editableLines(contentOf(this.P, path), RESERVED)
    const old = lines.length ? this.rng.pick(lines) : `${this.P.lang === 'py' ? '#' : '//'} ${path}`
    const indent = old.match(/^\s*/)[0]
    const added = `${indent}${this.P.lang === 'py' ? '#' : '//'} ${prose(this.rng, this.P, 1).replace(/`/g, '')}`
    this.edit(say, path, old, `${old}\n${added}`)
  }
  testsPass(say = null) {
    this.bash(say, this.P.test, testRun(this.rng, this.P))
  }
}

// ---------------------------------------------------------------------------------------------------
// Chores: the everyday sessions that fill each project and share its vocabulary with the planted ones
// ---------------------------------------------------------------------------------------------------

const pick = (rng, templates, s) => fill(rng.pick(templates), s)

/** @type {Record<string, (s: Script) => void>} */
const CHORES = {
  tests(s) {
    const x = slots(s.rng, s.P)
    s.user(pick(s.rng, ['Can you add tests for `{fn}`? Coverage in {file} is thin.', '`{fn}` has no tests at all, please add a few covering the edge cases.', 'Write unit tests for `{fn}`: an empty {noun}, a large one and an invalid {noun2}.'], x))
    s.read(pick(s.rng, ['Let me read `{file}` first.', 'Reading `{file}` to see what `{fn}` does.'], x), x.file)
    const cases = ['empty', 'large', 'invalid', 'duplicate', 'unicode'].slice(0, s.rng.range(2, 5))
    s.write("I'll add a test file covering the happy path and the edge cases.", x.test, testFileContent(s.rng, s.P, x.fn, cases))
    s.testsPass()
    s.assistant(`Added ${cases.length} tests for \`${x.fn}\` in \`${x.test}\` (${cases.join(', ')} input). ${prose(s.rng, s.P, 1)} All tests pass.`)
  },
  lint(s) {
    const files = s.rng.shuffle([...s.P.files]).slice(0, 2)
    s.user(s.rng.pick([`\`${s.P.lint}\` fails on CI, can you clean up the warnings?`, 'Fix the lint errors please, CI is red.', 'The linter complains about a bunch of things since the upgrade. Clean it up?']))
    s.bash('Running the linter to see what it reports.', s.P.lint, lintRun(s.rng, s.P, files, true))
    s.tweak('Mostly unused code and one real issue. Fixing them.', files[0])
    s.tweak(null, files[1])
    s.bash(null, s.P.lint, lintRun(s.rng, s.P, files, false))
    s.assistant(`The linter is clean now: I fixed the warnings in \`${files[0]}\` and \`${files[1]}\`. ${prose(s.rng, s.P, 1)}`)
  },
  refactor(s) {
    const x = slots(s.rng, s.P)
    s.user(pick(s.rng, ['`{fn}` in {file} has grown too long. Split the {noun} handling into its own function.', 'Refactor `{fn}`: the {noun} and {noun2} logic are tangled together.', 'Can you clean up `{fn}`? It does three things at once.'], x))
    s.read(null, x.file)
    s.tweak(`${prose(s.rng, s.P, 1)} I'll extract the ${x.noun} part.`, x.file)
    s.testsPass()
    s.assistant(`Extracted the ${x.noun} handling out of \`${x.fn}\`; behaviour is unchanged and the tests pass. ${prose(s.rng, s.P, 1)}`)
  },
  deps(s) {
    const dep = s.rng.pick(s.P.deps)
    const outdated = { ts: 'npm outdated', rust: 'cargo outdated -R', py: 'pip list --outdated', go: 'go list -m -u all' }[s.P.lang]
    s.user(s.rng.pick([`Bump ${dep} to the latest minor version and make sure nothing breaks.`, `Can you update ${dep}? There is a security advisory for the version we use.`]))
    const rows = s.P.deps.map((d) => `${d.padEnd(36)} ${s.rng.range(0, 3)}.${s.rng.range(0, 20)}.${s.rng.range(0, 9)}   ${s.rng.range(1, 4)}.${s.rng.range(0, 20)}.${s.rng.range(0, 9)}`)
    s.bash('Checking what is outdated.', outdated, { text: [`${'Package'.padEnd(36)} Current  Latest`, ...rows].join('\n'), isError: false })
    s.tweak(null, s.P.manifest)
    s.testsPass()
    s.assistant(`Updated ${dep} in \`${s.P.manifest}\`. The changelog lists no breaking changes for us and the test suite passes.`)
  },
  flaky(s) {
    const x = slots(s.rng, s.P)
    const failure = { ts: `Error: Test timed out in 5000ms.\nIf this is a long-running test, pass a timeout value as the last argument or configure it globally with "testTimeout".`, rust: `test ${x.fn}_waits_for_${varName({ lang: 'rust' }, x.noun)} has been running for over 60 seconds`, py: 'Failed: Timeout >10.0s', go: 'panic: test timed out after 10m0s' }[s.P.lang]
    s.user(pick(s.rng, ['The `{fn}` test is flaky on CI: it fails maybe one run in five with a timeout. Can you look?', 'CI keeps timing out in the {noun} tests, but only sometimes. Any idea why?', 'Flaky test again: something around `{fn}` times out on the slow runners.'], x))
    s.bash('Let me run the suite a few times.', s.P.test, testRun(s.rng, s.P, failure))
    s.read(null, x.test)
    s.tweak(`The test waits on a real timer while the ${x.noun} is produced asynchronously, so on a slow runner it can miss the deadline. I'll make it wait for the event instead.`, x.test)
    s.testsPass('Running it again (20 times in a loop).')
    s.assistant(`The test no longer depends on wall-clock timing: it awaits the ${x.noun} event. 20 runs in a row passed. ${prose(s.rng, s.P, 1)}`)
  },
  explain(s) {
    const x = slots(s.rng, s.P)
    s.user(pick(s.rng, ['How does the {noun} flow work in this repo? I have to change the {noun2} handling next week.', 'Explain how `{fn}` and `{fn2}` fit together, please.', 'I am new to this part of the code: where does a {noun} go after `{fn}`?'], x))
    s.assistant('Let me read the relevant files.', [{ name: 'read', arguments: { path: x.file } }, { name: 'read', arguments: { path: x.file2 } }])
    s.result(contentOf(s.P, x.file))
    s.result(contentOf(s.P, x.file2))
    s.assistant(`${prose(s.rng, s.P, s.rng.range(4, 7))}\n\n${prose(s.rng, s.P, s.rng.range(2, 4))}`)
  },
  docs(s) {
    const x = slots(s.rng, s.P)
    s.user(pick(s.rng, ['Document the {noun} options in the README.', 'The README does not mention `{const}`. Add a short section?'], x))
    s.read(null, 'README.md')
    s.tweak(null, 'README.md')
    s.assistant(`Added a section on the ${x.noun} options to the README, including \`${x.const}\`. ${prose(s.rng, s.P, 1)}`)
  },
  review(s) {
    const files = s.rng.shuffle([...s.P.files]).slice(0, s.rng.range(1, 3))
    s.user(s.rng.pick(['Review my changes before I push, please.', 'Can you look over the diff? I want a second pair of eyes.']))
    s.bash(null, 'git diff', { text: gitDiff(s.rng, s.P, files, (f) => contentOf(s.P, f), RESERVED), isError: false })
    s.assistant(`Looks reasonable overall. A few notes:\n\n${Array.from({ length: s.rng.range(2, 4) }, () => `- ${prose(s.rng, s.P, 1)}`).join('\n')}`)
  },
  feature(s) {
    const x = slots(s.rng, s.P)
    const option = varName(s.P, `${s.rng.pick(['max', 'default', 'skip', 'dry run', 'include'])} ${x.noun2}`)
    s.user(pick(s.rng, ['Add an `{option}` option to `{fn}` so callers can control the {noun2}.', 'We need `{fn}` to accept `{option}`; the {component} team asked for it.'], { ...x, option }))
    s.read(null, x.file)
    s.tweak(`I'll thread \`${option}\` through \`${x.fn}\` with the current behaviour as the default.`, x.file)
    s.testsPass()
    s.assistant(`\`${x.fn}\` takes \`${option}\` now; the default keeps today's behaviour. ${prose(s.rng, s.P, 1)}`)
  },
  callers(s) {
    const x = slots(s.rng, s.P)
    s.user(pick(s.rng, ['Where do we call `{fn}`? I want to know if it is safe to change its signature.', 'Who uses `{type}`?'], x))
    s.tool(null, 'grep', { pattern: x.fn, path: s.P.files[0].split('/')[0] }, grepOutput(s.rng, s.P, x.fn, (f) => contentOf(s.P, f)))
    s.assistant(`${prose(s.rng, s.P, s.rng.range(2, 4))} Changing the signature is safe if those call sites move with it.`)
  },
}
const CHORE_NAMES = Object.keys(CHORES)
const chore = (s) => CHORES[s.rng.pick(CHORE_NAMES)](s)

// ---------------------------------------------------------------------------------------------------
// Planted sessions
// ---------------------------------------------------------------------------------------------------

/** The incident's debugging session: report, read, reproduce, fix, verify, sum up. */
function incidentSession(s, inc) {
  const pasted = s.rng.chance(0.4)
  s.user(pasted ? `${inc.prompt}\n\n\`\`\`\n${inc.error}\n\`\`\`` : inc.prompt)
  s.read(fill(s.rng.pick(['Let me look at `{file}` first.', "I'll start with `{file}`; that is where this is handled.", 'Reading `{file}` to see how this works today.']), { file: inc.file }), inc.file)
  const k8s = inc.file.endsWith('.yaml')
  if (k8s) s.bash('Let me look at the events from the last rollout.', 'kubectl get events -n gateway --sort-by=.lastTimestamp', { text: `LAST SEEN   TYPE      REASON             OBJECT                         MESSAGE\n4m12s       Normal    Killing            pod/gateway-6f7d9c-x2k4p       Stopping container gateway\n4m10s       ${inc.error}`, isError: false })
  else s.bash(s.rng.pick(['Let me reproduce it with the tests.', 'Running the test suite to reproduce the failure.', null]), s.P.test, testRun(s.rng, s.P, inc.error))
  s.edit(`${inc.cause} ${s.rng.pick(["I'll fix it there.", 'Fixing it now.', 'Here is the change.'])}`, inc.file, inc.before, inc.after)
  if (k8s) s.bash(null, 'kubectl rollout status deploy/gateway -n gateway', { text: 'Waiting for deployment "gateway" rollout to finish: 1 of 3 updated replicas are available...\ndeployment "gateway" successfully rolled out', isError: false })
  else s.testsPass()
  s.assistant(inc.summary)
}

/** A session in another language: the user's request, a read, an edit, a summary in that language. */
function nonEnglishSession(s, ne) {
  const phrases = PHRASES[ne.lang]
  s.user(ne.prompt)
  const existing = s.P.files.includes(ne.file)
  s.read(phrases.opener, existing ? ne.file : s.rng.pick(s.P.files))
  if (existing) s.tweak(phrases.edit, ne.file)
  else s.write(phrases.edit, ne.file, `${ne.summary}\n`)
  if (existing) s.testsPass()
  s.assistant(ne.summary)
}

/** A long log with its needle, pasted by the user or printed by a command, and a reply that never names it. */
function longLogSession(s, L) {
  const log = longLog(s.rng, s.P, L.needle)
  const x = slots(s.rng, s.P)
  if (L.command) {
    s.user(pick(s.rng, ['Something went wrong overnight in {component}. Can you check the logs?', 'The {noun} jobs were slow last night. Look at the logs and tell me what you see.'], x))
    s.bash('Let me pull the logs.', L.command, { text: log, isError: false })
  } else {
    s.user(`${pick(s.rng, ["Here are the logs from last night's run, can you see anything odd?", 'Pasting the {component} log from the incident window:'], x)}\n\n\`\`\`\n${log}\n\`\`\``)
  }
  s.assistant(`${pick(s.rng, ['Most of this is routine: heartbeats and completed requests.', 'The log is mostly normal traffic.'], x)} ${fill('I see a run of retries in {component} and several slow {noun} warnings around the same minutes, which points at load rather than a bug in `{fn}`.', x)} ${prose(s.rng, s.P, 1)}`)
}

/** The newer session that asked for an incident with "recall <X>" several times and got tool results. */
function echoSession(s, inc) {
  for (let k = 0; k < 3; k++) {
    s.user(`recall ${inc.echo}`)
    s.assistant(null, [{ name: 'memory_recall', arguments: { query: inc.echo } }])
    s.result(JSON.stringify({ total: 1 + k, hits: [{ kind: 'entry', tier: 'cold', role: 'user', score: 7.4 - k, snippet: inc.prompt.slice(0, 200) }], next: null, coverage: { complete: true } }))
    s.assistant(s.rng.pick(['Found it in an earlier session.', 'That is in an older session; the details are there.', 'There is one match in an older session.']))
  }
}

// ---------------------------------------------------------------------------------------------------
// The set
// ---------------------------------------------------------------------------------------------------

/** Identifier words: `PART_UPLOAD_TIMEOUT_MS` → part upload timeout ms; `socketIdleTimeout` → socket idle timeout. */
const subwords = (ident) => ident.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[\s_]+/).filter(Boolean)

/** @returns {import('./pi-session.mjs').QualitySet & { typeOrder: string[] }} */
export function generateCodingSet({ seed = 1 } = {}) {
  const rng = new Rng(hash32('quality-coding', seed))
  /** @type {{ key: string, P: any, build: (s: Script) => void, after?: string }[]} */
  const plans = []
  const plan = (key, project, build, after) => plans.push({ key, P: projectOf(project), build, after })
  for (const inc of INCIDENTS) plan(`incident/${inc.id}`, inc.project, (s) => {
    incidentSession(s, inc)
    if (s.rng.chance(0.5)) chore(s)
  })
  for (const ne of NON_ENGLISH) plan(`non-english/${ne.id}`, ne.project, (s) => nonEnglishSession(s, ne))
  for (const L of LONG_LOGS) plan(`long-log/${L.id}`, L.project, (s) => {
    if (s.rng.chance(0.5)) chore(s)
    longLogSession(s, L)
    if (s.rng.chance(0.3)) chore(s)
  })
  for (const P of PROJECTS) for (let i = 0; i < FILLERS_PER_PROJECT; i++) plan(`filler/${P.key}/${i}`, P.key, (s) => {
    for (let k = s.rng.weighted([1, 2, 3], [5, 4, 1]); k > 0; k--) chore(s)
  })
  for (const inc of INCIDENTS.filter((i) => i.echo)) plan(`echo/${inc.id}`, inc.project, (s) => {
    echoSession(s, inc)
    if (s.rng.chance(0.4)) chore(s)
  }, `incident/${inc.id}`)

  // Timeline: a seeded order, each echo session somewhere after the session it asks for; then back to back,
  // one to twenty hours apart.
  const order = rng.shuffle(plans.filter((p) => !p.after))
  for (const p of plans.filter((q) => q.after)) {
    const after = order.findIndex((q) => q.key === p.after)
    order.splice(rng.range(after + 1, order.length), 0, p)
  }
  /** @type {import('./pi-session.mjs').SessionSpec[]} */
  const sessions = []
  let start = FIRST_START
  for (const p of order) {
    const s = new Script(new Rng(hash32('quality-coding-session', seed, p.key)), p.P)
    p.build(s)
    sessions.push({ key: p.key, cwd: p.P.cwd, startMs: start, turns: s.turns.map(({ at, ...turn }) => ({ ...turn, ms: start + at })) })
    start += s.at + rng.range(1, 20) * 60 * MINUTE
  }
  return { name: 'coding', sessions, questions: questions(sessions), typeOrder: TYPE_ORDER }
}

/** The questions, each labelled by construction, with the checks that keep the labels honest. */
function questions(/** @type {import('./pi-session.mjs').SessionSpec[]} */ sessions) {
  const byKey = new Map(sessions.map((s) => [s.key, s]))
  const cwdOf = (project) => projectOf(project).cwd
  // What each session says (assistant prose and its edits) and holds (everything the engine indexes).
  const facts = new Map(
    sessions.map((s) => {
      const calls = s.turns.flatMap((t) => (t.role === 'assistant' ? t.calls ?? [] : []))
      const edits = calls.filter((c) => c.name === 'edit' || c.name === 'write')
      const userText = s.turns.filter((t) => t.role === 'user').map((t) => ('text' in t && t.text) || '').join('\n')
      const said = [...s.turns.filter((t) => t.role === 'assistant' && t.text).map((t) => t.text), ...edits.map((c) => JSON.stringify(c.arguments))].join('\n')
      // Tool results of memory_recall are not evidence (the engine does not index them either).
      const results = []
      let pending = []
      for (const t of s.turns) {
        if (t.role === 'assistant') pending = [...(t.calls ?? [])]
        if (t.role === 'toolResult' && pending.shift()?.name !== 'memory_recall') results.push(t.text)
      }
      const held = [...s.turns.filter((t) => t.role !== 'toolResult').map((t) => ('text' in t && t.text) || ''), ...calls.map((c) => JSON.stringify(c.arguments)), ...results].join('\n')
      // Files it worked with: the engine's `filesTouched` (tool arguments), and any its user asked about by name.
      const touched = (path) => calls.some((c) => c.arguments.path === path) || userText.includes(path)
      return [s.key, { saidTokens: new Set(tokenize(said)), held, touched }]
    }),
  )
  const where = (test) => sessions.filter((s) => test(facts.get(s.key), s)).map((s) => s.key)
  const workedOn = (ident) => where((f) => f.saidTokens.has(ident.toLowerCase()))
  const check = (ok, what) => {
    if (!ok) throw new Error(`coding set label check failed: ${what}`)
  }

  const out = []
  const ask = (id, type, query, project, answers) => {
    check(answers.length > 0, `${id} has no answer`)
    out.push({ id, query, cwd: cwdOf(project), type, answers })
  }
  for (const inc of INCIDENTS) {
    const key = `incident/${inc.id}`
    ask(`${inc.id}/topic`, 'topic', inc.topic, inc.project, [key])
    const identAnswers = workedOn(inc.ident)
    check(identAnswers.includes(key), `${inc.id}: its session does not name ${inc.ident}`)
    ask(`${inc.id}/identifier`, 'identifier', inc.ident, inc.project, identAnswers)
    const part = inc.identPart.split(' ')
    const partAnswers = [...new Set(INCIDENTS.filter((i) => part.every((w) => subwords(i.ident).includes(w))).flatMap((i) => workedOn(i.ident)))]
    check(part.every((w) => subwords(inc.ident).includes(w)), `${inc.id}: "${inc.identPart}" is not part of ${inc.ident}`)
    ask(`${inc.id}/identifier-part`, 'identifier-part', inc.identPart, inc.project, partAnswers)
    // Its first line: test runners indent or prefix the lines after it.
    const errorAt = where((f) => f.held.includes(inc.error.split('\n')[0]))
    check(errorAt.length === 1 && errorAt[0] === key, `${inc.id}: its error text occurs in ${errorAt.join(', ')}`)
    ask(`${inc.id}/error`, 'error', inc.errorQuery, inc.project, [key])
    ask(`${inc.id}/path`, 'path', inc.file, inc.project, where((f) => f.touched(inc.file)))
    if (inc.echo) {
      check(sessions.findIndex((s) => s.key === `echo/${inc.id}`) > sessions.findIndex((s) => s.key === key), `${inc.id}: echo session is not newer`)
      ask(`${inc.id}/echo`, 'echo', inc.echo, inc.project, [key])
    }
  }
  for (const ne of NON_ENGLISH) {
    const key = `non-english/${ne.id}`
    const holders = where((f) => ne.query.split(' ').every((w) => f.held.toLowerCase().includes(w.toLowerCase())))
    check(holders.length === 1 && holders[0] === key, `${ne.id}: "${ne.query}" is held by ${holders.join(', ')}`)
    ask(ne.id, 'non-english', ne.query, ne.project, [key])
  }
  for (const L of LONG_LOGS) {
    const key = `long-log/${L.id}`
    const holders = where((f) => tokenize(f.held).includes(L.needle.toLowerCase()))
    check(holders.length === 1 && holders[0] === key, `${L.id}: ${L.needle} is held by ${holders.join(', ')}`)
    // Past the first 2,000 characters of its entry, and only once.
    const entry = byKey.get(key).turns.find((t) => 'text' in t && t.text?.includes(L.needle))
    check(entry.text.indexOf(L.needle) > 2000 && entry.text.indexOf(L.needle) === entry.text.lastIndexOf(L.needle), `${L.id}: needle placement`)
    ask(L.id, 'long-entry', L.needle, L.project, [key])
  }
  return out
}
