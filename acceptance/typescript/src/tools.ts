// The tool pipeline (rate limit → arguments → scope → membership → role → idempotency →
// preconditions → effect) and the seventeen handlers over the in-memory store.

import { randomBytes } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import {
  DEFAULT_LIMIT, DEFAULT_MESSAGES, ERROR_CODES, LIFECYCLE, MAX_LIMIT, TOOLS, type ToolDef,
} from './catalogue.js';
import { Cursors, IdempotencyStore, type Key, RateLimiter, ToolError } from './guards.js';
import {
  cmp, type Conversation, type Instruction, type Message, nowTimestamp, type Order, type Restaurant, type Role,
  ROLE_RANK, type Store, type Transcript,
} from './store.js';

export interface Principal { clientId: string; userId: string; scopes: string[] }

export interface CallOutcome {
  result: { content: { type: 'text'; text: string }[]; structuredContent: Record<string, unknown>; isError?: boolean };
  /** What the log line says: "ok" or the error code. */
  outcome: string;
  requestId: string;
}

const MAX_TEXT_BYTES = 4 * 1024;
const MAX_STRUCTURED_BYTES = 128 * 1024;
const DEADLINE_MS: Record<ToolDef['kind'], number> = { read: 15_000, analytics: 30_000, write: 20_000, keyed: 20_000 };
const RATE: Record<ToolDef['kind'], number> = { read: 1000, analytics: 1000, write: 500, keyed: 500 };

const NO_ACCESS = 'You have no access to this restaurant or organization.';
const ROLE_TOO_LOW = 'Your role here does not allow this tool.';
const NOT_FOUND = 'Nothing with this ID belongs to the restaurant asked.';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export function newRequestId(): string {
  const bytes = randomBytes(20);
  let out = 'req_';
  for (const b of bytes) out += BASE62[b % 62];
  return out;
}

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** Every string the caller sent, to make sure no error message repeats one (ENV-6). */
function sentStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => sentStrings(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => sentStrings(v, out));
  return out;
}

interface Page { data: Record<string, unknown>; next_cursor?: string; truncated: boolean; replayed?: boolean }

interface Ctx {
  tool: ToolDef;
  who: Principal;
  requestId: string;
}

export class Chataigne {
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly cursors = new Cursors();
  private readonly rates = new RateLimiter();
  private readonly keys = new IdempotencyStore();
  private readonly byName = new Map(TOOLS.map((t) => [t.name, t]));
  private readonly zones = new Set<string>([...Intl.supportedValuesOf('timeZone'), 'UTC']);

  constructor(private readonly store: Store) {
    const ajv = new Ajv2020({ allErrors: false, strict: true });
    for (const t of TOOLS) this.validators.set(t.name, ajv.compile(t.input));
    setInterval(() => { this.rates.sweep(); this.keys.sweep(); }, 60_000).unref();
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** One tools/call of a known tool. Never throws: every failure is an error envelope. */
  async call(name: string, rawArgs: unknown, who: Principal): Promise<CallOutcome> {
    const tool = this.byName.get(name)!;
    const requestId = newRequestId();
    const args = (rawArgs ?? {}) as Record<string, unknown>;
    try {
      const page = await this.run({ tool, who, requestId }, args);
      return this.success(tool, requestId, page);
    } catch (e) {
      const err = e instanceof ToolError ? e : new ToolError('MCP_INTERNAL_ERROR', 'Something went wrong on our side; retrying once is safe.');
      return this.failure(requestId, err, args);
    }
  }

  private async run(ctx: Ctx, args: Record<string, unknown>): Promise<Page> {
    const { tool, who } = ctx;
    const wait = this.rates.take(`${who.clientId}\n${who.userId}\n${tool.name}`, RATE[tool.kind]);
    if (wait > 0) {
      throw new ToolError('MCP_RATE_LIMITED', 'Too many calls of this tool in the last minute; retry after retry_after_ms.', { retry_after_ms: wait });
    }
    const validate = this.validators.get(tool.name)!;
    if (!validate(args)) {
      const e = validate.errors?.[0];
      const where = e?.instancePath ? `argument ${e.instancePath}` : 'arguments';
      throw new ToolError('INVALID_ARGUMENT', `Invalid ${where}: ${e?.message ?? 'does not fit the input schema'}.`);
    }
    if (!who.scopes.includes(tool.scope)) {
      throw new ToolError('MCP_SCOPE_REQUIRED', 'This token lacks the scope this tool needs (see required_scope).', { required_scope: tool.scope });
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(tool.kind === 'write' || tool.kind === 'keyed'
        ? new ToolError('MCP_OUTCOME_UNKNOWN', 'The change did not finish in time: it may or may not have taken effect; read the resource to know.')
        : new ToolError('MCP_TOOL_TIMEOUT', 'The tool did not finish in time; retrying is safe.')), DEADLINE_MS[tool.kind]);
    });
    try {
      return await Promise.race([this.handle(ctx, args), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private success(tool: ToolDef, requestId: string, page: Page): CallOutcome {
    const meta: Record<string, unknown> = { request_id: requestId };
    if (page.next_cursor) meta.next_cursor = page.next_cursor;
    meta.truncated = page.truncated;
    meta.replayed = page.replayed ?? false;
    const structuredContent = { data: page.data, meta };
    if (bytes(structuredContent) > MAX_STRUCTURED_BYTES) {
      return this.failure(requestId, new ToolError('MCP_OUTPUT_TOO_LARGE', 'The answer would exceed 128 KiB and cannot be cut into pages.'), {});
    }
    let text = summary(tool, page);
    while (Buffer.byteLength(text, 'utf8') > MAX_TEXT_BYTES) text = text.slice(0, text.length - 64);
    return { result: { content: [{ type: 'text', text }], structuredContent }, outcome: 'ok', requestId };
  }

  private failure(requestId: string, err: ToolError, args: unknown): CallOutcome {
    const fixed = ERROR_CODES[err.code];
    let message = err.message;
    // Our messages are fixed sentences; should one ever contain a value the caller sent, say less.
    if (sentStrings(args).some((s) => s.length > 0 && message.includes(s))) message = 'The call was not carried out.';
    const error: Record<string, unknown> = {
      code: err.code, category: fixed.category, retryable: fixed.retryable, message, request_id: requestId, ...err.extra,
    };
    return {
      result: {
        content: [{ type: 'text', text: `${err.code}: ${message}` }],
        structuredContent: { data: { error }, meta: { request_id: requestId } },
        isError: true,
      },
      outcome: err.code,
      requestId,
    };
  }

  // -------------------------------------------------------------------------------------------
  // Access: memberships are read now, at every call (and every page).

  private restaurant(ctx: Ctx, id: unknown): { restaurant: Restaurant; role: Role } {
    const restaurant = this.store.restaurants.get(id as string);
    const role = restaurant && this.store.roleInRestaurant(ctx.who.userId, restaurant);
    if (!restaurant || !role) throw new ToolError('MCP_RESOURCE_FORBIDDEN', NO_ACCESS);
    this.requireRole(ctx, role);
    return { restaurant, role };
  }

  private organization(ctx: Ctx, id: unknown): Role {
    const org = this.store.organizations.get(id as string);
    const role = org && this.store.roleInOrganization(ctx.who.userId, org.id);
    if (!role) throw new ToolError('MCP_RESOURCE_FORBIDDEN', NO_ACCESS);
    this.requireRole(ctx, role);
    return role;
  }

  private requireRole(ctx: Ctx, role: Role): void {
    if (ctx.tool.role && ROLE_RANK[role] < ROLE_RANK[ctx.tool.role]) throw new ToolError('MCP_RESOURCE_FORBIDDEN', ROLE_TOO_LOW);
  }

  // -------------------------------------------------------------------------------------------
  // Pages: keyset over (timestamp, id), in the list's order; a page too big for 128 KiB is cut
  // and its cursor continues right after its last item.

  private page<T>(
    ctx: Ctx, args: Record<string, unknown>, opts: {
      items: T[]; key: (t: T) => Key; desc: boolean; filters: unknown; limit: number; cursor?: unknown;
      build: (slice: T[]) => Record<string, unknown>;
    },
  ): Page {
    const order = (a: Key, b: Key) => (cmp(a[0], b[0]) || cmp(a[1], b[1])) * (opts.desc ? -1 : 1);
    const binding = JSON.stringify([ctx.tool.name, opts.filters, ctx.who.clientId, ctx.who.userId]);
    const sorted = [...opts.items].sort((a, b) => order(opts.key(a), opts.key(b)));
    let rest = sorted;
    if (opts.cursor !== undefined) {
      const after = this.cursors.open(binding, opts.cursor as string);
      rest = sorted.filter((t) => order(opts.key(t), after) > 0);
    }
    let n = Math.min(opts.limit, rest.length);
    const size = (k: number) => {
      const data = opts.build(rest.slice(0, k));
      return { data, bytes: bytes({ data, meta: { request_id: ctx.requestId, next_cursor: 'x'.repeat(200), truncated: true, replayed: false } }) };
    };
    let built = size(n);
    let truncated = false;
    if (built.bytes > MAX_STRUCTURED_BYTES) {
      let lo = 0;
      let hi = n; // size(lo) fits (or lo = 0), size(hi) does not
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if (size(mid).bytes <= MAX_STRUCTURED_BYTES) lo = mid; else hi = mid;
      }
      if (lo === 0) throw new ToolError('MCP_OUTPUT_TOO_LARGE', 'A single item of this page exceeds 128 KiB and cannot be returned.');
      n = lo;
      built = size(n);
      truncated = true;
    }
    const page: Page = { data: built.data, truncated };
    if (rest.length > n) page.next_cursor = this.cursors.sign(binding, opts.key(rest[n - 1]));
    return page;
  }

  // -------------------------------------------------------------------------------------------
  // Keyed writes: authorization has run; now replay, refuse, or run once and remember.

  private keyed(ctx: Ctx, args: Record<string, unknown>, effect: () => Record<string, unknown>): Page {
    const claim = this.keys.claim(ctx.who.clientId, ctx.who.userId, ctx.tool.name, args.idempotency_key as string, args);
    if ('replay' in claim) return { data: structuredClone(claim.replay) as Record<string, unknown>, truncated: false, replayed: true };
    try {
      const data = effect();
      this.keys.done(claim.slot, claim.fingerprint, structuredClone(data));
      return { data, truncated: false };
    } catch (e) {
      this.keys.release(claim.slot);
      throw e;
    }
  }

  // -------------------------------------------------------------------------------------------

  private async handle(ctx: Ctx, a: Record<string, unknown>): Promise<Page> {
    const s = this.store;
    const limit = Math.min((a.limit as number | undefined) ?? DEFAULT_LIMIT, MAX_LIMIT);
    const one = (data: Record<string, unknown>): Page => ({ data, truncated: false });
    switch (ctx.tool.name) {
      case 'list_organizations': {
        const roles = new Map<string, Role>();
        for (const m of s.activeMemberships(ctx.who.userId)) {
          const had = roles.get(m.organization_id);
          if (!had || ROLE_RANK[m.role] > ROLE_RANK[had]) roles.set(m.organization_id, m.role);
        }
        const orgs = [...roles.keys()].map((id) => s.organizations.get(id)!).filter(Boolean);
        return this.page(ctx, a, {
          items: orgs, key: (o) => [o.created_at, o.id], desc: false, filters: {}, limit, cursor: a.cursor,
          build: (slice) => ({ organizations: slice.map((o) => ({ id: o.id, name: o.name, role: roles.get(o.id), created_at: o.created_at })) }),
        });
      }
      case 'list_restaurants': {
        if (a.organization_id !== undefined) this.organization(ctx, a.organization_id);
        const items = [...s.restaurants.values()].filter((r) =>
          (a.organization_id === undefined || r.organization_id === a.organization_id)
          && (a.status === undefined || r.status === a.status)
          && s.roleInRestaurant(ctx.who.userId, r) !== undefined);
        return this.page(ctx, a, {
          items, key: (r) => [r.created_at, r.id], desc: false,
          filters: { organization_id: a.organization_id ?? null, status: a.status ?? null }, limit, cursor: a.cursor,
          build: (slice) => ({ restaurants: slice.map(restaurantView) }),
        });
      }
      case 'get_restaurant':
        return one({ restaurant: restaurantView(this.restaurant(ctx, a.restaurant_id).restaurant) });
      case 'list_orders': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        // A status given twice is the same filter as given once (the seed allows either reading).
        const statuses = a.status === undefined ? undefined : [...new Set(a.status as string[])];
        const items = [...s.orders.values()].filter((o) =>
          o.restaurant_id === restaurant.id
          && (!statuses || statuses.includes(o.status))
          && (a.channel === undefined || o.channel === a.channel)
          && (a.created_from === undefined || o.created_at >= (a.created_from as string))
          && (a.created_to === undefined || o.created_at <= (a.created_to as string)));
        const filters = {
          restaurant_id: restaurant.id, status: statuses ? [...statuses].sort() : null, channel: a.channel ?? null,
          created_from: a.created_from ?? null, created_to: a.created_to ?? null,
        };
        return this.page(ctx, a, {
          items, key: (o) => [o.created_at, o.id], desc: true, filters, limit, cursor: a.cursor,
          build: (slice) => ({ orders: slice.map(orderView) }),
        });
      }
      case 'get_order':
        return one({ order: orderView(this.order(ctx, a)) });
      case 'list_conversations': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        const items = [...s.conversations.values()].filter((c) =>
          c.restaurant_id === restaurant.id
          && (a.status === undefined || c.status === a.status)
          && (a.channel === undefined || c.channel === a.channel));
        return this.page(ctx, a, {
          items, key: (c) => [c.created_at, c.id], desc: true,
          filters: { restaurant_id: restaurant.id, status: a.status ?? null, channel: a.channel ?? null }, limit, cursor: a.cursor,
          build: (slice) => ({ conversations: slice.map((c) => this.conversationView(c)) }),
        });
      }
      case 'get_conversation': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        const c = s.conversations.get(a.conversation_id as string);
        if (!c || c.restaurant_id !== restaurant.id) throw new ToolError('MCP_RESOURCE_NOT_FOUND', NOT_FOUND);
        const view = this.conversationView(c);
        return this.page(ctx, a, {
          items: s.messages.get(c.id) ?? [], key: (m) => [m.sent_at, m.id], desc: true,
          filters: { restaurant_id: restaurant.id, conversation_id: c.id },
          limit: (a.message_limit as number | undefined) ?? DEFAULT_MESSAGES, cursor: a.cursor,
          build: (slice) => ({ conversation: view, messages: slice.map(messageView) }),
        });
      }
      case 'search_transcripts': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        const needle = (a.query as string).toLowerCase();
        const items = [...s.transcripts.values()].filter((t) => t.restaurant_id === restaurant.id && t.text.toLowerCase().includes(needle));
        return this.page(ctx, a, {
          items, key: (t) => [t.call_started_at, t.id], desc: true,
          filters: { restaurant_id: restaurant.id, query: a.query }, limit, cursor: a.cursor,
          build: (slice) => ({ transcripts: slice.map((t) => hit(t, needle)) }),
        });
      }
      case 'get_transcript': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        const t = s.transcripts.get(a.transcript_id as string);
        if (!t || t.restaurant_id !== restaurant.id) throw new ToolError('MCP_RESOURCE_NOT_FOUND', NOT_FOUND);
        return one({ transcript: transcriptView(t) });
      }
      case 'list_instructions': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        const items = [...s.instructions.values()].filter((i) => i.restaurant_id === restaurant.id);
        return this.page(ctx, a, {
          items, key: (i) => [i.created_at, i.id], desc: true, filters: { restaurant_id: restaurant.id }, limit, cursor: a.cursor,
          build: (slice) => ({ instructions: slice.map(instructionView) }),
        });
      }
      case 'get_analytics': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        return one(this.analytics(restaurant, a));
      }
      case 'update_order_status': {
        const order = this.order(ctx, a);
        if (order.status !== a.expected_status) {
          throw new ToolError('MCP_EXPECTED_STATE_MISMATCH', 'The current status is not expected_status; read it again before deciding.');
        }
        const from = LIFECYCLE.indexOf(order.status);
        if (from < 0 || LIFECYCLE[from + 1] !== a.status) {
          throw new ToolError('ORDER_STATUS_PRECONDITION_FAILED', 'The order lifecycle does not allow this move from the current status.');
        }
        order.status = a.status as string;
        order.updated_at = nowTimestamp();
        return one({ order: orderView(order) });
      }
      case 'set_restaurant_status': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        if (restaurant.status !== a.expected_status) {
          throw new ToolError('MCP_EXPECTED_STATE_MISMATCH', 'The current status is not expected_status; read it again before deciding.');
        }
        restaurant.status = a.status as string;
        return one({ restaurant: restaurantView(restaurant) });
      }
      case 'send_message': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        const c = s.conversations.get(a.conversation_id as string);
        if (!c || c.restaurant_id !== restaurant.id) throw new ToolError('MCP_RESOURCE_NOT_FOUND', NOT_FOUND);
        return this.keyed(ctx, a, () => {
          const m: Message = { id: s.newId('msg'), conversation_id: c.id, direction: 'outbound', text: a.text as string, sent_at: nowTimestamp() };
          s.messages.get(c.id)!.push(m);
          return { message: messageView(m) };
        });
      }
      case 'create_instruction': {
        const { restaurant } = this.restaurant(ctx, a.restaurant_id);
        return this.keyed(ctx, a, () => {
          const i: Instruction = { id: s.newId('ins'), restaurant_id: restaurant.id, text: a.text as string, created_by: ctx.who.userId, created_at: nowTimestamp() };
          s.instructions.set(i.id, i);
          return { instruction: instructionView(i) };
        });
      }
      case 'create_organization':
        return this.keyed(ctx, a, () => {
          const o = { id: s.newId('org'), name: a.name as string, created_at: nowTimestamp() };
          s.organizations.set(o.id, o);
          s.memberships.push({ user_id: ctx.who.userId, organization_id: o.id, role: 'owner', revoked: false });
          return { organization: { ...o, role: 'owner' } };
        });
      case 'create_restaurant': {
        this.organization(ctx, a.organization_id);
        if (!this.zones.has(a.timezone as string)) throw new ToolError('INVALID_ARGUMENT', 'Invalid argument /timezone: not a known IANA time zone.');
        return this.keyed(ctx, a, () => {
          const r: Restaurant = {
            id: s.newId('rst'), organization_id: a.organization_id as string, name: a.name as string, status: 'open',
            timezone: a.timezone as string, created_at: nowTimestamp(),
          };
          s.restaurants.set(r.id, r);
          return { restaurant: restaurantView(r) };
        });
      }
    }
    throw new ToolError('MCP_INTERNAL_ERROR', 'Something went wrong on our side; retrying once is safe.');
  }

  private order(ctx: Ctx, a: Record<string, unknown>): Order {
    const { restaurant } = this.restaurant(ctx, a.restaurant_id);
    const order = this.store.orders.get(a.order_id as string);
    if (!order || order.restaurant_id !== restaurant.id) throw new ToolError('MCP_RESOURCE_NOT_FOUND', NOT_FOUND);
    return order;
  }

  private conversationView(c: Conversation) {
    const messages = this.store.messages.get(c.id) ?? [];
    const last = messages.reduce((max, m) => (m.sent_at > max ? m.sent_at : max), c.created_at);
    return {
      id: c.id, restaurant_id: c.restaurant_id, status: c.status, channel: c.channel, customer_name: c.customer_name,
      message_count: messages.length, last_message_at: last, created_at: c.created_at,
    };
  }

  private analytics(restaurant: Restaurant, a: Record<string, unknown>): Record<string, unknown> {
    const from = a.from as string;
    const to = a.to as string;
    const day = (d: string) => {
      const t = Date.parse(`${d}T00:00:00Z`);
      if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== d) {
        throw new ToolError('INVALID_ARGUMENT', 'Invalid argument: from and to must be real calendar dates.');
      }
      return t / 86_400_000;
    };
    const days = day(to) - day(from) + 1;
    if (days < 1) throw new ToolError('INVALID_ARGUMENT', 'Invalid arguments: the range ends before it starts.');
    if (days > 366) throw new ToolError('INVALID_ARGUMENT', 'Invalid arguments: the range spans more than 366 days.');
    const granularity = (a.granularity as string | undefined) ?? 'day';
    // A metric asked twice is computed once ("eight metrics maximum" says nothing of repeats).
    const metrics = [...new Set(a.metrics as string[])];
    const periodOf = (date: string): string => {
      if (granularity === 'month') return date.slice(0, 8) + '01' < from ? from : date.slice(0, 8) + '01';
      if (granularity === 'week') {
        const t = Date.parse(`${date}T00:00:00Z`);
        const monday = new Date(t - ((new Date(t).getUTCDay() + 6) % 7) * 86_400_000).toISOString().slice(0, 10);
        return monday < from ? from : monday;
      }
      return date;
    };
    const periods: string[] = [];
    for (let d = 0; d < days; d += 1) {
      const p = periodOf(new Date((day(from) + d) * 86_400_000).toISOString().slice(0, 10));
      if (periods[periods.length - 1] !== p) periods.push(p);
    }
    const inRange = (ts: string) => ts.slice(0, 10) >= from && ts.slice(0, 10) <= to;
    const orders = [...this.store.orders.values()].filter((o) => o.restaurant_id === restaurant.id);
    const firstOrder = new Map<string, string>();
    for (const o of orders) {
      const seen = firstOrder.get(o.customer_name);
      if (!seen || o.created_at < seen) firstOrder.set(o.customer_name, o.created_at);
    }
    const conversations = [...this.store.conversations.values()].filter((c) => c.restaurant_id === restaurant.id);
    const compute = (inPeriod: (ts: string) => boolean): Record<string, number> => {
      const os = orders.filter((o) => inPeriod(o.created_at));
      const paid = os.filter((o) => o.status !== 'cancelled' && o.status !== 'rejected');
      const revenue = paid.reduce((sum, o) => sum + o.total_cents, 0);
      const cs = conversations.filter((c) => inPeriod(c.created_at));
      const msgs = conversations.flatMap((c) => this.store.messages.get(c.id) ?? []).filter((m) => inPeriod(m.sent_at));
      const waits: number[] = [];
      for (const c of cs) {
        const list = this.store.messages.get(c.id) ?? [];
        const first = list.find((m) => m.direction === 'inbound');
        const reply = first && list.find((m) => m.direction === 'outbound' && m.sent_at >= first.sent_at);
        if (first && reply) waits.push((Date.parse(reply.sent_at) - Date.parse(first.sent_at)) / 1000);
      }
      waits.sort((x, y) => x - y);
      const median = waits.length === 0 ? 0
        : waits.length % 2 ? waits[(waits.length - 1) / 2] : (waits[waits.length / 2 - 1] + waits[waits.length / 2]) / 2;
      const customers = new Set(os.map((o) => o.customer_name));
      let fresh = 0;
      for (const name of customers) if (inPeriod(firstOrder.get(name)!)) fresh += 1;
      const all: Record<string, number> = {
        orders_count: os.length,
        revenue_cents: revenue,
        average_order_cents: paid.length ? Math.round(revenue / paid.length) : 0,
        completed_orders: os.filter((o) => o.status === 'completed').length,
        conversations_count: cs.length,
        messages_received: msgs.filter((m) => m.direction === 'inbound').length,
        messages_sent: msgs.filter((m) => m.direction === 'outbound').length,
        median_first_response_s: median,
        new_customers: fresh,
        repeat_customers: customers.size - fresh,
      };
      return Object.fromEntries(metrics.map((m) => [m, all[m]]));
    };
    const series = periods.map((p) => ({
      period_start: p,
      values: compute((ts) => inRange(ts) && periodOf(ts.slice(0, 10)) === p),
    }));
    return { restaurant_id: restaurant.id, from, to, granularity, metrics, series, totals: compute(inRange) };
  }
}

function restaurantView(r: Restaurant) {
  return { id: r.id, organization_id: r.organization_id, name: r.name, status: r.status, timezone: r.timezone, created_at: r.created_at };
}

function orderView(o: Order) {
  return {
    id: o.id, restaurant_id: o.restaurant_id, status: o.status, channel: o.channel, customer_name: o.customer_name,
    items: o.items.map((i) => ({ name: i.name, quantity: i.quantity, unit_price_cents: i.unit_price_cents })),
    total_cents: o.total_cents, currency: o.currency, notes: o.notes, created_at: o.created_at, updated_at: o.updated_at,
  };
}

function messageView(m: Message) {
  return { id: m.id, conversation_id: m.conversation_id, direction: m.direction, text: m.text, sent_at: m.sent_at };
}

function transcriptView(t: Transcript) {
  return { id: t.id, restaurant_id: t.restaurant_id, call_started_at: t.call_started_at, duration_s: t.duration_s, language: t.language, text: t.text };
}

function instructionView(i: Instruction) {
  return { id: i.id, restaurant_id: i.restaurant_id, text: i.text, created_by: i.created_by, created_at: i.created_at };
}

/** A search result: the transcript's header and up to 400 characters around the first match. */
function hit(t: Transcript, needle: string) {
  const at = t.text.toLowerCase().indexOf(needle);
  const start = Math.max(0, at - 150);
  const snippet = [...t.text.slice(start, start + 400)].slice(0, 400).join('');
  return { id: t.id, restaurant_id: t.restaurant_id, call_started_at: t.call_started_at, duration_s: t.duration_s, snippet };
}

/** The one short sentence a person reads (never JSON, never an argument echoed back). */
function summary(tool: ToolDef, page: Page): string {
  const d = page.data;
  const more = page.next_cursor ? (page.truncated ? ' The page was cut to stay under 128 KiB; more follow with the cursor.' : ' More follow with the cursor.') : '';
  const replay = page.replayed ? ' (replayed: this key was used before, nothing was done again)' : '';
  for (const [key, value] of Object.entries(d)) {
    if (Array.isArray(value) && key !== 'metrics' && key !== 'series') {
      const label = key === 'messages' ? 'messages of the conversation' : key;
      return `${value.length} ${label} returned.${more}`;
    }
  }
  switch (tool.name) {
    case 'get_analytics': return `Analytics computed for ${(d.metrics as string[]).length} metric(s) over ${(d.series as unknown[]).length} period(s).`;
    case 'update_order_status': return 'The order moved to its next status.';
    case 'set_restaurant_status': return 'The restaurant status was updated.';
    case 'send_message': return `The message was sent${replay}.`;
    case 'create_instruction': return `The instruction was added${replay}.`;
    case 'create_organization': return `The organization was created${replay}.`;
    case 'create_restaurant': return `The restaurant was created${replay}.`;
    default: return `One ${Object.keys(d)[0] ?? 'record'} returned.`;
  }
}

