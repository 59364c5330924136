// The in-memory store: the published dataset loaded once at start, then changed by the write
// tools. Nothing persists; a restart is a fresh seeding.

import { readFileSync } from 'node:fs';

export type Role = 'viewer' | 'staff' | 'manager' | 'owner';
export const ROLE_RANK: Record<Role, number> = { viewer: 0, staff: 1, manager: 2, owner: 3 };

export interface Organization { id: string; name: string; created_at: string }
export interface Restaurant {
  id: string; organization_id: string; name: string; status: string; timezone: string; created_at: string;
}
export interface Membership {
  user_id: string; organization_id: string; role: Role; restaurant_ids?: string[]; revoked: boolean;
}
export interface Persona {
  persona: string; user_id: string; client_id: string; scopes: string[]; audience?: string;
}
export interface OrderItem { name: string; quantity: number; unit_price_cents: number }
export interface Order {
  id: string; restaurant_id: string; status: string; channel: string; customer_name: string;
  items: OrderItem[]; total_cents: number; currency: string; notes: string; created_at: string; updated_at: string;
}
export interface Conversation {
  id: string; restaurant_id: string; status: string; channel: string; customer_name: string; created_at: string;
}
export interface Message { id: string; conversation_id: string; direction: string; text: string; sent_at: string }
export interface Transcript {
  id: string; restaurant_id: string; call_started_at: string; duration_s: number; language: string; text: string;
}
export interface Instruction { id: string; restaurant_id: string; text: string; created_by: string; created_at: string }

export interface Dataset {
  organizations: Organization[];
  restaurants: Restaurant[];
  memberships: Membership[];
  personas: Persona[];
  orders: Order[];
  conversations: Conversation[];
  messages: Message[];
  transcripts: Transcript[];
  instructions: Instruction[];
}

export class Store {
  organizations = new Map<string, Organization>();
  restaurants = new Map<string, Restaurant>();
  memberships: Membership[] = [];
  orders = new Map<string, Order>();
  conversations = new Map<string, Conversation>();
  /** Messages per conversation, oldest first. */
  messages = new Map<string, Message[]>();
  transcripts = new Map<string, Transcript>();
  instructions = new Map<string, Instruction>();
  personas: Persona[];
  private seq = 0;

  constructor(data: Dataset) {
    for (const o of data.organizations) this.organizations.set(o.id, { ...o });
    for (const r of data.restaurants) this.restaurants.set(r.id, { ...r });
    this.memberships = data.memberships.map((m) => ({ ...m }));
    for (const o of data.orders) this.orders.set(o.id, structuredClone(o));
    for (const c of data.conversations) {
      this.conversations.set(c.id, { ...c });
      this.messages.set(c.id, []);
    }
    for (const m of data.messages) this.messages.get(m.conversation_id)?.push({ ...m });
    for (const list of this.messages.values()) list.sort((a, b) => cmp(a.sent_at, b.sent_at) || cmp(a.id, b.id));
    for (const t of data.transcripts) this.transcripts.set(t.id, { ...t });
    for (const i of data.instructions) this.instructions.set(i.id, { ...i });
    this.personas = data.personas;
  }

  static load(path: string): Store {
    return new Store(JSON.parse(readFileSync(path, 'utf8')) as Dataset);
  }

  /**
   * A new ID that sorts after every ID this process made before (the millisecond, then a
   * counter), so "id desc" breaks ties between records created in the same second.
   */
  newId(prefix: string): string {
    this.seq += 1;
    return `${prefix}_n${Date.now().toString().padStart(14, '0')}${this.seq.toString().padStart(8, '0')}`;
  }

  /** The user's current (not revoked) memberships. */
  activeMemberships(userId: string): Membership[] {
    return this.memberships.filter((m) => m.user_id === userId && !m.revoked);
  }

  /** The highest role the user holds now over a restaurant, or undefined. */
  roleInRestaurant(userId: string, restaurant: Restaurant): Role | undefined {
    let best: Role | undefined;
    for (const m of this.activeMemberships(userId)) {
      if (m.organization_id !== restaurant.organization_id) continue;
      if (m.restaurant_ids && !m.restaurant_ids.includes(restaurant.id)) continue;
      if (!best || ROLE_RANK[m.role] > ROLE_RANK[best]) best = m.role;
    }
    return best;
  }

  /** The highest role the user holds now in an organization, or undefined. */
  roleInOrganization(userId: string, organizationId: string): Role | undefined {
    let best: Role | undefined;
    for (const m of this.activeMemberships(userId)) {
      if (m.organization_id !== organizationId) continue;
      if (!best || ROLE_RANK[m.role] > ROLE_RANK[best]) best = m.role;
    }
    return best;
  }
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** UTC now as the dataset writes timestamps: YYYY-MM-DDTHH:MM:SSZ. */
export function nowTimestamp(): string {
  return new Date().toISOString().slice(0, 19) + 'Z';
}
