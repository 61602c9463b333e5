// What the baseline reads and how it splits it: one document per session, tokenized like the engine.

/**
 * The engine's canonical tokenizer (src/tokenize.rs): NFKC, maximal runs of letters, numbers and `_`, lowercased.
 * One function, so a candidate tokenizer (identifier splitting, CJK bigrams, …) can be tried in the baseline alone.
 * @param {string} text
 * @returns {string[]}
 */
export function tokenize(text) {
  return text.normalize('NFKC').match(/[\p{L}\p{N}_]+/gu)?.map((t) => t.toLowerCase()) ?? []
}

/** This package's own tools: the engine leaves their results out of the index (README, "No self-echo"). */
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
