"""Task generators for the four VAKRA capabilities, seeded and executed against the live domains."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from data.build._plan import Call, PlanRejected, TaskPlan, TurnPlan, to_task
from pipelines.env import Environment


def table_rows(env: Environment, table: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{(env.folder / 'db.sqlite').as_posix()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')]
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# Capability 1: API chaining with slot-filling tools and labels
# ---------------------------------------------------------------------------------------------
SLOT_TABLES = {
    "olympics": [
        ("athletes", "athletes", ["country", "sport", "gender"], ["birth_year"], "name", "athlete_id"),
        ("medals", "medals", ["medal", "games_year"], [], "medal_id", "medal_id"),
    ],
    "movies": [("movies", "movies", ["genre", "release_year"], ["rating", "box_office_musd", "runtime_min"], "title", "movie_id")],
    "flights": [
        ("flights", "flights", ["airline_code", "origin", "destination"], ["price", "duration_min", "seats_left"], "flight_no", "flight_no"),
        ("bookings", "bookings", ["seat_class", "status", "flight_no"], ["checked_bags"], "passenger", "booking_id"),
    ],
    "hospital": [
        ("appointments", "appointments", ["doctor_id", "status", "date"], [], "appointment_id", "appointment_id"),
        ("doctors", "doctors", ["department_id"], ["years_experience"], "name", "doctor_id"),
    ],
}
NUM_WORD = {
    "birth_year": "birth year",
    "rating": "rating",
    "box_office_musd": "box office (million USD)",
    "runtime_min": "runtime in minutes",
    "price": "price",
    "duration_min": "flight duration in minutes",
    "seats_left": "seats left",
    "checked_bags": "checked bags",
    "years_experience": "years of experience",
}


def _filter_call(i: int, src: str, col: str, value: Any, rng: random.Random, condition: str = "equal") -> Call:
    if condition == "equal" and rng.random() < 0.5:
        return Call("select_data_equal_to", {"data_source": f"${src}.data$", "key_name": col, "value": value}, f"s{i}", [src], f"s{i}")
    return Call("filter_data", {"data_source": f"${src}.data$", "key_name": col, "value": value, "condition": condition}, f"s{i}", [src], f"s{i}")


def cap1_plan(env: Environment, rng: random.Random, n: int) -> TaskPlan:
    table, noun, cats, nums, name_col, pk = rng.choice(SLOT_TABLES[env.name])
    rows = table_rows(env, table)
    row = rng.choice(rows)
    col = rng.choice(cats)
    value = row[col]
    calls = [Call("get_data", {"table": table}, "s1", [], "s1")]
    kinds = ["count", "count2", "distinct", "list", "single"] + (["mean", "argmax", "range_count", "marathon"] if nums else [])
    kind = kinds[n % len(kinds)]
    if kind == "single":  # the shortest chain: one call answers it (get_data reports its row count)
        return _cap1(env, n, f"How many records does the {noun} data hold?", calls[:1], lambda r: r[-1]["row_count"], "number")
    where = f"{col.replace('_', ' ')} is {value}"  # phrased as "whose <column> is <value>"
    calls.append(_filter_call(2, "s1", col, value, rng))
    if kind == "count" and n % 4 == 0:  # the shortest chain: load, then aggregate the whole table
        calls = calls[:1] + [Call("aggregate_data", {"data_source": "$s1.data$", "key_name": col, "aggregation_type": "count_distinct"}, "s2", ["s1"], "s2")]
        return _cap1(env, n, f"How many distinct values of {col.replace('_', ' ')} appear in the {noun} data?", calls, lambda r: r[-1]["data"], "number")
    if kind == "count":
        calls.append(Call("aggregate_data", {"data_source": "$s2.data$", "key_name": pk, "aggregation_type": "count"}, "s3", ["s2"], "s3"))
        return _cap1(env, n, f"Using the {noun} data, how many {noun} are there whose {where}?", calls, lambda r: r[-1]["data"], "number")
    if kind == "count2":
        other = [c for c in cats if c != col]
        if not other:
            raise PlanRejected("needs two categorical columns")
        col2 = rng.choice(other)
        calls.append(_filter_call(3, "s2", col2, row[col2], rng))
        calls.append(Call("aggregate_data", {"data_source": "$s3.data$", "key_name": pk, "aggregation_type": "count"}, "s4", ["s3"], "s4"))
        q = f"How many {noun} are there whose {where} and whose {col2.replace('_', ' ')} is {row[col2]}?"
        return _cap1(env, n, q, calls, lambda r: r[-1]["data"], "number")
    if kind == "distinct":
        other = [c for c in cats if c != col] or cats
        col2 = rng.choice(other)
        calls.append(Call("aggregate_data", {"data_source": "$s2.data$", "key_name": col2, "aggregation_type": "count_distinct"}, "s3", ["s2"], "s3"))
        q = f"Among the {noun} whose {where}, how many distinct values of {col2.replace('_', ' ')} are there?"
        return _cap1(env, n, q, calls, lambda r: r[-1]["data"], "number")
    if kind == "list":
        other = [c for c in cats if c != col]
        if other:
            col2 = rng.choice(other)
            calls.append(_filter_call(3, "s2", col2, row[col2], rng))
            src, i = "s3", 4
            q = f"List the {name_col.replace('_', ' ')} of every {noun[:-1] if noun.endswith('s') else noun} whose {where} and {col2.replace('_', ' ')} is {row[col2]}."
        else:
            src, i = "s2", 3
            q = f"List the {name_col.replace('_', ' ')} of every {noun[:-1]} whose {where}."
        calls.append(Call("select_columns", {"data_source": f"${src}.data$", "columns": [name_col]}, f"s{i}", [src], f"s{i}"))
        calls.append(Call("retrieve_data", {"data_source": f"$s{i}.data$", "key_name": name_col, "distinct": True}, f"s{i + 1}", [f"s{i}"], f"s{i + 1}"))
        return _cap1(env, n, q, calls, lambda r: sorted(r[-1]["data"], key=str) if 0 < len(r[-1]["data"]) <= 8 else None, "list", name_col)
    num = rng.choice(nums)
    if kind == "mean":
        calls.append(Call("aggregate_data", {"data_source": "$s2.data$", "key_name": num, "aggregation_type": "mean"}, "s3", ["s2"], "s3"))
        q = f"What is the average {NUM_WORD[num]} of {noun} whose {where}? Round to two decimals."
        return _cap1(env, n, q, calls, lambda r: round(r[-1]["data"], 2), "number")
    if kind == "argmax":
        calls.append(Call("sort_data", {"data_source": "$s2.data$", "key_name": num, "ascending": False, "limit": 1}, "s3", ["s2"], "s3"))
        calls.append(Call("retrieve_data", {"data_source": "$s3.data$", "key_name": name_col}, "s4", ["s3"], "s4"))
        q = f"Among {noun} whose {where}, which one has the highest {NUM_WORD[num]}? Give its {name_col.replace('_', ' ')}."

        def top(r: list[Any]) -> Any:
            return r[-1]["data"][0] if r[-1]["data"] else None

        return _cap1(env, n, q, calls, top, "text", name_col)
    if kind == "marathon":  # VAKRA's longest chains: twelve slot-filling calls, each on the previous result
        values = sorted(r[num] for r in rows if r[col] == value)
        lo, hi = values[len(values) // 5], values[(4 * len(values)) // 5]
        steps = [
            ("filter_data", {"key_name": num, "value": lo, "condition": "greater_or_equal"}),
            ("filter_data", {"key_name": num, "value": hi, "condition": "less_or_equal"}),
            ("sort_data", {"key_name": num, "ascending": False}),
            ("select_columns", {"columns": [name_col, num, col]}),
            ("select_data_equal_to", {"key_name": col, "value": value}),
            ("sort_data", {"key_name": num, "ascending": True}),
            ("sort_data", {"key_name": num, "ascending": False, "limit": 5}),
            ("select_columns", {"columns": [name_col, num]}),
            ("sort_data", {"key_name": num, "ascending": False, "limit": 3}),
            ("retrieve_data", {"key_name": name_col}),
        ]
        for i, (tool, args) in enumerate(steps, start=3):
            calls.append(Call(tool, {"data_source": f"$s{i - 1}.data$", **args}, f"s{i}", [f"s{i - 1}"], f"s{i}"))
        q = (
            f"Among {noun} whose {where} and whose {NUM_WORD[num]} is between {lo} and {hi}, list the {name_col.replace('_', ' ')} "
            f"of the three with the highest {NUM_WORD[num]}."
        )
        return _cap1(
            env, n, q, calls, lambda r: r[-1]["data"] if len(r[-1]["data"]) == 3 and len(set(map(str, r[-1]["data"]))) == 3 else None, "list", name_col
        )
    if n % 3 == 0:  # a long chain: filter, threshold, sort, project, cut, read
        values = sorted(r[num] for r in rows if r[col] == value)
        threshold = values[len(values) // 3]
        calls.append(
            Call("filter_data", {"data_source": "$s2.data$", "key_name": num, "value": threshold, "condition": "greater_or_equal"}, "s3", ["s2"], "s3")
        )
        calls.append(Call("sort_data", {"data_source": "$s3.data$", "key_name": num, "ascending": False}, "s4", ["s3"], "s4"))
        calls.append(Call("select_columns", {"data_source": "$s4.data$", "columns": [name_col, num]}, "s5", ["s4"], "s5"))
        calls.append(Call("sort_data", {"data_source": "$s5.data$", "key_name": num, "ascending": False, "limit": 3}, "s6", ["s5"], "s6"))
        calls.append(Call("retrieve_data", {"data_source": "$s6.data$", "key_name": name_col}, "s7", ["s6"], "s7"))
        q = (
            f"Among {noun} whose {where} and whose {NUM_WORD[num]} is at least {threshold}, list the {name_col.replace('_', ' ')} "
            f"of the three with the highest {NUM_WORD[num]}."
        )
        return _cap1(
            env, n, q, calls, lambda r: r[-1]["data"] if len(r[-1]["data"]) == 3 and len(set(map(str, r[-1]["data"]))) == 3 else None, "list", name_col
        )
    # range_count: numeric threshold then count, then max of another numeric column
    values = sorted(r[num] for r in rows if r[col] == value)
    threshold = values[len(values) // 2]
    calls.append(Call("filter_data", {"data_source": "$s2.data$", "key_name": num, "value": threshold, "condition": "greater_or_equal"}, "s3", ["s2"], "s3"))
    calls.append(Call("sort_data", {"data_source": "$s3.data$", "key_name": num, "ascending": True}, "s4", ["s3"], "s4"))
    calls.append(Call("aggregate_data", {"data_source": "$s4.data$", "key_name": num, "aggregation_type": "min"}, "s5", ["s4"], "s5"))
    calls.append(Call("aggregate_data", {"data_source": "$s4.data$", "key_name": pk, "aggregation_type": "count"}, "s6", ["s4"], "s6"))
    q = f"How many {noun} whose {where} have a {NUM_WORD[num]} of at least {threshold}?"
    return _cap1(env, n, q, calls, lambda r: r[-1]["data"], "number")


SLOT_TOOLS = ["aggregate_data", "filter_data", "get_data", "retrieve_data", "select_columns", "select_data_equal_to", "sort_data"]


def _cap1(env: Environment, n: int, query: str, calls: list[Call], answer, kind: str, column: str | None = None) -> TaskPlan:
    return TaskPlan(f"c1-{env.name}-{n:03d}", "1", env.name, [TurnPlan(query, calls, answer, kind, "API", column)], hop_count=len(calls), tool_names=SLOT_TOOLS)


def domain_api_tools(env: Environment) -> list[str]:
    """The endpoint tools given with capability-3/4 tasks (retail: record look-ups, writes, retriever only)."""
    names = []
    for spec in env.tools:
        if spec.name in SLOT_TOOLS:
            continue
        if env.name == "retail" and not (spec.name.startswith(("get_", "lookup_")) or spec.side_effect == "write" or spec.source == "rag"):
            continue
        names.append(spec.name)
    return names


# ---------------------------------------------------------------------------------------------
# Capability 2: tool selection among 100+ retail endpoints
# ---------------------------------------------------------------------------------------------
def cap2_plan(env: Environment, rng: random.Random, n: int) -> TaskPlan:
    customers, orders = table_rows(env, "customers"), table_rows(env, "orders")
    products, stores = table_rows(env, "products"), table_rows(env, "stores")
    cats = sorted({p["category"] for p in products})
    kind = n % 12
    tid = f"c2-retail-{n:03d}"

    def one(query: str, name: str, args: dict[str, Any], answer, kind_: str = "number", column: str | None = None, tags: dict | None = None) -> TaskPlan:
        return TaskPlan(tid, "2", "retail", [TurnPlan(query, [Call(name, args, "c1")], answer, kind_, "API", column)], hop_count=1, tags=tags or {})

    if kind == 0:
        s = rng.choice(["shipped", "delivered", "cancelled", "returned", "placed"])
        return one(f"How many orders currently have the status '{s}'?", "count_orders_by_status", {"status": s}, lambda r: r[0]["count"])
    if kind == 1:
        c = rng.choice(customers)["city"]
        return one(f"How many customers live in {c}?", "count_customers_by_city", {"city": c}, lambda r: r[0]["count"])
    if kind == 2:
        c = rng.choice(customers)["city"]
        return one(f"What is the total revenue of orders placed by customers from {c}?", "total_revenue_by_customer_city", {"customer_city": c}, lambda r: r[0])
    if kind == 3:
        s = rng.choice(stores)["store_id"]
        return one(f"What is the average order value at store {s}?", "average_order_value_by_store_id", {"store_id": s}, lambda r: r[0])
    if kind == 4:
        cat = rng.choice(cats)
        return one(
            f"What are the 3 best-selling {cat} products? Give their names.",
            f"top_selling_{cat}_products",
            {"limit": 3},
            lambda r: sorted(x["name"] for x in r[0]),
            "list",
            "name",
        )
    if kind == 5:
        cat = rng.choice(cats)
        return one(f"Which is the cheapest product in the {cat} category?", f"cheapest_{cat}_products", {"limit": 1}, lambda r: r[0][0]["name"], "text", "name")
    if kind == 6:
        cat = rng.choice(cats)
        return one(f"How many {cat} units do we have in stock in total?", f"{cat}_stock_level", {}, lambda r: r[0]["units_in_stock"])
    if kind == 7:
        reg = rng.choice(["east", "north", "south", "west"])
        return one(f"What was the total revenue of stores in the {reg} region?", f"{reg}_region_sales_summary", {}, lambda r: r[0]["revenue"])
    if kind == 8:
        m = rng.choice(orders)["order_month"]
        return one(f"What was the largest single order total in {m}?", "max_order_total_by_order_month", {"order_month": m}, lambda r: r[0])
    if kind == 9:
        s = rng.choice(stores)
        return one(
            f"Who is the manager of store {s['store_id']}?", "get_store_details", {"store_id": s["store_id"]}, lambda r: r[0]["manager"], "text", "manager"
        )
    if kind == 10:
        tier = rng.choice(["bronze", "silver", "gold"])
        return one(
            f"What is the average order value of {tier}-tier customers?", "average_order_value_by_customer_tier", {"customer_tier": tier}, lambda r: r[0]
        )
    p = rng.choice(products)
    q = rng.choice([10, 20, 25])
    return one(
        f"Restock product {p['product_id']} with {q} units and tell me its new stock level.",
        "restock_product",
        {"product_id": p["product_id"], "quantity": q},
        lambda r: r[0]["record"]["stock"],
        tags={"write": True},
    )


# ---------------------------------------------------------------------------------------------
# Capability 3: multi-hop chains over endpoint tools (1-5 hops)
# ---------------------------------------------------------------------------------------------
def _chain(specs: list[tuple[str, dict[str, Any]]]) -> list[Call]:
    calls = []
    for i, (name, args) in enumerate(specs, start=1):
        calls.append(Call(name, args, f"h{i}", [f"h{i - 1}"] if i > 1 else []))
    return calls


def cap3_plan(env: Environment, rng: random.Random, n: int) -> TaskPlan | None:
    """Returns a plan whose later arguments are filled from earlier results (resolved at build)."""
    session = env.session()

    def run(name: str, args: dict[str, Any]) -> Any:
        res = session.execute(name, args)
        if not res.ok or res.result in (None, []):
            raise PlanRejected(f"{name} {args}: {res.error or 'empty'}")
        return res.result

    tid = f"c3-{env.name}-{n:03d}"
    kind = n % 4
    turn: TurnPlan
    if env.name == "olympics":
        athletes = table_rows(env, "athletes")
        medalled = sorted({m["athlete_id"] for m in table_rows(env, "medals")})
        if kind == 0:
            year = rng.choice([g["games_year"] for g in table_rows(env, "games")])
            specs = [("get_games_by_year", {"year": year})]
            turn = TurnPlan(f"Which city hosted the {year} Summer Games?", _chain(specs), lambda r: r[-1]["host_city"], "text", answer_column="host_city")
        elif kind == 1:
            medal = rng.choice(["gold", "silver", "bronze"])
            top = run("get_athlete_most_medals", {"medal": medal})
            specs = [("get_athlete_most_medals", {"medal": medal}), ("count_medals_by_country", {"country": top["country"]})]
            turn = TurnPlan(
                f"How many medals in total have athletes from the country of the athlete with the most {medal} medals won?",
                _chain(specs),
                lambda r: r[-1]["medal_count"],
            )
        elif kind == 2:
            pick = rng.choice(medalled)
            a = next(x for x in athletes if x["athlete_id"] == pick)
            medals = run("get_athlete_medals", {"athlete_id": a["athlete_id"]})
            specs = [
                ("get_athlete_by_name", {"name": a["name"]}),
                ("get_athlete_medals", {"athlete_id": a["athlete_id"]}),
                ("get_games_by_year", {"year": medals[0]["games_year"]}),
            ]
            turn = TurnPlan(
                f"In which city did {a['name']} win their first Olympic medal?", _chain(specs), lambda r: r[-1]["host_city"], "text", answer_column="host_city"
            )
        else:
            a = rng.choice(athletes)
            specs = [("get_athlete_by_name", {"name": a["name"]}), ("count_athletes_by_sport", {"sport": a["sport"]})]
            turn = TurnPlan(f"How many athletes compete in the same sport as {a['name']}?", _chain(specs), lambda r: r[-1]["athlete_count"])
    elif env.name == "movies":
        m = rng.choice(table_rows(env, "movies"))
        if kind == 0:
            specs = [("get_movie_by_title", {"title": m["title"]}), ("get_director", {"director_id": m["director_id"]})]
            turn = TurnPlan(f"Who directed {m['title']}?", _chain(specs), lambda r: r[-1]["name"], "text", answer_column="name")
        elif kind == 1:
            cast = run("get_movie_cast", {"movie_id": m["movie_id"]})
            specs = [
                ("get_movie_by_title", {"title": m["title"]}),
                ("get_movie_cast", {"movie_id": m["movie_id"]}),
                ("get_actor_by_name", {"name": cast[0]["name"]}),
            ]
            turn = TurnPlan(f"In which year was the lead actor of {m['title']} born?", _chain(specs), lambda r: r[-1]["birth_year"])
        elif kind == 2:
            cast = run("get_movie_cast", {"movie_id": m["movie_id"]})
            specs = [
                ("get_movie_by_title", {"title": m["title"]}),
                ("get_movie_cast", {"movie_id": m["movie_id"]}),
                ("get_actor_filmography", {"actor_id": cast[0]["actor_id"]}),
            ]
            turn = TurnPlan(f"How many movies in the catalogue feature the lead actor of {m['title']}?", _chain(specs), lambda r: len(r[-1]))
        else:
            cast = run("get_movie_cast", {"movie_id": m["movie_id"]})
            films = run("get_actor_filmography", {"actor_id": cast[0]["actor_id"]})
            first = run("get_movie_by_title", {"title": films[0]["title"]})
            specs = [
                ("get_movie_by_title", {"title": m["title"]}),
                ("get_movie_cast", {"movie_id": m["movie_id"]}),
                ("get_actor_filmography", {"actor_id": cast[0]["actor_id"]}),
                ("get_movie_by_title", {"title": films[0]["title"]}),
                ("get_director", {"director_id": first["director_id"]}),
            ]
            turn = TurnPlan(
                f"Which country is the director of the earliest film of {m['title']}'s lead actor from?",
                _chain(specs),
                lambda r: r[-1]["country"],
                "text",
                answer_column="country",
            )
    elif env.name == "flights":
        b = rng.choice(table_rows(env, "bookings"))
        f = run("get_flight", {"flight_no": b["flight_no"]})
        if kind == 0:
            specs = [
                ("get_booking", {"booking_id": b["booking_id"]}),
                ("get_flight", {"flight_no": b["flight_no"]}),
                ("get_airline", {"airline_code": f["airline_code"]}),
            ]
            turn = TurnPlan(
                f"In which country is the airline of booking {b['booking_id']} based?",
                _chain(specs),
                lambda r: r[-1]["country"],
                "text",
                answer_column="country",
            )
        elif kind == 1:
            specs = [
                ("get_booking", {"booking_id": b["booking_id"]}),
                ("get_flight", {"flight_no": b["flight_no"]}),
                ("get_airport", {"iata": f["destination"]}),
            ]
            turn = TurnPlan(
                f"Which city does the passenger of booking {b['booking_id']} fly to?", _chain(specs), lambda r: r[-1]["city"], "text", answer_column="city"
            )
        elif kind == 2:
            origin = rng.choice(["PEK", "PVG", "OSL", "NBO", "MAD", "YYZ", "CDG", "NRT"])
            cheap = run("cheapest_flight_from", {"origin": origin})
            specs = [("cheapest_flight_from", {"origin": origin}), ("get_airport", {"iata": cheap["destination"]})]
            turn = TurnPlan(f"Which city does the cheapest flight from {origin} go to?", _chain(specs), lambda r: r[-1]["city"], "text", answer_column="city")
        else:
            specs = [("get_booking", {"booking_id": b["booking_id"]}), ("count_bookings_on_flight", {"flight_no": b["flight_no"]})]
            turn = TurnPlan(f"How many active bookings are there on the flight of booking {b['booking_id']}?", _chain(specs), lambda r: r[-1]["bookings"])
    elif env.name == "hospital":
        a = rng.choice(table_rows(env, "appointments"))
        doc = run("get_doctor", {"doctor_id": a["doctor_id"]})
        if kind == 0:
            specs = [
                ("get_appointment", {"appointment_id": a["appointment_id"]}),
                ("get_doctor", {"doctor_id": a["doctor_id"]}),
                ("get_department_floor", {"department": doc["department"]}),
            ]
            turn = TurnPlan(f"On which floor is the department of the doctor for appointment {a['appointment_id']}?", _chain(specs), lambda r: r[-1]["floor"])
        elif kind == 1:
            appts = run("list_patient_appointments", {"patient_id": a["patient_id"]})
            first_doc = run("get_doctor", {"doctor_id": appts[0]["doctor_id"]})
            specs = [("list_patient_appointments", {"patient_id": a["patient_id"]}), ("get_doctor", {"doctor_id": appts[0]["doctor_id"]})]
            turn = TurnPlan(
                f"Which department is the doctor of patient {a['patient_id']}'s earliest appointment in?",
                _chain(specs),
                lambda r: r[-1]["department"],
                "text",
                answer_column="name",
            )
            del first_doc
        elif kind == 2:
            specs = [("get_patient", {"patient_id": a["patient_id"]})]
            turn = TurnPlan(f"In which year was patient {a['patient_id']} born?", _chain(specs), lambda r: r[-1]["birth_year"])
        else:
            specs = [
                ("get_appointment", {"appointment_id": a["appointment_id"]}),
                ("count_doctor_appointments", {"doctor_id": a["doctor_id"], "status": "completed"}),
            ]
            turn = TurnPlan(
                f"How many completed appointments does the doctor of appointment {a['appointment_id']} have?", _chain(specs), lambda r: r[-1]["appointments"]
            )
    elif env.name == "retail":
        o = rng.choice(table_rows(env, "orders"))
        if kind % 2 == 0:
            specs = [("get_order_details", {"order_id": o["order_id"]}), ("get_customer_details", {"customer_id": o["customer_id"]})]
            turn = TurnPlan(
                f"Which city does the customer who placed order {o['order_id']} live in?", _chain(specs), lambda r: r[-1]["city"], "text", answer_column="city"
            )
        else:
            specs = [("get_order_details", {"order_id": o["order_id"]}), ("get_store_details", {"store_id": o["store_id"]})]
            turn = TurnPlan(
                f"Who manages the store where order {o['order_id']} was placed?", _chain(specs), lambda r: r[-1]["manager"], "text", answer_column="manager"
            )
    else:
        return None
    return TaskPlan(tid, "3", env.name, [turn], hop_count=len(turn.calls), tool_names=domain_api_tools(env))


# ---------------------------------------------------------------------------------------------
# Capability 3, branching: independent look-ups (a DAG with parallel branches, some with a join)
# ---------------------------------------------------------------------------------------------
def _fan(specs: list[tuple[str, dict[str, Any], list[str]]]) -> list[Call]:
    """Calls ``f1, f2, ...`` with explicit dependencies (ids of earlier calls)."""
    return [Call(name, args, f"f{i}", deps) for i, (name, args, deps) in enumerate(specs, start=1)]


def _two(rows: list[dict[str, Any]], key: str, rng: random.Random) -> tuple[Any, Any]:
    values = sorted({r[key] for r in rows if r[key] is not None}, key=str)
    if len(values) < 2:
        raise PlanRejected(f"fewer than two distinct {key}")
    a, b = rng.sample(values, 2)
    return a, b


def fanout_plan(env: Environment, rng: random.Random, n: int) -> TaskPlan | None:
    """Questions that need two independent look-ups (one round if issued together), some joined
    by a third call that depends on both; the answer compares or adds the two results."""
    session = env.session()

    def run(name: str, args: dict[str, Any]) -> Any:
        res = session.execute(name, args)
        if not res.ok or res.result in (None, []):
            raise PlanRejected(f"{name} {args}: {res.error or 'empty'}")
        return res.result

    kind = n % 3
    tid = f"c3b-{env.name}-{n:03d}"
    turn: TurnPlan
    if env.name == "olympics":
        athletes = table_rows(env, "athletes")
        if kind == 0:
            a, b = _two(athletes, "sport", rng)
            calls = _fan([("count_athletes_by_sport", {"sport": a}, []), ("count_athletes_by_sport", {"sport": b}, [])])
            turn = TurnPlan(f"How many athletes compete in {a} and in {b} together?", calls, lambda r: r[0]["athlete_count"] + r[1]["athlete_count"])
        elif kind == 1:
            a, b = _two(athletes, "country", rng)
            if run("count_medals_by_country", {"country": a})["medal_count"] == run("count_medals_by_country", {"country": b})["medal_count"]:
                raise PlanRejected("a tie: no single answer")
            calls = _fan([("count_medals_by_country", {"country": a}, []), ("count_medals_by_country", {"country": b}, [])])
            turn = TurnPlan(
                f"Which country's athletes have won more medals in total, {a} or {b}?",
                calls,
                lambda r, a=a, b=b: a if r[0]["medal_count"] > r[1]["medal_count"] else b,
                "text",
                answer_column="country",
            )
        else:
            p, q = rng.sample(athletes, 2)
            if p["birth_year"] == q["birth_year"]:
                raise PlanRejected("same birth year")
            calls = _fan(
                [
                    ("get_athlete_by_name", {"name": p["name"]}, []),
                    ("get_athlete_by_name", {"name": q["name"]}, []),
                    ("list_athletes_by_country", {"country": p["country"] if p["birth_year"] < q["birth_year"] else q["country"]}, ["f1", "f2"]),
                ]
            )
            turn = TurnPlan(
                f"How many athletes come from the country of whichever is older, {p['name']} or {q['name']}?",
                calls,
                lambda r: len(r[2]),
            )
    elif env.name == "movies":
        movies = table_rows(env, "movies")
        if kind == 0:
            m1, m2 = rng.sample(movies, 2)
            if m1["rating"] == m2["rating"]:
                raise PlanRejected("same rating")
            calls = _fan([("get_movie_by_title", {"title": m1["title"]}, []), ("get_movie_by_title", {"title": m2["title"]}, [])])
            turn = TurnPlan(
                f"Which has the higher rating, {m1['title']} or {m2['title']}?",
                calls,
                lambda r: r[0]["title"] if r[0]["rating"] > r[1]["rating"] else r[1]["title"],
                "text",
                answer_column="title",
            )
        elif kind == 1:
            g1, g2 = _two(movies, "genre", rng)
            calls = _fan([("count_movies_by_genre", {"genre": g1}, []), ("count_movies_by_genre", {"genre": g2}, [])])
            turn = TurnPlan(f"How many movies are there in the {g1} and {g2} genres together?", calls, lambda r: r[0]["movies"] + r[1]["movies"])
        else:
            m1, m2 = rng.sample(movies, 2)
            if m1["director_id"] == m2["director_id"]:
                raise PlanRejected("same director")
            calls = _fan(
                [
                    ("get_movie_by_title", {"title": m1["title"]}, []),
                    ("get_movie_by_title", {"title": m2["title"]}, []),
                    ("get_director", {"director_id": m1["director_id"]}, ["f1"]),
                    ("get_director", {"director_id": m2["director_id"]}, ["f2"]),
                ]
            )
            turn = TurnPlan(
                f"Who directed {m1['title']} and {m2['title']}? Give both names.",
                calls,
                lambda r: sorted({r[2]["name"], r[3]["name"]}) if r[2]["name"] != r[3]["name"] else None,
                "list",
                answer_column="name",
            )
    elif env.name == "flights":
        if kind == 0:
            o1, o2 = rng.sample(["PEK", "PVG", "OSL", "NBO", "MAD", "YYZ", "CDG", "NRT"], 2)
            c1, c2 = run("cheapest_flight_from", {"origin": o1}), run("cheapest_flight_from", {"origin": o2})
            if c1["price"] == c2["price"]:
                raise PlanRejected("same price")
            cheaper = c1 if c1["price"] < c2["price"] else c2
            calls = _fan(
                [
                    ("cheapest_flight_from", {"origin": o1}, []),
                    ("cheapest_flight_from", {"origin": o2}, []),
                    ("get_airport", {"iata": cheaper["destination"]}, ["f1", "f2"]),
                ]
            )
            turn = TurnPlan(
                f"Compare the cheapest flight from {o1} with the cheapest from {o2}: which city does the cheaper of the two fly to?",
                calls,
                lambda r: r[2]["city"],
                "text",
                answer_column="city",
            )
        else:
            bookings = table_rows(env, "bookings")
            b1, b2 = rng.sample(bookings, 2)
            if kind == 1:
                if b1["flight_no"] == b2["flight_no"]:
                    raise PlanRejected("same flight")
                calls = _fan(
                    [("count_bookings_on_flight", {"flight_no": b1["flight_no"]}, []), ("count_bookings_on_flight", {"flight_no": b2["flight_no"]}, [])]
                )
                turn = TurnPlan(
                    f"How many active bookings are there on flights {b1['flight_no']} and {b2['flight_no']} together?",
                    calls,
                    lambda r: r[0]["bookings"] + r[1]["bookings"],
                )
            else:
                if b1["checked_bags"] == b2["checked_bags"]:
                    raise PlanRejected("same number of bags")
                calls = _fan([("get_booking", {"booking_id": b1["booking_id"]}, []), ("get_booking", {"booking_id": b2["booking_id"]}, [])])
                turn = TurnPlan(
                    f"Which booking has more checked bags, {b1['booking_id']} or {b2['booking_id']}?",
                    calls,
                    lambda r: r[0]["booking_id"] if r[0]["checked_bags"] > r[1]["checked_bags"] else r[1]["booking_id"],
                    "text",
                    answer_column="booking_id",
                )
    elif env.name == "hospital":
        if kind == 0:
            doctors = table_rows(env, "doctors")
            d1, d2 = rng.sample(doctors, 2)
            calls = _fan(
                [
                    ("count_doctor_appointments", {"doctor_id": d1["doctor_id"], "status": "completed"}, []),
                    ("count_doctor_appointments", {"doctor_id": d2["doctor_id"], "status": "completed"}, []),
                ]
            )
            turn = TurnPlan(
                f"How many completed appointments do doctors {d1['doctor_id']} and {d2['doctor_id']} have together?",
                calls,
                lambda r: r[0]["appointments"] + r[1]["appointments"],
            )
        elif kind == 1:
            patients = table_rows(env, "patients")
            p1, p2 = rng.sample(patients, 2)
            if p1["birth_year"] == p2["birth_year"]:
                raise PlanRejected("same birth year")
            calls = _fan([("get_patient", {"patient_id": p1["patient_id"]}, []), ("get_patient", {"patient_id": p2["patient_id"]}, [])])
            turn = TurnPlan(
                f"Which patient is older, {p1['patient_id']} or {p2['patient_id']}?",
                calls,
                lambda r: r[0]["patient_id"] if r[0]["birth_year"] < r[1]["birth_year"] else r[1]["patient_id"],
                "text",
                answer_column="patient_id",
            )
        else:
            appts = table_rows(env, "appointments")
            a1, a2 = rng.sample(appts, 2)
            if a1["doctor_id"] == a2["doctor_id"]:
                raise PlanRejected("same doctor")
            calls = _fan(
                [
                    ("get_appointment", {"appointment_id": a1["appointment_id"]}, []),
                    ("get_appointment", {"appointment_id": a2["appointment_id"]}, []),
                    ("get_doctor", {"doctor_id": a1["doctor_id"]}, ["f1"]),
                    ("get_doctor", {"doctor_id": a2["doctor_id"]}, ["f2"]),
                ]
            )
            turn = TurnPlan(
                f"Which departments are the doctors of appointments {a1['appointment_id']} and {a2['appointment_id']} in? Give both.",
                calls,
                lambda r: sorted({r[2]["department"], r[3]["department"]}) if r[2]["department"] != r[3]["department"] else None,
                "list",
                answer_column="name",
            )
    else:
        return None
    return TaskPlan(tid, "3", env.name, [turn], hop_count=len(turn.calls), tool_names=domain_api_tools(env), tags={"branching": True})


# ---------------------------------------------------------------------------------------------
# Capability 4: multi-turn, multi-source, with plain-text tool-use policies
# ---------------------------------------------------------------------------------------------
RETRIEVER = {
    "olympics": "search_olympic_history",
    "retail": "search_store_policies",
    "flights": "search_travel_handbook",
    "hospital": "search_patient_leaflets",
    "movies": "search_synopses",
}
WRITE_TURNS = {"flights", "hospital", "retail"}


def _rag_turn(facts: dict[str, Any], rng: random.Random, used: set[int]) -> TurnPlan:
    options = [i for i in range(len(facts["doc_facts"])) if i not in used] or list(range(len(facts["doc_facts"])))
    i = rng.choice(options)
    used.add(i)
    question, answer, tool, query = facts["doc_facts"][i]
    numeric = answer.isdigit()

    def gold(r: list[Any]) -> Any:
        top = r[-1][0]["text"] if r[-1] else ""
        if answer not in top:  # the fact must be in the top passage, or the instance is redrawn
            return None
        return int(answer) if numeric else answer

    return TurnPlan(question, [Call(tool, {"query": query, "k": 3}, "r1")], gold, "number" if numeric else "text", "RAG")


def _api_turn(env: Environment, rng: random.Random, n: int) -> TurnPlan:
    plan = cap3_plan(env, random.Random(rng.random()), n)
    if plan is None:
        raise PlanRejected("no API template")
    turn = plan.turns[0]
    if len(turn.calls) > 3:  # capability-4 API turns stay short
        raise PlanRejected("too long for a dialogue turn")
    return turn


def _write_turn(env: Environment, rng: random.Random) -> tuple[TurnPlan, TurnPlan]:
    """A write request and its read-only counterpart (what a read-only policy makes correct)."""
    if env.name == "flights":
        b = rng.choice([x for x in table_rows(env, "bookings") if x["status"] != "cancelled"])
        q = f"Please add one checked bag to booking {b['booking_id']} and tell me how many checked bags it has now."
        write_t = TurnPlan(q, [Call("add_checked_bag", {"booking_id": b["booking_id"]}, "w1")], lambda r: r[-1]["record"]["checked_bags"])
        read_t = TurnPlan(q, [Call("get_booking", {"booking_id": b["booking_id"]}, "w1")], lambda r: r[-1]["checked_bags"])
    elif env.name == "hospital":
        a = rng.choice([x for x in table_rows(env, "appointments") if x["status"] == "booked"])
        q = f"Cancel appointment {a['appointment_id']} for me, then tell me its status."
        write_t = TurnPlan(q, [Call("cancel_appointment", {"appointment_id": a["appointment_id"]}, "w1")], lambda r: r[-1]["record"]["status"], "text")
        read_t = TurnPlan(q, [Call("get_appointment", {"appointment_id": a["appointment_id"]}, "w1")], lambda r: r[-1]["status"], "text")
    else:
        c = rng.choice(table_rows(env, "customers"))
        pts = rng.choice([50, 100, 150])
        q = f"Credit {pts} loyalty points to customer {c['customer_id']} and tell me their new balance."
        write_t = TurnPlan(q, [Call("add_loyalty_points", {"customer_id": c["customer_id"], "points": pts}, "w1")], lambda r: r[-1]["record"]["loyalty_points"])
        read_t = TurnPlan(q, [Call("get_customer_details", {"customer_id": c["customer_id"]}, "w1")], lambda r: r[-1]["loyalty_points"])
    return write_t, read_t


def cap4_plan(env: Environment, facts: dict[str, Any], rng: random.Random, n: int, slot: int) -> TaskPlan:
    tid = f"c4-{env.name}-{n:03d}"
    condition = ["no_policy", "policy_same_answer", "policy_changes_answer"][slot % 3]
    if condition == "policy_changes_answer" and env.name not in WRITE_TURNS:
        condition = "policy_same_answer"
    used: set[int] = set()
    pattern = [["API", "RAG"], ["RAG", "API"], ["API"], ["RAG"], ["API", "RAG", "API"], ["RAG", "API"]][slot % 6]
    turns: list[TurnPlan] = []
    for j, hop in enumerate(pattern):
        turns.append(_rag_turn(facts, rng, used) if hop == "RAG" else _api_turn(env, rng, n * 7 + j))
    tags: dict[str, Any] = {}
    policy: dict[str, Any] | None = None
    if condition == "policy_changes_answer" or (env.name in WRITE_TURNS and slot % 2 == 0):
        write_t, read_t = _write_turn(env, rng)
        tags["write"] = condition != "policy_changes_answer"
        turns.append(read_t if condition == "policy_changes_answer" else write_t)
        write_variant = {len(turns) - 1: write_t} if condition == "policy_changes_answer" else {}
    else:
        write_variant = {}
    if condition == "policy_same_answer":
        allowed = [{"turn_id": str(i), "allowed": ["rag" if t.hop_type == "RAG" else "api"]} for i, t in enumerate(turns, start=1)]
        parts = [f"in turn {i} use only {'the document search' if t.hop_type == 'RAG' else 'the database tools'}" for i, t in enumerate(turns, start=1)]
        total = sum(len(t.calls) for t in turns)
        policy = {
            "text": "Tool-use policy: " + "; ".join(parts) + f". Make at most {total + 4} tool calls in the whole conversation.",
            "allowed_sources": allowed,
            "max_calls": total + 4,
        }
    elif condition == "policy_changes_answer":
        policy = {
            "text": "Tool-use policy: this assistant is read-only. Never modify bookings, appointments, orders or customer accounts, "
            "even when asked; look the record up and report its current state instead.",
            "read_only": True,
        }
    return TaskPlan(
        tid,
        "4",
        env.name,
        turns,
        policy=policy,
        policy_condition=condition,
        hop_count=sum(len(t.calls) for t in turns),
        tool_names=domain_api_tools(env),
        tags=tags,
        write_variants=write_variant,
    )


def generate(envs: dict[str, Environment], facts: dict[str, dict[str, Any]], seed: int) -> list[tuple[TaskPlan, dict[str, Any]]]:
    """All plans with their native task dicts; instances that do not execute cleanly are redrawn."""
    out: list[tuple[TaskPlan, dict[str, Any]]] = []

    def add(make, count: int, key: str) -> None:
        rng = random.Random(f"{seed}:{key}")
        n, made, attempts = 0, 0, 0
        seen_queries: set[str] = set()
        while made < count and attempts < count * 20:
            attempts += 1
            try:
                plan = make(rng, n, made)
                if plan is None:
                    return
                plan.task_id = f"{plan.task_id.rsplit('-', 1)[0]}-{made + 1:03d}"
                query_key = " | ".join(t.query for t in plan.turns)
                if query_key in seen_queries:
                    raise PlanRejected("duplicate question")
                task = to_task(plan, envs[plan.domain])
            except PlanRejected:
                n += 1
                continue
            seen_queries.add(query_key)
            out.append((plan, task))
            made += 1
            n += 1

    for name in ("olympics", "movies", "flights", "hospital"):
        add(lambda rng, n, _m, e=envs[name]: cap1_plan(e, rng, n), 12, f"c1:{name}")
    add(lambda rng, n, _m: cap2_plan(envs["retail"], rng, n), 30, "c2")
    for name in ("olympics", "movies", "flights", "hospital", "retail"):
        add(lambda rng, n, _m, e=envs[name]: cap3_plan(e, rng, n), 8 if name != "retail" else 4, f"c3:{name}")
    for name in ("olympics", "movies", "flights", "hospital"):
        add(lambda rng, n, _m, e=envs[name]: fanout_plan(e, rng, n), 4, f"c3b:{name}")
    for name in ("olympics", "retail", "flights", "hospital", "movies"):
        add(lambda rng, n, m, e=envs[name], f=facts[name]: cap4_plan(e, f, rng, n, m), 6, f"c4:{name}")
    return out
