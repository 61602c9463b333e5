/**
 * A `pin`: one short string that carries what a follow or continuation call
 * is bound to (which session, its source prefix and lineage), so the page the
 * model reads states a hit's binding in ~60 characters instead of a session
 * path and two 64-digit hashes (~250).
 *
 * `<session>~<bytes>~<hash>~<fingerprint>~<leaf>[~all]`: the session by its
 * id (a 13-character prefix of a UUID: the addon resolves a unique prefix),
 * the bound byte length, the first 16 hex digits of the source hash and of
 * the lineage fingerprint, the bound leaf id, and `all` in all-branches mode.
 * The addon owns the format (`src/session/binding/pin.rs`): `memory.recall`
 * and `memory.expand` take a `pin` argument, `memory.pack` emits pinned
 * follow calls, and this module folds the model view's calls through it.
 */
import { pinCall, unpinCall } from '../native.mjs'
import { normalizeError } from '../shared/errors.mjs'

/** Hex digits of each hash a pin keeps. */
export const PIN_HASH_DIGITS = 16

/** Where a call names its session: expand's `session`, recall's `scope: "session:<…>"`. */
export type PinSlot = 'session' | 'scope'

/** The slot of each tool whose calls take a pin. */
export const PIN_SLOT: Readonly<Record<string, PinSlot>> = { memory_expand: 'session', memory_recall: 'scope' }

type Args = Record<string, unknown>

/**
 * `args` with its session and binding folded into `pin`, or `args`
 * unchanged when it is not a bound call (nothing to fold) or names its
 * session in a way a pin cannot (no id). `sessionId` is the header id of the
 * session the call names.
 */
export function pinned(args: Args, slot: PinSlot, sessionId: string | null | undefined): Args {
  return pinCall(args, slot, sessionId)
}

/**
 * The addon's arguments for a call that may carry a `pin`: the pin
 * unfolded into the session slot and binding keys. A malformed pin, or a
 * pin beside the keys it stands for, throws `invalid_argument`.
 */
export function unpinned<T extends object>(args: T, slot: PinSlot, call: string): T {
  try {
    return unpinCall(args as Args, slot, call) as T
  } catch (error) {
    throw normalizeError(error)
  }
}
