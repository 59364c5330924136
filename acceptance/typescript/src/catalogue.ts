// The seventeen tools of the contract (§10): names, kinds, scopes, minimum roles, and the JSON
// Schemas published in tools/list. Written from docs/CONTRACT.md, nothing imported.

import type { Role } from './store.js';

export type Kind = 'read' | 'analytics' | 'write' | 'keyed';

export interface ToolDef {
  name: string;
  kind: Kind;
  scope: string;
  /** undefined: any authenticated user (create_organization). */
  role?: Role;
  description: string;
  input: Record<string, unknown>;
  /** The JSON Schema of a success's `data`. */
  data: Record<string, unknown>;
}

export const SCOPES = [
  'organizations:read', 'organizations:write', 'restaurants:read', 'restaurants:write',
  'orders:read', 'orders:write', 'conversations:read', 'messages:write', 'transcripts:read',
  'instructions:read', 'instructions:write', 'analytics:read',
];
export const ORDER_STATUSES = ['received', 'accepted', 'preparing', 'ready', 'completed', 'cancelled', 'rejected'];
export const LIFECYCLE = ['received', 'accepted', 'preparing', 'ready', 'completed'];
export const ORDER_CHANNELS = ['phone', 'web', 'app', 'marketplace'];
export const RESTAURANT_STATUSES = ['open', 'paused'];
export const METRICS = [
  'orders_count', 'revenue_cents', 'average_order_cents', 'completed_orders', 'conversations_count',
  'messages_received', 'messages_sent', 'median_first_response_s', 'new_customers', 'repeat_customers',
];
/** Our page sizes: 20 by default, and a larger `limit` is clamped to 50 (not refused). */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 50;
export const DEFAULT_MESSAGES = 50;
export const MAX_MESSAGES = 100;

export const ERROR_CODES: Record<string, { category: string; retryable: boolean }> = {
  INVALID_ARGUMENT: { category: 'validation', retryable: false },
  MCP_SCOPE_REQUIRED: { category: 'authorization', retryable: false },
  MCP_RESOURCE_FORBIDDEN: { category: 'authorization', retryable: false },
  MCP_RESOURCE_NOT_FOUND: { category: 'not_found', retryable: false },
  MCP_CURSOR_INVALID: { category: 'validation', retryable: false },
  MCP_EXPECTED_STATE_MISMATCH: { category: 'conflict', retryable: false },
  ORDER_STATUS_PRECONDITION_FAILED: { category: 'conflict', retryable: false },
  MCP_IDEMPOTENCY_MISMATCH: { category: 'conflict', retryable: false },
  MCP_OPERATION_IN_PROGRESS: { category: 'conflict', retryable: true },
  MCP_RATE_LIMITED: { category: 'rate_limit', retryable: true },
  MCP_TOOL_TIMEOUT: { category: 'timeout', retryable: true },
  MCP_OUTCOME_UNKNOWN: { category: 'timeout', retryable: false },
  MCP_OUTPUT_TOO_LARGE: { category: 'validation', retryable: false },
  MCP_INTERNAL_ERROR: { category: 'internal', retryable: true },
};

const DIALECT = 'https://json-schema.org/draft/2020-12/schema';
const CURSOR_MAX = 4096;

const id = (prefix: string) => ({ type: 'string', pattern: `^${prefix}_[0-9A-Za-z_]{1,60}$`, maxLength: 64 });
const oneOf = (values: string[]) => ({ type: 'string', enum: values });
const text = (min: number, max: number) => ({ type: 'string', minLength: min, maxLength: max });
const timestamp = { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' };
const date = { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' };
const str = { type: 'string' };
const count = { type: 'integer', minimum: 0 };

function closed(properties: Record<string, unknown>, required: string[]): Record<string, unknown> {
  return { type: 'object', properties, required, additionalProperties: false };
}

const paging = {
  limit: {
    type: 'integer', minimum: 1,
    description: `Page size: ${DEFAULT_LIMIT} by default; values above ${MAX_LIMIT} are served as ${MAX_LIMIT}`,
  },
  cursor: {
    type: 'string', maxLength: CURSOR_MAX,
    description: 'Opaque: pass meta.next_cursor back unchanged, with the same filters',
  },
};
const idempotencyKey = { idempotency_key: { ...text(8, 255), description: 'Unique per intended effect; retries reuse it' } };

const organization = closed(
  { id: id('org'), name: str, role: oneOf(['viewer', 'staff', 'manager', 'owner']), created_at: timestamp },
  ['id', 'name', 'role', 'created_at'],
);
const restaurant = closed(
  {
    id: id('rst'), organization_id: id('org'), name: str, status: oneOf(RESTAURANT_STATUSES),
    timezone: str, created_at: timestamp,
  },
  ['id', 'organization_id', 'name', 'status', 'timezone', 'created_at'],
);
const order = closed(
  {
    id: id('ord'), restaurant_id: id('rst'), status: oneOf(ORDER_STATUSES), channel: oneOf(ORDER_CHANNELS),
    customer_name: str,
    items: {
      type: 'array',
      items: closed(
        { name: str, quantity: { type: 'integer', minimum: 1 }, unit_price_cents: count },
        ['name', 'quantity', 'unit_price_cents'],
      ),
    },
    total_cents: count, currency: str, notes: str, created_at: timestamp, updated_at: timestamp,
  },
  ['id', 'restaurant_id', 'status', 'channel', 'customer_name', 'items', 'total_cents', 'currency', 'notes',
    'created_at', 'updated_at'],
);
const conversation = closed(
  {
    id: id('cnv'), restaurant_id: id('rst'), status: oneOf(['open', 'closed']),
    channel: oneOf(['sms', 'whatsapp', 'webchat']), customer_name: str, message_count: count,
    last_message_at: timestamp, created_at: timestamp,
  },
  ['id', 'restaurant_id', 'status', 'channel', 'customer_name', 'message_count', 'last_message_at', 'created_at'],
);
const message = closed(
  { id: id('msg'), conversation_id: id('cnv'), direction: oneOf(['inbound', 'outbound']), text: str, sent_at: timestamp },
  ['id', 'conversation_id', 'direction', 'text', 'sent_at'],
);
const transcriptHit = closed(
  {
    id: id('trs'), restaurant_id: id('rst'), call_started_at: timestamp, duration_s: count,
    snippet: { type: 'string', maxLength: 400 },
  },
  ['id', 'restaurant_id', 'call_started_at', 'duration_s', 'snippet'],
);
const transcript = closed(
  { id: id('trs'), restaurant_id: id('rst'), call_started_at: timestamp, duration_s: count, language: str, text: str },
  ['id', 'restaurant_id', 'call_started_at', 'duration_s', 'language', 'text'],
);
const instruction = closed(
  { id: id('ins'), restaurant_id: id('rst'), text: str, created_by: id('usr'), created_at: timestamp },
  ['id', 'restaurant_id', 'text', 'created_by', 'created_at'],
);
const metricValues = { type: 'object', additionalProperties: { type: 'number' } };
const analytics = closed(
  {
    restaurant_id: id('rst'), from: date, to: date, granularity: oneOf(['day', 'week', 'month']),
    metrics: { type: 'array', items: oneOf(METRICS) },
    series: { type: 'array', items: closed({ period_start: date, values: metricValues }, ['period_start', 'values']) },
    totals: metricValues,
  },
  ['restaurant_id', 'from', 'to', 'granularity', 'metrics', 'series', 'totals'],
);

const list = (key: string, item: unknown) => closed({ [key]: { type: 'array', items: item } }, [key]);
const one = (key: string, item: unknown) => closed({ [key]: item }, [key]);

function tool(
  name: string, kind: Kind, scope: string, role: Role | undefined, description: string,
  properties: Record<string, unknown>, required: string[], data: Record<string, unknown>,
): ToolDef {
  const input = { $schema: DIALECT, ...closed(properties, required) };
  return { name, kind, scope, role, description, input, data };
}

const rid = { restaurant_id: id('rst') };

export const TOOLS: ToolDef[] = [
  tool('list_organizations', 'read', 'organizations:read', 'viewer',
    'List the organizations you belong to and your role in each, oldest first.',
    { ...paging }, [], list('organizations', organization)),
  tool('list_restaurants', 'read', 'restaurants:read', 'viewer',
    'List the restaurants you can reach, oldest first; optionally one organization or one status only.',
    { organization_id: id('org'), status: oneOf(RESTAURANT_STATUSES), ...paging }, [], list('restaurants', restaurant)),
  tool('get_restaurant', 'read', 'restaurants:read', 'viewer', 'Read one restaurant.',
    { ...rid }, ['restaurant_id'], one('restaurant', restaurant)),
  tool('list_orders', 'read', 'orders:read', 'viewer',
    "List a restaurant's orders, newest first (created_at desc, then id desc), optionally filtered.",
    {
      ...rid,
      status: { type: 'array', items: oneOf(ORDER_STATUSES), minItems: 1, maxItems: 7 },
      channel: oneOf(ORDER_CHANNELS), created_from: timestamp, created_to: timestamp, ...paging,
    },
    ['restaurant_id'], list('orders', order)),
  tool('get_order', 'read', 'orders:read', 'viewer', 'Read one order of a restaurant.',
    { ...rid, order_id: id('ord') }, ['restaurant_id', 'order_id'], one('order', order)),
  tool('list_conversations', 'read', 'conversations:read', 'viewer',
    "List a restaurant's customer conversations, newest first (created_at desc, then id desc).",
    { ...rid, status: oneOf(['open', 'closed']), channel: oneOf(['sms', 'whatsapp', 'webchat']), ...paging },
    ['restaurant_id'], list('conversations', conversation)),
  tool('get_conversation', 'read', 'conversations:read', 'viewer',
    'Read one conversation and its messages, newest first; older messages come through meta.next_cursor.',
    {
      ...rid, conversation_id: id('cnv'),
      message_limit: { type: 'integer', minimum: 1, maximum: MAX_MESSAGES, description: `Messages per call, ${DEFAULT_MESSAGES} by default` },
      cursor: paging.cursor,
    },
    ['restaurant_id', 'conversation_id'],
    closed({ conversation, messages: { type: 'array', items: message } }, ['conversation', 'messages'])),
  tool('search_transcripts', 'read', 'transcripts:read', 'viewer',
    "Search a restaurant's call transcripts for a phrase (case-insensitive), newest call first.",
    { ...rid, query: text(1, 200), ...paging }, ['restaurant_id', 'query'], list('transcripts', transcriptHit)),
  tool('get_transcript', 'read', 'transcripts:read', 'viewer', 'Read one call transcript.',
    { ...rid, transcript_id: id('trs') }, ['restaurant_id', 'transcript_id'], one('transcript', transcript)),
  tool('list_instructions', 'read', 'instructions:read', 'viewer',
    "List a restaurant's standing instructions, newest first.",
    { ...rid, ...paging }, ['restaurant_id'], list('instructions', instruction)),
  tool('get_analytics', 'analytics', 'analytics:read', 'viewer',
    'Compute 1 to 8 metrics (one asked twice is computed once) of a restaurant over at most 366 days (from and to included), per day (default), week or month.',
    {
      ...rid,
      metrics: { type: 'array', items: oneOf(METRICS), minItems: 1, maxItems: 8 },
      from: date, to: date, granularity: oneOf(['day', 'week', 'month']),
    },
    ['restaurant_id', 'metrics', 'from', 'to'], analytics),
  tool('update_order_status', 'write', 'orders:write', 'staff',
    'Move an order to the next step of received → accepted → preparing → ready → completed. expected_status is the status you last saw.',
    { ...rid, order_id: id('ord'), status: oneOf(LIFECYCLE.slice(1)), expected_status: oneOf(ORDER_STATUSES) },
    ['restaurant_id', 'order_id', 'status', 'expected_status'], one('order', order)),
  tool('set_restaurant_status', 'write', 'restaurants:write', 'manager',
    'Open or pause a restaurant. expected_status is the status you last saw.',
    { ...rid, status: oneOf(RESTAURANT_STATUSES), expected_status: oneOf(RESTAURANT_STATUSES) },
    ['restaurant_id', 'status', 'expected_status'], one('restaurant', restaurant)),
  tool('send_message', 'keyed', 'messages:write', 'staff',
    "Send a message to a conversation's customer. Needs an idempotency key.",
    { ...rid, conversation_id: id('cnv'), text: text(1, 2000), ...idempotencyKey },
    ['restaurant_id', 'conversation_id', 'text', 'idempotency_key'], one('message', message)),
  tool('create_instruction', 'keyed', 'instructions:write', 'manager',
    'Add a standing instruction to a restaurant. Needs an idempotency key.',
    { ...rid, text: text(1, 2000), ...idempotencyKey }, ['restaurant_id', 'text', 'idempotency_key'],
    one('instruction', instruction)),
  tool('create_organization', 'keyed', 'organizations:write', undefined,
    'Create an organization, of which you become the owner. Needs an idempotency key.',
    { name: text(1, 120), ...idempotencyKey }, ['name', 'idempotency_key'], one('organization', organization)),
  tool('create_restaurant', 'keyed', 'restaurants:write', 'owner',
    'Create a restaurant in an organization you own. Needs an idempotency key.',
    {
      organization_id: id('org'), name: text(1, 120),
      timezone: { type: 'string', maxLength: 64, pattern: '^(UTC|[A-Z][A-Za-z_]+(/[A-Za-z0-9_+-]+){1,2})$', description: 'IANA time zone, e.g. Europe/Paris' },
      ...idempotencyKey,
    },
    ['organization_id', 'name', 'timezone', 'idempotency_key'], one('restaurant', restaurant)),
];

const requestId = { type: 'string', pattern: '^req_[0-9A-Za-z]{16,}$' };

export const ERROR_ENVELOPE = closed(
  {
    data: closed({
      error: closed(
        {
          code: oneOf(Object.keys(ERROR_CODES)),
          category: oneOf(['validation', 'authentication', 'authorization', 'not_found', 'conflict', 'rate_limit',
            'timeout', 'dependency', 'internal']),
          retryable: { type: 'boolean' },
          message: { type: 'string', maxLength: 500 },
          request_id: requestId,
          retry_after_ms: { type: 'integer', minimum: 1 },
          required_scope: { type: 'string' },
        },
        ['code', 'category', 'retryable', 'message', 'request_id'],
      ),
    }, ['error']),
    meta: closed({ request_id: requestId }, ['request_id']),
  },
  ['data', 'meta'],
);

export function outputSchema(t: ToolDef): Record<string, unknown> {
  const meta = closed(
    { request_id: requestId, next_cursor: { type: 'string', minLength: 1 }, truncated: { type: 'boolean' }, replayed: { type: 'boolean' } },
    ['request_id', 'truncated', 'replayed'],
  );
  return { $schema: DIALECT, type: 'object', oneOf: [closed({ data: t.data, meta }, ['data', 'meta']), ERROR_ENVELOPE] };
}

export function annotations(t: ToolDef): Record<string, boolean> {
  if (t.kind === 'read' || t.kind === 'analytics') return { readOnlyHint: true, openWorldHint: false };
  if (t.kind === 'write') return { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
  return { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };
}

export function descriptor(t: ToolDef) {
  return {
    name: t.name,
    title: t.name.replace(/_/g, ' '),
    description: t.description,
    inputSchema: t.input,
    outputSchema: outputSchema(t),
    annotations: annotations(t),
  };
}
