/**
 * What the tools' renderers get from Pi's TUI, as far as they use it: the
 * running Pi's `Text` component (passed in by the package's Pi entry), its
 * theme, the render context and options, and a result's text.
 */
import { oneLine } from '../present/text.mjs'

/** The part of `@earendil-works/pi-tui` the renderers use. */
export interface TuiModule {
  Text: new (text: string, paddingX: number, paddingY: number) => { render(width: number): string[] }
}

/** The part of Pi's theme the renderers use. */
export interface Theme {
  fg(color: 'toolTitle' | 'muted' | 'dim' | 'accent' | 'error' | 'warning' | 'success' | 'text', text: string): string
  bold(text: string): string
}

/** The part of Pi's render context the renderers use (the call's arguments and the session's cwd). */
export interface RenderContext {
  args?: unknown
  cwd?: string
}

/** A tool result as `renderResult` gets it, and the options it is drawn with. */
export interface ToolResultView {
  content?: unknown
  details?: unknown
}
export interface RenderOptions {
  expanded?: boolean
  isPartial?: boolean
}

/** The text blocks of a tool result, joined (an update's line, a thrown error's message). */
export const resultText = (result: ToolResultView) =>
  (Array.isArray(result.content) ? result.content : []).map((block: { type?: string; text?: string }) => (block?.type === 'text' ? block.text : '')).join('')

/** A string argument quoted and cut to one line, after a space; nothing for another value. */
export const quoted = (value: unknown, max = 60) => (typeof value === 'string' && value ? ` "${oneLine(value, max)}"` : '')
