// What the baseline reads and how it splits it: one document per session, tokenized like the engine.

const WORD = /[\p{L}\p{M}\p{N}_\u200c\u200d]+/gu
// Scripts written without spaces, indexed by character bigrams (src/tokenize.rs `is_gram_char`).
const GRAM = /[\u0E00-\u0EFF\u1000-\u109F\u1100-\u11FF\u1780-\u17FF\u3005-\u3007\u3040-\u30FF\u3130-\u318F\u31F0-\u31FF\u3400-\u4DBF\u4E00-\u9FFF\uA960-\uA97F\uAC00-\uD7FF\uF900-\uFAFF\u{20000}-\u{3FFFF}]/u
const ATTACHED = /[\p{M}\u200c\u200d]/u
const BOUNDARY = /(?<=[\p{Ll}\p{Lo}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/u
const DIGIT_BOUNDARY = /(?<=\p{L})(?=\p{N})|(?<=\p{N})(?=\p{L})/u

/** Characters with their marks, as units of a bigram. */
const units = (run) => run.match(/.[\p{M}\u200c\u200d]*/gsu) ?? []

/** A word's identifier parts (src/tokenize.rs `IdentifierParts`), when it has more than itself. */
function identifierParts(word) {
  const digitChanges = (word.replace(/_/g, '').match(/\p{L}(?=\p{N})|\p{N}(?=\p{L})/gu) ?? []).length
  const parts = word
    .split('_')
    .filter(Boolean)
    .flatMap((piece) => piece.split(BOUNDARY))
    .flatMap((piece) => (digitChanges <= 2 ? piece.split(DIGIT_BOUNDARY) : [piece]))
    .filter(Boolean)
  return parts.length > 1 || (parts.length === 1 && parts[0] !== word) ? parts : []
}

/**
 * The engine's canonical tokenizer (src/tokenize.rs), approximated for the baseline: NFKC, words of letters, marks,
 * numbers and `_`, lowercased; unspaced scripts as character bigrams; for documents also each identifier's parts
 * (camelCase, snake_case, letter/digit), which a query asks for as its words only. One function, so a candidate
 * tokenizer can be tried in the baseline alone.
 * @param {string} text
 * @param {'document' | 'query'} [side]
 * @returns {string[]}
 */
export function tokenize(text, side = 'document') {
  const out = []
  for (const word of text.normalize('NFKC').match(WORD) ?? []) {
    const segments = word.split(/(?=[^\p{M}\u200c\u200d])/u).reduce((acc, unit) => {
      const gram = GRAM.test(unit)
      const last = acc[acc.length - 1]
      if (last && (last.gram === gram || ATTACHED.test(unit))) last.text += unit
      else acc.push({ gram, text: unit })
      return acc
    }, /** @type {{ gram: boolean, text: string }[]} */ ([]))
    if (!segments.some((s) => s.gram)) {
      out.push(word.toLowerCase())
      if (side === 'document') out.push(...identifierParts(word).map((p) => p.toLowerCase()))
      continue
    }
    if (segments.length > 1) out.push(word.toLowerCase())
    for (const segment of segments) {
      if (!segment.gram) {
        if (side === 'document') out.push(segment.text.toLowerCase(), ...identifierParts(segment.text).map((p) => p.toLowerCase()))
        continue
      }
      const u = units(segment.text)
      if (u.length === 1) out.push(u[0])
      for (let i = 0; i + 1 < u.length; i++) out.push(u[i] + u[i + 1])
    }
  }
  return out
}

/** This package's own tools: the engine leaves their results out of the index (docs/api.md, "No self-echo"). */
const MEMORY_TOOLS = new Set(['memory_recall', 'memory_expand', 'memory_sessions', 'memory_read', 'memory_add', 'memory_replace', 'memory_remove'])

const textOf = (content) => (typeof content === 'string' ? content : content.filter((b) => b.type === 'text').map((b) => b.text).join('\n'))

/**
 * The text of one Pi message as the engine indexes it (src/session/normalize.rs): user text; assistant text and
 * `Tool: name(<arguments JSON>)` per call; `toolResult(name)[ [error]]: <text>`, without the text of the package's
 * own tools. Unlike the engine's hot tier, nothing is cut at `maxEntryChars`: the baseline sees whole entries.
 */
export function messageText(/** @type {Record<string, any>} */ message) {
  switch (message.role) {
    case 'user':
      return textOf(message.content)
    case 'assistant':
      return message.content
        .map((b) => (b.type === 'text' ? b.text : b.type === 'toolCall' ? `Tool: ${b.name}(${JSON.stringify(b.arguments)})` : ''))
        .filter(Boolean)
        .join('\n')
    case 'toolResult': {
      const prefix = `toolResult(${message.toolName})${message.isError ? ' [error]' : ''}`
      return MEMORY_TOOLS.has(message.toolName) ? prefix : `${prefix}: ${textOf(message.content)}`
    }
    default:
      return ''
  }
}

/** A session's document: its messages' indexed text, one after another. */
export const sessionText = (/** @type {Record<string, any>[]} */ messages) => messages.map(messageText).join('\n')
