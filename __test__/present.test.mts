// The text shapes the CLI, Pi's TUI, `/memory` and the model's view share
// (extension/present/): one function each, so the four readers cannot drift.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { plural } from '../extension/present/text.mjs'

test('plural: one rule for every count word the CLI, the TUI and /memory print', () => {
  assert.equal(plural(1, 'entry'), '1 entry')
  assert.equal(plural(0, 'entry'), '0 entries')
  assert.equal(plural(2, 'session entry'), '2 session entries')
  assert.equal(plural(3, 'session'), '3 sessions')
  assert.equal(plural(2, 'temp file'), '2 temp files')
  // A vowel before the y is a plain s (the TUI's copy made these "keies", "daies").
  assert.equal(plural(2, 'key'), '2 keys')
  assert.equal(plural(2, 'day'), '2 days')
  assert.equal(plural(2, 'child', 'children'), '2 children')
})
