// What stands around every tool call: the error type, signed cursors, the token-bucket rate
// limiter and the idempotency store.

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ERROR_CODES } from './catalogue.js';

export class ToolError extends Error {
  constructor(
    readonly code: keyof typeof ERROR_CODES,
    message: string,
    readonly extra: { retry_after_ms?: number; required_scope?: string } = {},
  ) {
    super(message);
  }
}

/** Canonical JSON: object keys sorted, so argument order never matters. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj).sort().map((k) => `${JSON.stringify(k)}:${canonical(obj[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

// ---------------------------------------------------------------------------------------------
// Cursors: base64url(payload) "." base64url(HMAC(binding, payload)). The binding (tool, filters,
// OAuth client, user) is not in the cursor, only in the MAC: reused anywhere else, it fails.

export type Key = [string, string];

export class Cursors {
  private readonly secret = randomBytes(32);

  private mac(binding: string, payload: string): string {
    return createHmac('sha256', this.secret).update(binding).update('\n').update(payload).digest('base64url');
  }

  sign(binding: string, key: Key): string {
    const payload = Buffer.from(JSON.stringify({ v: 1, k: key })).toString('base64url');
    return `${payload}.${this.mac(binding, payload)}`;
  }

  /** The position a cursor stands for, or MCP_CURSOR_INVALID. */
  open(binding: string, cursor: string): Key {
    const invalid = new ToolError('MCP_CURSOR_INVALID', 'This cursor does not belong to this call; start again without one.');
    const dot = cursor.indexOf('.');
    if (dot <= 0) throw invalid;
    const payload = cursor.slice(0, dot);
    const expected = Buffer.from(this.mac(binding, payload));
    const given = Buffer.from(cursor.slice(dot + 1));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid;
    try {
      const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { v: number; k: unknown };
      const k = parsed.k;
      if (parsed.v === 1 && Array.isArray(k) && k.length === 2 && k.every((x) => typeof x === 'string')) {
        return k as Key;
      }
    } catch {
      // fall through
    }
    throw invalid;
  }
}

// ---------------------------------------------------------------------------------------------
// Rate limits: one token bucket per (OAuth client, user, tool), holding `capacity` tokens and
// refilled continuously at `capacity` per 60 s. Every call takes a token, whatever its outcome.

const MINUTE_MS = 60_000;

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  /** 0 when the call may go on, else how many ms until one token is back. */
  take(key: string, capacity: number, now = Date.now()): number {
    const perMs = capacity / MINUTE_MS;
    const bucket = this.buckets.get(key) ?? { tokens: capacity, at: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs));
  }

  /** Forget buckets that are full again (they behave exactly as absent ones). */
  sweep(now = Date.now()): void {
    for (const [key, b] of this.buckets) {
      if (now - b.at >= MINUTE_MS) this.buckets.delete(key);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Idempotency: keyed by HMAC(client, user, tool, key), never the raw key. Only successes are
// kept, for 24 h; a call still running makes the same key answer MCP_OPERATION_IN_PROGRESS.

const RETENTION_MS = 24 * 3_600_000;
const IN_PROGRESS_RETRY_MS = 250;

interface Entry { fingerprint: string; data?: unknown; expires: number; running: boolean }

export type Claim = { replay: unknown } | { slot: string; fingerprint: string };

export class IdempotencyStore {
  private readonly secret = randomBytes(32);
  private readonly entries = new Map<string, Entry>();

  /** Replay, refusal, or a slot to run the call in (then `done` or `release`). */
  claim(client: string, user: string, tool: string, key: string, args: Record<string, unknown>, now = Date.now()): Claim {
    const slot = createHmac('sha256', this.secret).update(JSON.stringify([client, user, tool, key])).digest('hex');
    const rest = { ...args };
    delete rest.idempotency_key;
    const fingerprint = createHash('sha256').update(canonical(rest)).digest('hex');
    const entry = this.entries.get(slot);
    if (entry && !entry.running && entry.expires <= now) this.entries.delete(slot);
    const live = this.entries.get(slot);
    if (!live) {
      this.entries.set(slot, { fingerprint, running: true, expires: Number.POSITIVE_INFINITY });
      return { slot, fingerprint };
    }
    if (live.fingerprint !== fingerprint) {
      throw new ToolError('MCP_IDEMPOTENCY_MISMATCH', 'This idempotency key went with other arguments; use a new key for a new effect.');
    }
    if (live.running) {
      throw new ToolError('MCP_OPERATION_IN_PROGRESS', 'A call with this idempotency key is still running; retry shortly.', {
        retry_after_ms: IN_PROGRESS_RETRY_MS,
      });
    }
    return { replay: live.data };
  }

  done(slot: string, fingerprint: string, data: unknown, now = Date.now()): void {
    this.entries.set(slot, { fingerprint, data, running: false, expires: now + RETENTION_MS });
  }

  release(slot: string): void {
    if (this.entries.get(slot)?.running) this.entries.delete(slot);
  }

  sweep(now = Date.now()): void {
    for (const [slot, e] of this.entries) if (!e.running && e.expires <= now) this.entries.delete(slot);
  }
}
