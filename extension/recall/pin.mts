/**
 * A `pin`: one short string that carries what a follow or continuation call
 * is bound to (which session, its source prefix and lineage), so the page the
 * model reads states a hit's binding in ~60 characters instead of a session
 * path and two 64-digit hashes (~250).
 *
 * `<session>~<bytes>~<hash>~<fingerprint>~<leaf>[~all]`: the session by its
 * id (a 13-character prefix of a UUID: the addon resolves a unique prefix),
 * the bound byte length, the first 16 hex digits of the source hash and of
 * the lineage fingerprint (the addon accepts prefixes of 16+ digits: a chance
 * match is 2^-64), the bound leaf id, and `all` in all-branches mode. Parts
 * holding `~` or `%` are percent-encoded. Nothing is lost but hash digits: a
 * rewritten or re-branched session is still `stale_pointer`.
 */
import { MemoryArgumentError } from '../shared/errors.mjs'

/** The binding keys a pin replaces (besides the session and `branches`). */
const BOUND = ['expectedSourceBytes', 'expectedSourceHash', 'expectedLineageFingerprint', 'expectedLineageLeafId'] as const

/** Hex digits of each hash a pin keeps. */
export const PIN_HASH_DIGITS = 16

/** Session ids longer than this are named by their prefix (what the CLI shows). */
const ID_PREFIX = 13

/** Where a call names its session: expand's `session`, recall's `scope: "session:<…>"`. */
export type PinSlot = 'session' | 'scope'

/** The slot of each tool whose calls take a pin. */
export const PIN_SLOT: Readonly<Record<string, PinSlot>> = { memory_expand: 'session', memory_recall: 'scope' }

type Args = Record<string, unknown>

// encodeURIComponent leaves `~` as it is (an unreserved character), so the two are escaped by hand.
const encode = (part: string) => part.replace(/%/g, '%25').replace(/~/g, '%7E')
const isHash = (value: unknown): value is string => typeof value === 'string' && /^[0-9a-f]{64}$/.test(value)

/** The session a call names, without the `session:` of a scope. */
function sessionOf(args: Args, slot: PinSlot): string | undefined {
  const named = args[slot]
  if (typeof named !== 'string') return undefined
  if (slot === 'session') return named
  return named.startsWith('session:') ? named.slice('session:'.length) : undefined
}

/**
 * `args` with its session and binding folded into `pin`, or `args`
 * unchanged when it is not a bound call (nothing to fold) or names its
 * session in a way a pin cannot (no id). `sessionId` is the header id of the
 * session the call names.
 */
export function pinned(args: Args, slot: PinSlot, sessionId: string | null | undefined): Args {
  const session = sessionOf(args, slot)
  if (!session || !sessionId || !isHash(args.expectedSourceHash) || !isHash(args.expectedLineageFingerprint)) return args
  const bytes = args.expectedSourceBytes
  if (bytes !== undefined && !Number.isSafeInteger(bytes)) return args
  const leaf = typeof args.expectedLineageLeafId === 'string' ? args.expectedLineageLeafId : ''
  const ref = sessionId.length > ID_PREFIX ? sessionId.slice(0, ID_PREFIX) : sessionId
  const parts = [
    encode(ref),
    bytes === undefined ? '' : String(bytes),
    args.expectedSourceHash.slice(0, PIN_HASH_DIGITS),
    args.expectedLineageFingerprint.slice(0, PIN_HASH_DIGITS),
    encode(leaf),
    ...(args.branches === 'all' ? ['all'] : []),
  ]
  const rest: Args = {}
  for (const [key, value] of Object.entries(args)) {
    if (key === slot || key === 'branches' || (BOUND as readonly string[]).includes(key)) continue
    rest[key] = value
  }
  return { pin: parts.join('~'), ...rest }
}

/**
 * The addon's arguments for a call that may carry a `pin`: the pin
 * unfolded into the session slot and binding keys. A malformed pin, or a
 * pin beside the keys it stands for, rejects with `invalid_argument`.
 */
export function unpinned<T extends object>(args: T, slot: PinSlot, call: string): T {
  const { pin, ...rest } = args as Args
  if (pin === undefined) return args
  const clash = [slot, 'branches', ...BOUND].filter((key) => key in rest)
  if (typeof pin !== 'string' || clash.length) {
    throw new MemoryArgumentError(
      typeof pin !== 'string' ? `${call}: pin must be a string` : `${call}: pin already states ${clash.join(', ')}`,
    )
  }
  const parts = pin.split('~')
  const [ref, bytes, hash, fingerprint, leaf, mode] = parts
  const valid =
    (parts.length === 5 || (parts.length === 6 && mode === 'all')) &&
    ref !== '' &&
    /^\d*$/.test(bytes) &&
    /^[0-9a-f]{16,64}$/.test(hash) &&
    /^[0-9a-f]{16,64}$/.test(fingerprint)
  const malformed = () => new MemoryArgumentError(`${call}: malformed pin ${JSON.stringify(pin)} (pass a hit's pin unchanged)`)
  if (!valid) throw malformed()
  const decoded = (part: string) => {
    try {
      return decodeURIComponent(part)
    } catch {
      throw malformed()
    }
  }
  const session = decoded(ref)
  return {
    ...rest,
    [slot]: slot === 'scope' ? `session:${session}` : session,
    branches: mode === 'all' ? 'all' : 'active',
    ...(bytes === '' ? {} : { expectedSourceBytes: Number(bytes) }),
    expectedSourceHash: hash,
    expectedLineageFingerprint: fingerprint,
    ...(leaf === '' ? {} : { expectedLineageLeafId: decoded(leaf) }),
  } as T
}
