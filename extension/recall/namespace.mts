/**
 * The Pi tool namespace `memory` shared by the nine memory tools. Codemode
 * lists them under one heading with `description`; scripts read
 * `instructions` with `describeNamespace("memory")`, including a guest-local
 * `walk` (the contract's `memory.walk`): it runs inside the script, so no
 * callback crosses into the host.
 */

/** `walk(args, visit)` and `walkSession(session, visit)` as a codemode script defines them. */
export const WALK_SOURCE = `async function walk(args, visit) {
  let page = await tools.memory_expand(args)
  let open = null
  let visited = 0
  const broken = (code, message) => ({ visited, stopped: false, error: { code, message } })
  for (;;) {
    if (page.error) return { visited, stopped: false, error: page.error }
    for (const chunk of page.entries) {
      if (open ? chunk.index !== open.index || chunk.textRange.start !== open.text.length : chunk.textRange.start !== 0) {
        return broken('walk_discontinuity', 'entry ' + chunk.index + ' continued at offset ' + chunk.textRange.start)
      }
      open = open ? { ...open, text: open.text + chunk.text, textRange: { ...chunk.textRange, start: 0 } } : chunk
      if (!chunk.textRange.complete) continue
      const entry = open
      open = null
      visited += 1
      if ((await visit(entry)) === false) return { visited, stopped: true }
    }
    if (!page.next) break
    page = await tools[page.next.tool](page.next.args)
  }
  return open ? broken('walk_incomplete', 'the last entry ended before its text was complete') : { visited, stopped: false }
}
async function walkSession(session, visit, branches = 'active') {
  const bound = await tools.memory_expand({ session, branches })
  if (bound.error) return { visited: 0, stopped: false, error: bound.error }
  if (!bound.entryCount) return { visited: 0, stopped: false }
  return walk({
    session: bound.session, branches: bound.branches, entryRange: { first: 0, last: bound.entryCount - 1 },
    expectedSourceHash: bound.sourceHash, expectedLineageFingerprint: bound.lineageFingerprint,
  }, visit)
}`

const INSTRUCTIONS = [
  'In scripts every memory tool resolves to an object: the same page the model reads as JSON.',
  'Follow a hit: `const page = await tools[hit.follow.tool](hit.follow.args)` (entry hits go to memory_expand, cold ' +
    'session hits to memory_recall on that session). Pass `args` unchanged: they carry the bindings that prove the ' +
    'entry is still what was found.',
  'Page: while `page.next` is not null, `page = await tools[page.next.tool](page.next.args)`.',
  'Contract errors are data, not exceptions: a page with `error: {code, message}` (stale_pointer, session_not_found, ' +
    'ambiguous_session with candidates, address_not_found, index_out_of_bounds, …) resolves; branch on `error.code`. ' +
    'stale_pointer means the session changed since the call was made: recall again. Malformed arguments reject.',
  'An empty recall proves absence only when `coverage.complete` is true.',
  'To answer "what do we know about X" in one call: `const pack = await tools.memory_pack({ query, maxTokens })`; ' +
    '`pack.sessions[i].evidence[j]` is a cited excerpt (`verified`, `follow` expands exactly its text).',
  'Long entries arrive in `textRange` chunks (UTF-16 offsets). Paste these two functions to get whole entries: ' +
    '`walk(args, visit)` starts from any memory_expand args (e.g. `hit.follow.args`), `walkSession(id, visit)` reads ' +
    'a whole session pinned to its source hash; `visit(entry)` returning false stops.',
  WALK_SOURCE,
  'Example: `let text; await walk(hit.follow.args, (e) => { if (e.index === hit.index) text = e.text })`.',
].join('\n\n')

/** The namespace object every memory tool carries (Pi ≥ 1.x reads it; 0.80 ignores it). */
export const MEMORY_NAMESPACE = {
  name: 'memory',
  description:
    "The user's Pi session history (memory_recall → follow → memory_expand, memory_sessions; memory_pack: cited evidence " +
    'about a query in one call) and curated notes ' +
    '(memory_read/add/replace/remove on MEMORY.md and USER.md). `await describeNamespace("memory")` has the follow, ' +
    'paging and walk recipes.',
  instructions: INSTRUCTIONS,
} as const
