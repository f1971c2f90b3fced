"""Realistic customer-service conversations for the headline grading benchmark.

Shaped after real support logs (tau2-bench's retail / airline / telecom runs): a system prompt
with the deployment's policy, several user messages per conversation (the request, the identity
details, a confirmation, a follow-up question), assistant messages with tool calls (sometimes in
parallel), tool outputs of several KB of JSON (user profiles, orders with items, products with
variants), dozens of messages in all, in the OpenAI Chat Completions format.

Tasks come one line per conversation, as converted logs have them: each line repeats the
deployment's 14-18 tool specs in the OpenAI ``{"type": "function", "function": ...}`` form, so a
loader that re-hashes every spec of every task pays for it.

Two task variants of the same conversations:
- ``episode`` (the headline): one goal per task (``question`` + reference calls + the content the
  agent must tell the customer, as tau2 checks it), the multi-user-message dialogue graded as
  one episode;
- ``turns``: the task spells one turn per user message (reference calls and gold answers where a
  turn has them), so the dialogue aligns turn by turn with what the grader reads.

Agents behave like real ones: most succeed, others skip authentication, pass a wrong argument,
make an extra write, retry after a tool error, or give a wrong answer; the mix exercises every
check of the waterfall. Everything is deterministic in the seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import orjson

    def _dumps(value: Any) -> bytes:
        return orjson.dumps(value)

except ImportError:  # pragma: no cover - the peers' environment may lack orjson
    import json

    def _dumps(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


VARIANTS = ("episode", "turns")

# ---- the deployments' tools -------------------------------------------------------------------


def _fn(name: str, description: str, props: dict[str, Any], required: list[str], write: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required, "additionalProperties": False},
        },
    }
    if write:
        spec["side_effect"] = "write"
    return spec


def _s(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


_ORDER_ID = _s("The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.")
_USER_ID = _s("The user id, such as 'sara_doe_496'.")
_PAYMENT = _s("The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'.")
_ITEMS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "The item ids to be returned, each such as '1008292230'. There could be duplicate items in the list.",
}

_COMMON = [
    _fn(
        "find_user_id_by_email",
        "Find user id by email. If the user is not found, the function will return an error message.",
        {"email": _s("The email of the user, such as 'something@example.com'.")},
        ["email"],
    ),
    _fn(
        "find_user_id_by_name_zip",
        "Find user id by first name, last name, and zip code. If the user is not found, the function will return an error message. By default, find user id by email, and only call this function if the user is not found by email or cannot remember email.",
        {
            "first_name": _s("The first name of the customer, such as 'John'."),
            "last_name": _s("The last name of the customer, such as 'Doe'."),
            "zip": _s("The zip code of the customer, such as '12345'."),
        },
        ["first_name", "last_name", "zip"],
    ),
    _fn("get_user_details", "Get the details of a user, including their orders.", {"user_id": _USER_ID}, ["user_id"]),
    _fn("get_order_details", "Get the status and details of an order.", {"order_id": _ORDER_ID}, ["order_id"]),
    _fn(
        "get_product_details",
        "Get the inventory details of a product.",
        {"product_id": _s("The product id, such as '6086499569'. Be careful the product id is different from the item id.")},
        ["product_id"],
    ),
    _fn("get_item_details", "Get the inventory details of an item.", {"item_id": _s("The item id, such as '6086499569'.")}, ["item_id"]),
    _fn(
        "list_all_product_types",
        "List the name and product id of all product types. Each product type has a variety of different items with unique item ids and options.",
        {},
        [],
    ),
    _fn(
        "calculate",
        "Calculate the result of a mathematical expression.",
        {
            "expression": _s(
                "The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, operators (+, -, *, /), parentheses, and spaces."
            )
        },
        ["expression"],
    ),
    _fn(
        "transfer_to_human_agents",
        "Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user explicitly asks for a human agent, or the issue cannot be resolved with the available tools.",
        {"summary": _s("A summary of the user's issue.")},
        ["summary"],
    ),
    _fn(
        "cancel_pending_order",
        "Cancel a pending order. If the order is already processed or delivered, it cannot be cancelled. The agent needs to explain the cancellation detail and ask for explicit user confirmation (yes/no) to proceed.",
        {
            "order_id": _ORDER_ID,
            "reason": _s(
                "The reason for cancellation, which should be either 'no longer needed' or 'ordered by mistake'.",
                enum=["no longer needed", "ordered by mistake"],
            ),
        },
        ["order_id", "reason"],
        write=True,
    ),
    _fn(
        "return_delivered_order_items",
        "Return some items of a delivered order. The order status will be changed to 'return requested'. The agent needs to explain the return detail and ask for explicit user confirmation (yes/no) to proceed.",
        {"order_id": _ORDER_ID, "item_ids": _ITEMS, "payment_method_id": _PAYMENT},
        ["order_id", "item_ids", "payment_method_id"],
        write=True,
    ),
    _fn(
        "modify_user_address",
        "Modify the default address of a user. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.",
        {
            "user_id": _USER_ID,
            "address1": _s("The first line of the address, such as '123 Main St'."),
            "address2": _s("The second line of the address, such as 'Apt 1' or ''."),
            "city": _s("The city, such as 'San Francisco'."),
            "state": _s("The state, such as 'CA'."),
            "country": _s("The country, such as 'USA'."),
            "zip": _s("The zip code, such as '12345'."),
        },
        ["user_id", "address1", "address2", "city", "state", "country", "zip"],
        write=True,
    ),
]
_EXTRA = [
    _fn(
        "exchange_delivered_order_items",
        "Exchange items in a delivered order to new items of the same product type. For a delivered order, return or exchange can be only done once by the agent.",
        {
            "order_id": _ORDER_ID,
            "item_ids": _ITEMS,
            "new_item_ids": {**_ITEMS, "description": "The item ids to be exchanged for, each such as '1008292230'."},
            "payment_method_id": _PAYMENT,
        },
        ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
        write=True,
    ),
    _fn(
        "modify_pending_order_address",
        "Modify the shipping address of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.",
        {
            "order_id": _ORDER_ID,
            "address1": _s("The first line of the address."),
            "address2": _s("The second line of the address."),
            "city": _s("The city."),
            "state": _s("The state."),
            "country": _s("The country."),
            "zip": _s("The zip code."),
        },
        ["order_id", "address1", "address2", "city", "state", "country", "zip"],
        write=True,
    ),
    _fn(
        "modify_pending_order_payment",
        "Modify the payment method of a pending order.",
        {"order_id": _ORDER_ID, "payment_method_id": _PAYMENT},
        ["order_id", "payment_method_id"],
        write=True,
    ),
    _fn(
        "get_shipment_tracking",
        "Get the carrier tracking history of a shipped order.",
        {"order_id": _ORDER_ID, "include_events": {"type": "boolean", "default": True}},
        ["order_id"],
    ),
    _fn(
        "list_store_locations",
        "List the physical stores near a zip code.",
        {"zip": _s("The zip code."), "radius_miles": {"type": "integer", "default": 25}},
        ["zip"],
    ),
    _fn("check_gift_card_balance", "Return the balance of a gift card payment method.", {"payment_method_id": _PAYMENT}, ["payment_method_id"]),
]

# deployments: each is one tool set, repeated in every task line of that deployment
DEPLOYMENTS: dict[str, list[dict[str, Any]]] = {
    "retail-web": _COMMON + _EXTRA[:2],
    "retail-app": _COMMON + _EXTRA[:4],
    "retail-stores": _COMMON + _EXTRA,
    "retail-lite": _COMMON[:1] + _COMMON[2:],
}

POLICY = (
    "# Retail agent policy\n\nAs a retail agent, you can help users cancel or modify pending orders, return or exchange delivered orders, "
    "modify their default user address, and provide information about their own profile, orders, and related products.\n\n"
    "At the beginning of the conversation, you have to authenticate the user identity by locating their user id via email, or via name + zip code. "
    "This has to be done even when the user already provides the user id.\n\n"
    "Before taking any action that updates the database (cancel, modify, return, exchange), you must list the action details and obtain explicit "
    "user confirmation (yes) to proceed.\n\nYou should not make up any information or knowledge or procedures not provided by the user or the tools. "
    "You should at most make one tool call at a time, and if you take a tool call, you should not respond to the user at the same time.\n"
) * 2

_FIRST = ["Yusuf", "Sara", "Mei", "Omar", "Lena", "Raj", "Chen", "Ava", "Ivan", "Noor", "Lucas", "Fatima", "Jonas", "Amara", "Diego", "Hana"]
_LAST = ["Rossi", "Doe", "Kovacs", "Haddad", "Lopez", "Ito", "Garcia", "Moreau", "Singh", "Nowak", "Kim", "Silva", "Brown", "Okafor", "Muller", "Sato"]
_PRODUCTS = [
    ("Mechanical Keyboard", {"switch type": ["clicky", "linear", "tactile"], "backlight": ["RGB", "white", "none"], "size": ["full size", "80%"]}),
    ("Smart Thermostat", {"compatibility": ["Apple HomeKit", "Google Assistant", "Amazon Alexa"], "color": ["white", "black", "stainless steel"]}),
    ("Water Bottle", {"capacity": ["500ml", "750ml", "1000ml"], "material": ["glass", "plastic", "stainless steel"], "color": ["blue", "red", "black"]}),
    ("Hiking Boots", {"size": ["8", "9", "10", "11", "12"], "material": ["leather", "synthetic"], "waterproof": ["yes", "no"]}),
    ("Desk Lamp", {"color": ["black", "white", "silver"], "brightness": ["low", "medium", "high"], "power source": ["USB", "battery", "AC adapter"]}),
    (
        "Wireless Earbuds",
        {"color": ["black", "white", "blue"], "battery life": ["4 hours", "6 hours", "8 hours"], "water resistance": ["IPX4", "IPX7", "not resistant"]},
    ),
    (
        "Backpack",
        {
            "color": ["black", "grey", "green", "navy"],
            "size": ["small", "medium", "large"],
            "material": ["nylon", "polyester", "leather"],
            "compartment": ["laptop", "camera", "hydration"],
        },
    ),
    (
        "Coffee Maker",
        {"color": ["black", "stainless steel", "red"], "capacity": ["1 cup", "4 cups", "8 cups", "12 cups"], "type": ["drip", "espresso", "french press"]},
    ),
]
_STREETS = ["Broadway", "Main St", "Elm Street", "Oak Avenue", "Maple Drive", "Cedar Lane", "Hillcrest Road", "Lakeview Blvd"]
_CITIES = [("Philadelphia", "PA", "19122"), ("Austin", "TX", "78701"), ("Seattle", "WA", "98101"), ("Denver", "CO", "80202"), ("Chicago", "IL", "60601")]

AGENT_MODES = (
    ("correct", 50),
    ("wrong_reason", 8),  # a write with a wrong argument value
    ("skip_auth", 7),  # no identity lookup: a missing reference read
    ("extra_write", 7),  # cancels a second order too
    ("retry_after_error", 10),  # a tool error, then the same call succeeds
    ("wrong_answer", 8),
    ("wrong_tool", 5),  # return instead of cancel
    ("no_result", 5),  # a logged call whose result was never recorded
)


@dataclass
class Conversation:
    task_episode: dict[str, Any]
    task_turns: dict[str, Any]
    trajectory: dict[str, Any]
    reference_messages: list[dict[str, Any]] = field(default_factory=list)  # for the agentevals comparison


class _Ids:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def digits(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789") for _ in range(n))


def _user_profile(rng: random.Random, ids: _Ids, first: str, last: str, user_id: str, orders: list[str]) -> dict[str, Any]:
    city, state, zip_code = rng.choice(_CITIES)
    methods = {}
    for kind in rng.sample(["credit_card", "gift_card", "paypal"], rng.randint(2, 3)):
        pid = f"{kind}_{ids.digits(7)}"
        entry: dict[str, Any] = {"source": kind, "id": pid}
        if kind == "credit_card":
            entry |= {"brand": rng.choice(["visa", "mastercard"]), "last_four": ids.digits(4)}
        elif kind == "gift_card":
            entry["balance"] = round(rng.uniform(5, 500), 2)
        methods[pid] = entry
    return {
        "user_id": user_id,
        "name": {"first_name": first, "last_name": last},
        "address": {
            "address1": f"{rng.randint(1, 999)} {rng.choice(_STREETS)}",
            "address2": f"Suite {rng.randint(100, 999)}",
            "city": city,
            "country": "USA",
            "state": state,
            "zip": zip_code,
        },
        "email": f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.com",
        "payment_methods": methods,
        "orders": orders,
        "membership": rng.choice(["regular", "silver", "gold"]),
        "preferences": {"language": "en", "newsletter": rng.random() < 0.5, "sms_alerts": rng.random() < 0.3},
        "recent_activity": [
            {
                "at": f"2024-{rng.randint(1, 9):02d}-{rng.randint(10, 28)}",
                "event": rng.choice(["login", "viewed product", "added to cart", "contacted support", "updated payment method"]),
                "channel": rng.choice(["web", "app"]),
            }
            for _ in range(rng.randint(6, 12))
        ],
    }


def _item(rng: random.Random, ids: _Ids) -> dict[str, Any]:
    name, options = rng.choice(_PRODUCTS)
    return {
        "name": name,
        "product_id": ids.digits(10),
        "item_id": ids.digits(10),
        "price": round(rng.uniform(9, 400), 2),
        "quantity": rng.randint(1, 3),
        "options": {k: rng.choice(v) for k, v in options.items()},
        "description": f"{name} ({', '.join(rng.choice(v) for v in options.values())}), sold and shipped by the retail warehouse.",
    }


def _order(rng: random.Random, ids: _Ids, order_id: str, user: dict[str, Any], status: str) -> dict[str, Any]:
    items = [_item(rng, ids) for _ in range(rng.randint(3, 6))]
    method = next(iter(user["payment_methods"]))
    fulfillments = []
    if status in ("delivered", "processed", "shipped"):
        fulfillments.append(
            {"tracking_id": [_tracking(ids)], "item_ids": [i["item_id"] for i in items], "carrier": rng.choice(["UPS", "FedEx", "USPS", "DHL"])}
        )
    return {
        "order_id": order_id,
        "user_id": user["user_id"],
        "address": user["address"],
        "items": items,
        "fulfillments": fulfillments,
        "status": status,
        "payment_history": [{"transaction_type": "payment", "amount": round(sum(i["price"] for i in items), 2), "payment_method_id": method}],
        "created_at": f"2024-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T{rng.randint(10, 23)}:{rng.randint(10, 59)}:00Z",
        "notes": "Customer requested gift wrapping; leave at the front desk if nobody answers. " * rng.randint(1, 3),
    }


def _tracking(ids: _Ids) -> str:
    return "1Z" + "".join(ids.rng.choice("0123456789ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(16))


def _product(rng: random.Random, ids: _Ids, item: dict[str, Any]) -> dict[str, Any]:
    name = item["name"]
    options = dict(_PRODUCTS)[name]
    variants = {}
    for _ in range(rng.randint(16, 26)):
        vid = ids.digits(10)
        variants[vid] = {
            "item_id": vid,
            "options": {k: rng.choice(v) for k, v in options.items()},
            "available": rng.random() < 0.7,
            "price": round(rng.uniform(9, 400), 2),
            "stock": {"warehouse": rng.choice(["east", "west", "central"]), "quantity": rng.randint(0, 80)},
        }
    return {
        "name": name,
        "product_id": item["product_id"],
        "description": f"The {name.lower()} comes in several options; see the variants below. " * 2,
        "variants": variants,
    }


class _Dialogue:
    """Builds the OpenAI messages and, alongside, what the reference solution of each turn is."""

    def __init__(self, rng: random.Random, system: str):
        self.rng = rng
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        self.turns: list[dict[str, Any]] = []  # {query, reference_calls, gold}
        self.n_calls = 0

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})
        self.turns.append({"query": text, "reference_calls": [], "gold": None})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def reference(self, name: str, arguments: dict[str, Any], depends_on: list[str] | None = None) -> str:
        ref_id = f"r{sum(len(t['reference_calls']) for t in self.turns)}"
        call: dict[str, Any] = {"id": ref_id, "name": name, "arguments": arguments}
        if depends_on:
            call["depends_on"] = depends_on
        self.turns[-1]["reference_calls"].append(call)
        return ref_id

    def calls(self, calls: list[tuple[str, dict[str, Any], Any]], *, record: bool = True) -> None:
        """One assistant message with these tool calls, then one tool message per call."""
        tool_calls = []
        results = []
        for name, arguments, result in calls:
            self.n_calls += 1
            call_id = f"call_{self.rng.getrandbits(64):016x}"
            tool_calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": _dumps(arguments).decode()}})
            results.append((call_id, result))
        self.messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
        if not record:
            return
        for call_id, result in results:
            if result is _NO_RESULT:
                continue
            content = result if isinstance(result, str) else _dumps(result).decode()
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})


_NO_RESULT = object()


def conversation(i: int, rng: random.Random) -> Conversation:
    """One support conversation, its two task variants and the reference messages."""
    ids = _Ids(rng)
    deployment = list(DEPLOYMENTS)[i % len(DEPLOYMENTS)]
    tools = DEPLOYMENTS[deployment]
    tool_names = {t["function"]["name"] for t in tools}
    mode = rng.choices([m for m, _ in AGENT_MODES], [w for _, w in AGENT_MODES])[0]
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    user_id = f"{first.lower()}_{last.lower()}_{ids.digits(4)}"
    order_ids = [f"#W{ids.digits(7)}" for _ in range(rng.randint(2, 4))]
    user = _user_profile(rng, ids, first, last, user_id, order_ids)
    pending = _order(rng, ids, order_ids[0], user, "pending")
    shipped = _order(rng, ids, order_ids[1], user, "shipped")
    product = _product(rng, ids, pending["items"][0])
    reason = rng.choice(["no longer needed", "ordered by mistake"])
    tracking = shipped["fulfillments"][0]["tracking_id"][0]
    carrier = shipped["fulfillments"][0]["carrier"]

    d = _Dialogue(rng, POLICY)
    # turn 1: the request
    d.user(f"Hi! I placed order {pending['order_id']} a few days ago and I'd like to cancel it, the {pending['items'][0]['name'].lower()} is {reason}.")
    d.say("I can help you with that. To get started, I need to verify your identity. Could you please provide your email address?")
    # turn 2: identity
    d.user(f"Sure, it's {user['email']}.")
    if mode != "skip_auth":
        d.calls([("find_user_id_by_email", {"email": user["email"]}, user_id)])
    auth = d.reference("find_user_id_by_email", {"email": user["email"]})
    d.calls([("get_user_details", {"user_id": user_id}, user)])
    d.reference("get_user_details", {"user_id": user_id}, [auth])
    if mode == "retry_after_error":
        d.calls([("get_order_details", {"order_id": pending["order_id"]}, "Error: upstream timeout while reading the orders database")])
    d.calls([("get_order_details", {"order_id": pending["order_id"]}, pending), ("get_product_details", {"product_id": product["product_id"]}, product)])
    lookup_ref = d.reference("get_order_details", {"order_id": pending["order_id"]}, [auth])
    total = pending["payment_history"][0]["amount"]
    d.say(
        f"Thank you, {first}. Order {pending['order_id']} is pending with {len(pending['items'])} items totalling ${total:.2f}. "
        f"I will cancel it with the reason '{reason}'; the refund goes to the original payment method. Do you confirm (yes/no)?"
    )
    # turn 3: confirmation and the write
    d.user("Yes, please go ahead.")
    write_args = {"order_id": pending["order_id"], "reason": reason}
    if mode == "wrong_reason":
        write_args = {"order_id": pending["order_id"], "reason": "ordered by mistake" if reason == "no longer needed" else "no longer needed"}
    write_name = "return_delivered_order_items" if mode == "wrong_tool" else "cancel_pending_order"
    if mode == "wrong_tool":
        write_args = {
            "order_id": pending["order_id"],
            "item_ids": [it["item_id"] for it in pending["items"]],
            "payment_method_id": next(iter(user["payment_methods"])),
        }
    cancelled = dict(pending, status="cancelled", cancel_reason=write_args.get("reason"))
    d.calls([(write_name, write_args, cancelled)])
    d.reference("cancel_pending_order", {"order_id": pending["order_id"], "reason": reason}, [lookup_ref])
    if mode == "extra_write":
        d.calls([("cancel_pending_order", {"order_id": shipped["order_id"], "reason": reason}, dict(shipped, status="cancelled"))])
    d.say(f"Your order {pending['order_id']} has been cancelled. The refund of ${total:.2f} will arrive in 5 to 7 business days.")
    # a product question: a big read, no write
    asked = pending["items"][1]
    d.user(f"Before you go: is the {asked['name'].lower()} from that order still available in another option? I might buy it again later.")
    other = _product(rng, ids, asked)
    d.calls([("get_product_details", {"product_id": asked["product_id"]}, other)])
    d.reference("get_product_details", {"product_id": asked["product_id"]})
    d.calls([("calculate", {"expression": f"{asked['price']} * 0.9"}, f"{asked['price'] * 0.9:.2f}")])
    available = sum(1 for v in other["variants"].values() if v["available"])
    d.say(
        f"Yes: {available} options of the {asked['name'].lower()} are in stock; with your membership discount it would cost about ${asked['price'] * 0.9:.2f}."
    )
    # turn 5: a follow-up question with a checkable answer
    d.user(f"Great, thanks. One more thing: my other order {shipped['order_id']} hasn't arrived yet. What's its tracking number?")
    if "get_shipment_tracking" in tool_names and rng.random() < 0.25:
        lookup = (
            "get_shipment_tracking",
            {"order_id": shipped["order_id"]},
            {
                "order_id": shipped["order_id"],
                "carrier": carrier,
                "tracking_id": tracking,
                "events": [{"at": f"2024-10-0{k}", "where": rng.choice(_CITIES)[0], "what": "in transit"} for k in range(1, 6)],
            },
        )
    else:
        lookup = ("get_order_details", {"order_id": shipped["order_id"]}, shipped)
    d.calls([(lookup[0], lookup[1], _NO_RESULT if mode == "no_result" else lookup[2])])
    d.reference("get_order_details", {"order_id": shipped["order_id"]})
    answer_tracking = tracking if mode != "wrong_answer" else _tracking(ids)
    d.say(f"Order {shipped['order_id']} shipped with {carrier}; its tracking number is {answer_tracking}. It should arrive within two business days.")
    d.turns[-1]["gold"] = tracking
    d.user("Perfect, that's all I needed. Have a great day!")
    d.say("You're welcome! Have a great day.")

    task_id = f"support-{i:07d}"
    metadata = {"capability": "2", "domain": deployment, "hop_count": sum(len(t["reference_calls"]) for t in d.turns), "hop_types": ["API"]}
    all_calls = [c for t in d.turns for c in t["reference_calls"]]
    task_episode = {
        "task_id": task_id,
        "question": d.turns[0]["query"],
        "tools": tools,
        "reference_calls": all_calls,
        "required_content": [tracking],  # what the agent must tell the customer somewhere (tau2's communicate_info)
        "policy": {"text": POLICY[:400], "max_calls": 12},
        "metadata": metadata,
    }
    task_turns = {
        "task_id": task_id,
        "tools": tools,
        "turns": [
            {
                "turn_id": str(k + 1),
                "query": t["query"],
                "reference_calls": [{kk: vv for kk, vv in c.items() if kk != "depends_on"} for c in t["reference_calls"]],
            }
            | ({"gold_answer": t["gold"]} if t["gold"] is not None else {})
            for k, t in enumerate(d.turns)
        ],
        "policy": {"text": POLICY[:400], "max_calls": 12},
        "metadata": metadata,
    }
    trajectory = {
        "task_id": task_id,
        "trajectory_id": f"{task_id}/run-0",
        "agent": f"support-agent-{i % 3}",
        "messages": d.messages,
        "usage": {"prompt_tokens": 5000 + 37 * len(d.messages), "completion_tokens": 40 * len(d.messages)},
    }
    reference = [{"role": "user", "content": d.turns[0]["query"]}] + [
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": c["name"], "arguments": _dumps(c["arguments"]).decode()}}]} for c in all_calls
    ]
    return Conversation(task_episode=task_episode, task_turns=task_turns, trajectory=trajectory, reference_messages=reference)


def conversations(n: int, seed: int = 0) -> Iterator[Conversation]:
    rng = random.Random(seed)
    for i in range(n):
        yield conversation(i, rng)


def generate(out: Path, n: int, seed: int = 0) -> dict[str, Path]:
    """Write ``tasks-episode.jsonl``, ``tasks-turns.jsonl``, ``trajectories.jsonl`` and
    ``reference.jsonl`` (agentevals' reference messages) under ``out``; reuse them when present."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "episode": out / "tasks-episode.jsonl",
        "turns": out / "tasks-turns.jsonl",
        "trajectories": out / "trajectories.jsonl",
        "reference": out / "reference.jsonl",
    }
    done = out / ".complete"
    if done.exists() and done.read_text() == f"{n} {seed}":
        return paths
    with ExitStack() as stack:
        handles = {k: stack.enter_context(open(p, "wb")) for k, p in paths.items()}
        for conv in conversations(n, seed):
            handles["episode"].write(_dumps(conv.task_episode) + b"\n")
            handles["turns"].write(_dumps(conv.task_turns) + b"\n")
            handles["trajectories"].write(_dumps(conv.trajectory) + b"\n")
            handles["reference"].write(_dumps({"task_id": conv.task_episode["task_id"], "messages": conv.reference_messages}) + b"\n")
    done.write_text(f"{n} {seed}")
    return paths


if __name__ == "__main__":  # pragma: no cover
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name, path in generate(args.out, args.n, args.seed).items():
        print(name, path, f"{path.stat().st_size / 2**20:.1f} MiB")
