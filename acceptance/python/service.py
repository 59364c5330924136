"""The restaurant data (loaded from the published dataset, kept in memory) and what each tool does
with it. Every refusal is a `Refusal` carrying one of the contract's codes and a fixed message
that repeats nothing the caller sent."""

from __future__ import annotations

import datetime as dt
import json
import secrets
import statistics
from dataclasses import dataclass
from typing import Any, Callable
from zoneinfo import ZoneInfo

from catalogue import CODES, LIFECYCLE, ROLES, TOOLS, Tool
from guards import Cursors, CursorInvalid, IdempotencyStore, InProgress, Mismatch, canonical

MAX_STRUCTURED = 128 * 1024
MAX_TEXT = 4 * 1024
# Room kept under 128 KiB for the envelope around the items (meta, request_id, cursor).
PAGE_BUDGET = MAX_STRUCTURED - 2048


class Refusal(Exception):
    def __init__(self, code: str, message: str, **extra: Any):
        assert code in CODES
        super().__init__(code)
        self.code, self.message, self.extra = code, message, extra


FORBIDDEN = "This resource is not available to you, or your access to it is not enough for this tool."
NOT_FOUND = "Nothing by that identifier belongs to this restaurant."


@dataclass
class Caller:
    client: str
    user: str
    scopes: frozenset[str]


@dataclass
class Page:
    items: list
    next_cursor: str | None
    truncated: bool


@dataclass
class Answer:
    data: dict
    summary: str
    page: Page | None = None
    replayed: bool = False


def now_ts() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


class Restaurants:
    """The in-memory store and the tools over it."""

    def __init__(self, dataset: dict, secret: bytes):
        self.organizations = {o["id"]: dict(o) for o in dataset["organizations"]}
        self.restaurants = {r["id"]: dict(r) for r in dataset["restaurants"]}
        self.memberships = [dict(m) for m in dataset["memberships"]]
        self.orders = {o["id"]: dict(o) for o in dataset["orders"]}
        self.conversations = {c["id"]: dict(c) for c in dataset["conversations"]}
        self.messages: dict[str, list[dict]] = {c: [] for c in self.conversations}
        for m in dataset["messages"]:
            self.messages[m["conversation_id"]].append(dict(m))
        for thread in self.messages.values():
            thread.sort(key=lambda m: (m["sent_at"], m["id"]))
        self.transcripts = {t["id"]: dict(t) for t in dataset["transcripts"]}
        self.instructions = {i["id"]: dict(i) for i in dataset["instructions"]}
        self.cursors = Cursors(secret)
        self.idempotency = IdempotencyStore(secret)

    # --- access ---------------------------------------------------------------------------

    def _memberships(self, user: str) -> list[dict]:
        return [m for m in self.memberships if m["user_id"] == user and not m.get("revoked")]

    def _membership(self, user: str, org: str) -> dict | None:
        return next((m for m in self._memberships(user) if m["organization_id"] == org), None)

    def _reaches(self, membership: dict, restaurant_id: str) -> bool:
        limited = membership.get("restaurant_ids")
        return not limited or restaurant_id in limited

    def restaurant_for(self, caller: Caller, restaurant_id: str, tool: Tool) -> dict:
        """The restaurant, if the caller's current membership reaches it with a role high enough
        for the tool. An absent restaurant and a foreign one are refused alike."""
        restaurant = self.restaurants.get(restaurant_id)
        membership = restaurant and self._membership(caller.user, restaurant["organization_id"])
        if not membership or not self._reaches(membership, restaurant_id):
            raise Refusal("MCP_RESOURCE_FORBIDDEN", FORBIDDEN)
        self._check_role(membership, tool)
        return restaurant

    def organization_for(self, caller: Caller, organization_id: str, tool: Tool) -> tuple[dict, dict]:
        membership = self._membership(caller.user, organization_id)
        if membership is None or organization_id not in self.organizations:
            raise Refusal("MCP_RESOURCE_FORBIDDEN", FORBIDDEN)
        self._check_role(membership, tool)
        return self.organizations[organization_id], membership

    @staticmethod
    def _check_role(membership: dict, tool: Tool) -> None:
        if tool.role and ROLES.index(membership["role"]) < ROLES.index(tool.role):
            raise Refusal("MCP_RESOURCE_FORBIDDEN", FORBIDDEN)

    def _any_membership(self, caller: Caller) -> list[dict]:
        memberships = self._memberships(caller.user)
        if not memberships:
            # Our reading of "membership insufficient": no current membership, no listing.
            raise Refusal("MCP_RESOURCE_FORBIDDEN", FORBIDDEN)
        return memberships

    # --- paging ---------------------------------------------------------------------------

    def page(self, caller: Caller, tool: Tool, args: dict, filters: dict, items: list,
             sort_key: Callable[[dict], list], newest_first: bool, limit: int,
             wrap: Callable[[list], dict]) -> Page:
        """One page of `items` (already filtered) in the tool's order, after the cursor's position
        (keyset: the position is the last item's sort key, so items added meanwhile never cause a
        duplicate or a skip), cut short when the envelope would pass 128 KiB."""
        items = sorted(items, key=sort_key, reverse=newest_first)
        cursor = args.get("cursor")
        if cursor is not None:
            try:
                position = self.cursors.read(cursor, tool.name, filters, caller.client, caller.user)
            except CursorInvalid:
                raise Refusal("MCP_CURSOR_INVALID", "The cursor is not one this server issued for this call. "
                              "Start again without a cursor.") from None
            if newest_first:
                items = [i for i in items if sort_key(i) < position]
            else:
                items = [i for i in items if sort_key(i) > position]
        chosen = items[:limit]
        budget = PAGE_BUDGET - size(wrap([]))
        fitted, used = [], 0
        for item in chosen:
            used += size(item) + 1
            if used > budget:
                break
            fitted.append(item)
        if chosen and not fitted:
            raise Refusal("MCP_OUTPUT_TOO_LARGE", "A single item of this answer is larger than 128 KiB; "
                          "it cannot be returned through this tool.")
        more = len(fitted) < len(items)
        next_cursor = (self.cursors.issue(sort_key(fitted[-1]), tool.name, filters, caller.client, caller.user)
                       if more else None)
        return Page(fitted, next_cursor, truncated=len(fitted) < len(chosen))

    @staticmethod
    def filters(args: dict, *paging: str) -> dict:
        return {k: v for k, v in args.items() if k not in paging}

    # --- views ----------------------------------------------------------------------------

    def _conversation_view(self, c: dict) -> dict:
        thread = self.messages[c["id"]]
        return {**c, "message_count": len(thread),
                "last_message_at": thread[-1]["sent_at"] if thread else c["created_at"]}

    @staticmethod
    def _plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    def _listed(self, what: str, page: Page, where: str = "") -> str:
        text = f"{self._plural(len(page.items), what)}{where}"
        if page.truncated:
            text += " (page cut short to stay under 128 KiB)"
        return text + ("; more on the next page." if page.next_cursor else ".")

    # --- read tools -----------------------------------------------------------------------

    def list_organizations(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["list_organizations"]
        roles = {m["organization_id"]: m["role"] for m in self._any_membership(caller)}
        items = [{**self.organizations[o], "role": r} for o, r in roles.items() if o in self.organizations]
        page = self.page(caller, tool, args, self.filters(args, "limit", "cursor"), items,
                         lambda o: [o["created_at"], o["id"]], False, args.get("limit", 20),
                         lambda xs: {"organizations": xs})
        return Answer({"organizations": page.items}, self._listed("organization", page), page)

    def list_restaurants(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["list_restaurants"]
        if "organization_id" in args:
            _, membership = self.organization_for(caller, args["organization_id"], tool)
            memberships = [membership]
        else:
            memberships = self._any_membership(caller)
        items = [r for r in self.restaurants.values()
                 for m in memberships
                 if r["organization_id"] == m["organization_id"] and self._reaches(m, r["id"])
                 and args.get("status", r["status"]) == r["status"]]
        page = self.page(caller, tool, args, self.filters(args, "limit", "cursor"), items,
                         lambda r: [r["id"]], False, args.get("limit", 20), lambda xs: {"restaurants": xs})
        return Answer({"restaurants": page.items}, self._listed("restaurant", page), page)

    def get_restaurant(self, caller: Caller, args: dict) -> Answer:
        r = self.restaurant_for(caller, args["restaurant_id"], TOOLS["get_restaurant"])
        return Answer({"restaurant": dict(r)}, f"{r['name']} ({r['id']}) is {r['status']}.")

    def list_orders(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["list_orders"]
        r = self.restaurant_for(caller, args["restaurant_id"], tool)
        statuses = set(args.get("status", []))
        items = [o for o in self.orders.values() if o["restaurant_id"] == r["id"]
                 and (not statuses or o["status"] in statuses)
                 and args.get("channel", o["channel"]) == o["channel"]
                 and args.get("created_from", o["created_at"]) <= o["created_at"]
                 and o["created_at"] <= args.get("created_to", o["created_at"])]
        page = self.page(caller, tool, args, self.filters(args, "limit", "cursor"), items,
                         lambda o: [o["created_at"], o["id"]], True, args.get("limit", 20),
                         lambda xs: {"orders": xs})
        return Answer({"orders": page.items}, self._listed("order", page, f" of {r['name']}, newest first"), page)

    def _order(self, restaurant: dict, order_id: str) -> dict:
        order = self.orders.get(order_id)
        if order is None or order["restaurant_id"] != restaurant["id"]:
            raise Refusal("MCP_RESOURCE_NOT_FOUND", NOT_FOUND)
        return order

    def get_order(self, caller: Caller, args: dict) -> Answer:
        r = self.restaurant_for(caller, args["restaurant_id"], TOOLS["get_order"])
        o = self._order(r, args["order_id"])
        return Answer({"order": dict(o)}, f"Order {o['id']}: {o['status']}, {o['total_cents'] / 100:.2f} "
                      f"{o['currency']}, {o['channel']}.")

    def list_conversations(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["list_conversations"]
        r = self.restaurant_for(caller, args["restaurant_id"], tool)
        items = [self._conversation_view(c) for c in self.conversations.values()
                 if c["restaurant_id"] == r["id"] and args.get("status", c["status"]) == c["status"]
                 and args.get("channel", c["channel"]) == c["channel"]]
        page = self.page(caller, tool, args, self.filters(args, "limit", "cursor"), items,
                         lambda c: [c["created_at"], c["id"]], True, args.get("limit", 20),
                         lambda xs: {"conversations": xs})
        return Answer({"conversations": page.items}, self._listed("conversation", page, f" of {r['name']}"), page)

    def _conversation(self, restaurant: dict, conversation_id: str) -> dict:
        c = self.conversations.get(conversation_id)
        if c is None or c["restaurant_id"] != restaurant["id"]:
            raise Refusal("MCP_RESOURCE_NOT_FOUND", NOT_FOUND)
        return c

    def get_conversation(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["get_conversation"]
        r = self.restaurant_for(caller, args["restaurant_id"], tool)
        c = self._conversation_view(self._conversation(r, args["conversation_id"]))
        page = self.page(caller, tool, args, self.filters(args, "message_limit", "cursor"),
                         list(self.messages[c["id"]]), lambda m: [m["sent_at"], m["id"]], True,
                         args.get("message_limit", 50), lambda xs: {"conversation": c, "messages": xs})
        return Answer({"conversation": c, "messages": page.items},
                      self._listed("message", page, f" of conversation {c['id']} ({c['message_count']} in all), "
                                   "newest first"), page)

    def search_transcripts(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["search_transcripts"]
        r = self.restaurant_for(caller, args["restaurant_id"], tool)
        needle = args["query"].casefold()
        hits = []
        for t in self.transcripts.values():
            if t["restaurant_id"] != r["id"]:
                continue
            at = t["text"].casefold().find(needle)
            if at < 0:
                continue
            start, end = max(0, at - 120), min(len(t["text"]), at + len(needle) + 120)
            snippet = ("…" if start else "") + t["text"][start:end] + ("…" if end < len(t["text"]) else "")
            hits.append({"id": t["id"], "restaurant_id": t["restaurant_id"],
                         "call_started_at": t["call_started_at"], "duration_s": t["duration_s"],
                         "snippet": snippet[:400]})
        page = self.page(caller, tool, args, self.filters(args, "limit", "cursor"), hits,
                         lambda h: [h["call_started_at"], h["id"]], True, args.get("limit", 20),
                         lambda xs: {"transcripts": xs})
        return Answer({"transcripts": page.items}, self._listed("matching transcript", page), page)

    def get_transcript(self, caller: Caller, args: dict) -> Answer:
        r = self.restaurant_for(caller, args["restaurant_id"], TOOLS["get_transcript"])
        t = self.transcripts.get(args["transcript_id"])
        if t is None or t["restaurant_id"] != r["id"]:
            raise Refusal("MCP_RESOURCE_NOT_FOUND", NOT_FOUND)
        if size({"transcript": t}) > PAGE_BUDGET:
            raise Refusal("MCP_OUTPUT_TOO_LARGE", "This transcript is larger than 128 KiB; it cannot be "
                          "returned through this tool.")
        return Answer({"transcript": dict(t)}, f"Transcript {t['id']}: a {t['duration_s']} s call "
                      f"({t['language']}) started {t['call_started_at']}.")

    def list_instructions(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["list_instructions"]
        r = self.restaurant_for(caller, args["restaurant_id"], tool)
        items = [i for i in self.instructions.values() if i["restaurant_id"] == r["id"]]
        page = self.page(caller, tool, args, self.filters(args, "limit", "cursor"), items,
                         lambda i: [i["created_at"], i["id"]], True, args.get("limit", 20),
                         lambda xs: {"instructions": xs})
        return Answer({"instructions": page.items}, self._listed("instruction", page, f" of {r['name']}"), page)

    def get_analytics(self, caller: Caller, args: dict) -> Answer:
        r = self.restaurant_for(caller, args["restaurant_id"], TOOLS["get_analytics"])
        first, last = dt.date.fromisoformat(args["from"]), dt.date.fromisoformat(args["to"])
        granularity = args.get("granularity", "week")
        periods = []
        day = first
        while day <= last:
            if granularity == "day":
                nxt = day + dt.timedelta(days=1)
            elif granularity == "week":
                nxt = day + dt.timedelta(days=7 - day.weekday())
            else:
                nxt = (day.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
            periods.append((day, min(nxt, last + dt.timedelta(days=1))))
            day = nxt
        orders = [o for o in self.orders.values() if o["restaurant_id"] == r["id"]]
        first_order: dict[str, str] = {}
        for o in sorted(orders, key=lambda o: o["created_at"]):
            first_order.setdefault(o["customer_name"], o["created_at"][:10])
        conversations = [c for c in self.conversations.values() if c["restaurant_id"] == r["id"]]
        messages = [m for c in conversations for m in self.messages[c["id"]]]

        def measure(lo: dt.date, hi: dt.date) -> dict:
            a, b = lo.isoformat(), hi.isoformat()  # [a, b)
            inside = [o for o in orders if a <= o["created_at"][:10] < b]
            paid = [o for o in inside if o["status"] not in ("cancelled", "rejected")]
            revenue = sum(o["total_cents"] for o in paid)
            convs = [c for c in conversations if a <= c["created_at"][:10] < b]
            waits = []
            for c in convs:
                thread = self.messages[c["id"]]
                asked = next((m["sent_at"] for m in thread if m["direction"] == "inbound"), None)
                told = asked and next((m["sent_at"] for m in thread
                                       if m["direction"] == "outbound" and m["sent_at"] >= asked), None)
                if told:
                    waits.append((_parse(told) - _parse(asked)).total_seconds())
            customers = {o["customer_name"] for o in inside}
            values = {
                "orders_count": len(inside),
                "revenue_cents": revenue,
                "average_order_cents": revenue // len(paid) if paid else 0,
                "completed_orders": sum(o["status"] == "completed" for o in inside),
                "conversations_count": len(convs),
                "messages_received": sum(a <= m["sent_at"][:10] < b and m["direction"] == "inbound"
                                         for m in messages),
                "messages_sent": sum(a <= m["sent_at"][:10] < b and m["direction"] == "outbound" for m in messages),
                "median_first_response_s": round(statistics.median(waits)) if waits else 0,
                "new_customers": sum(first_order[n] >= a for n in customers),
                "repeat_customers": sum(first_order[n] < a for n in customers),
            }
            return {m: values[m] for m in args["metrics"]}

        data = {"restaurant_id": r["id"], "from": args["from"], "to": args["to"], "granularity": granularity,
                "metrics": list(args["metrics"]),
                "series": [{"period_start": lo.isoformat(), "values": measure(lo, hi)} for lo, hi in periods],
                "totals": measure(first, last + dt.timedelta(days=1))}
        if size(data) > PAGE_BUDGET:
            raise Refusal("MCP_OUTPUT_TOO_LARGE", "These analytics would be larger than 128 KiB; ask for a "
                          "coarser granularity or fewer metrics.")
        return Answer(data, f"{self._plural(len(args['metrics']), 'metric')} of {r['name']} over "
                      f"{self._plural(len(periods), granularity)}.")

    # --- writes guarded by expected_status ---------------------------------------------------

    def update_order_status(self, caller: Caller, args: dict) -> Answer:
        r = self.restaurant_for(caller, args["restaurant_id"], TOOLS["update_order_status"])
        o = self._order(r, args["order_id"])
        if o["status"] != args["expected_status"]:
            raise Refusal("MCP_EXPECTED_STATE_MISMATCH", "The order's status is no longer the one you saw. "
                          "Read the order again before deciding.")
        current = o["status"]
        if current not in LIFECYCLE or LIFECYCLE.index(current) + 1 >= len(LIFECYCLE) \
                or LIFECYCLE[LIFECYCLE.index(current) + 1] != args["status"]:
            raise Refusal("ORDER_STATUS_PRECONDITION_FAILED", "Orders only move one step forward along their "
                          "lifecycle; this move is not that step.")
        o["status"], o["updated_at"] = args["status"], max(now_ts(), o["updated_at"])
        return Answer({"order": dict(o)}, f"Order {o['id']} is now {o['status']}.")

    def set_restaurant_status(self, caller: Caller, args: dict) -> Answer:
        r = self.restaurant_for(caller, args["restaurant_id"], TOOLS["set_restaurant_status"])
        if r["status"] != args["expected_status"]:
            raise Refusal("MCP_EXPECTED_STATE_MISMATCH", "The restaurant's status is no longer the one you saw. "
                          "Read it again before deciding.")
        r["status"] = args["status"]
        return Answer({"restaurant": dict(r)}, f"{r['name']} is now {r['status']}.")

    # --- writes guarded by an idempotency key ------------------------------------------------

    def keyed(self, caller: Caller, tool: Tool, args: dict, effect: Callable[[], Answer]) -> Answer:
        """Run `effect` once per (client, user, tool, key); replay its data for 24 h."""
        try:
            state, value = self.idempotency.begin(caller.client, caller.user, tool.name,
                                                  args["idempotency_key"], args)
        except Mismatch:
            raise Refusal("MCP_IDEMPOTENCY_MISMATCH", "This idempotency key was already used with other "
                          "arguments. Use a new key for a new effect.") from None
        except InProgress:
            raise Refusal("MCP_OPERATION_IN_PROGRESS", "A call with this idempotency key is still running. "
                          "Retry shortly.", retry_after_ms=250) from None
        if state == "replay":
            return Answer(json.loads(value), "Already done earlier with this idempotency key: the first "
                          "result again, nothing changed.", replayed=True)
        try:
            answer = effect()
        except BaseException:
            self.idempotency.abandon(value)
            raise
        self.idempotency.finish(value, canonical(answer.data))
        return answer

    def send_message(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["send_message"]
        r = self.restaurant_for(caller, args["restaurant_id"], tool)
        c = self._conversation(r, args["conversation_id"])

        def effect() -> Answer:
            message = {"id": new_id("msg"), "conversation_id": c["id"], "direction": "outbound",
                       "text": args["text"], "sent_at": now_ts()}
            self.messages[c["id"]].append(message)
            return Answer({"message": dict(message)}, f"Message {message['id']} sent in {c['id']}.")

        return self.keyed(caller, tool, args, effect)

    def create_instruction(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["create_instruction"]
        r = self.restaurant_for(caller, args["restaurant_id"], tool)

        def effect() -> Answer:
            instruction = {"id": new_id("ins"), "restaurant_id": r["id"], "text": args["text"],
                           "created_by": caller.user, "created_at": now_ts()}
            self.instructions[instruction["id"]] = instruction
            return Answer({"instruction": dict(instruction)}, f"Instruction {instruction['id']} added to {r['name']}.")

        return self.keyed(caller, tool, args, effect)

    def create_organization(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["create_organization"]

        def effect() -> Answer:
            org = {"id": new_id("org"), "name": args["name"], "created_at": now_ts()}
            self.organizations[org["id"]] = org
            self.memberships.append({"user_id": caller.user, "organization_id": org["id"], "role": "owner",
                                     "revoked": False})
            return Answer({"organization": {**org, "role": "owner"}}, f"Organization {org['id']} created; "
                          "you own it.")

        return self.keyed(caller, tool, args, effect)

    def create_restaurant(self, caller: Caller, args: dict) -> Answer:
        tool = TOOLS["create_restaurant"]
        org, _ = self.organization_for(caller, args["organization_id"], tool)

        def effect() -> Answer:
            restaurant = {"id": new_id("rst"), "organization_id": org["id"], "name": args["name"],
                          "status": "paused", "timezone": args["timezone"], "created_at": now_ts()}
            self.restaurants[restaurant["id"]] = restaurant
            return Answer({"restaurant": dict(restaurant)}, f"Restaurant {restaurant['id']} created, paused.")

        return self.keyed(caller, tool, args, effect)


def new_id(prefix: str) -> str:
    return f"{prefix}_py{secrets.token_hex(8)}"


def _parse(ts: str) -> dt.datetime:
    return dt.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")


def check_meaning(tool: str, args: dict) -> str | None:
    """Rules a JSON Schema cannot say; the name of the argument that breaks one, or None."""
    if tool == "get_analytics":
        try:
            first, last = dt.date.fromisoformat(args["from"]), dt.date.fromisoformat(args["to"])
        except ValueError:
            return "from/to"
        if last < first or (last - first).days + 1 > 366:
            return "from/to"
    if tool == "list_orders":
        for name in ("created_from", "created_to"):
            if name in args:
                try:
                    _parse(args[name])
                except ValueError:
                    return name
    if tool == "create_restaurant":
        try:
            ZoneInfo(args["timezone"])
        except (ValueError, KeyError, OSError):
            return "timezone"
        except Exception:
            return "timezone"
    return None
