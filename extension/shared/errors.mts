/**
 * Programmer errors from the addon arrive as `Error` with napi's status code
 * (`InvalidArg`). The shim re-throws them as `TypeError`s carrying the stable
 * code `invalid_argument`, so callers can rely on `err.code`.
 */
export class MemoryArgumentError extends TypeError {
  readonly code = 'invalid_argument'
}

export class MemoryUnsupportedError extends Error {
  readonly code = 'unsupported_call'
}

export function normalizeError(error: unknown): unknown {
  if (error instanceof Error && (error as { code?: unknown }).code === 'InvalidArg') {
    return new MemoryArgumentError(error.message)
  }
  return error
}

/** Runs `call`, turning synchronous throws into rejections with stable codes. */
export async function guarded<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    throw normalizeError(error)
  }
}
