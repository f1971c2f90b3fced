"""Flights: airlines, airports, flights and bookings; a bilingual (English/Chinese) travel handbook."""

from __future__ import annotations

import random

from data.build._names import FIRST_NAMES, LAST_NAMES
from data.build._toolkit import Domain, Table, endpoint, retriever, slot_family, write

AIRLINES = [
    ("ZF", "Zephyr Air", "Norway"),
    ("KL2", "Kestrel Lines", "Kenya"),
    ("MR", "Meridian Airways", "Spain"),
    ("LJ", "Lotus Jet", "China"),
    ("AT", "Atlas Air Connect", "Canada"),
]
AIRPORTS = [
    ("PEK", "Beijing", "China", "Beijing Capital International"),
    ("PVG", "Shanghai", "China", "Shanghai Pudong International"),
    ("OSL", "Oslo", "Norway", "Oslo Gardermoen"),
    ("NBO", "Nairobi", "Kenya", "Jomo Kenyatta International"),
    ("MAD", "Madrid", "Spain", "Adolfo Suarez Madrid-Barajas"),
    ("YYZ", "Toronto", "Canada", "Toronto Pearson"),
    ("CDG", "Paris", "France", "Paris Charles de Gaulle"),
    ("NRT", "Tokyo", "Japan", "Narita International"),
]
CLASSES = ["economy", "premium", "business"]


def build(rng: random.Random) -> Domain:
    flights = []
    n = 1
    codes = [a[0] for a in AIRPORTS]
    for code, _, _ in AIRLINES:
        for _ in range(12):
            origin, dest = rng.sample(codes, 2)
            flights.append(
                (
                    f"{code}{100 + n}",
                    code,
                    origin,
                    dest,
                    f"{rng.randint(5, 22):02d}:{rng.choice(['00', '15', '30', '45'])}",
                    rng.randint(70, 780),
                    rng.randint(9, 90) * 10,
                    rng.randint(0, 60),
                )
            )
            n += 1
    bookings = []
    for i in range(1, 181):
        f = rng.choice(flights)
        bookings.append(
            (
                f"B{i:04d}",
                f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
                f[0],
                rng.choices(CLASSES, weights=[6, 2, 1])[0],
                rng.randint(0, 2),
                rng.choices(["confirmed", "cancelled", "checked_in"], weights=[7, 1, 2])[0],
            )
        )
    tables = [
        Table("airlines", "CREATE TABLE airlines (airline_code TEXT PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL)", AIRLINES),
        Table("airports", "CREATE TABLE airports (iata TEXT PRIMARY KEY, city TEXT NOT NULL, country TEXT NOT NULL, name TEXT NOT NULL)", AIRPORTS),
        Table(
            "flights",
            "CREATE TABLE flights (flight_no TEXT PRIMARY KEY, airline_code TEXT NOT NULL, origin TEXT NOT NULL, destination TEXT NOT NULL, departure_time TEXT NOT NULL, duration_min INTEGER NOT NULL, price INTEGER NOT NULL, seats_left INTEGER NOT NULL)",
            flights,
        ),
        Table(
            "bookings",
            "CREATE TABLE bookings (booking_id TEXT PRIMARY KEY, passenger TEXT NOT NULL, flight_no TEXT NOT NULL, seat_class TEXT NOT NULL, checked_bags INTEGER NOT NULL, status TEXT NOT NULL)",
            bookings,
        ),
    ]
    tools = slot_family(["airlines", "airports", "bookings", "flights"]) + [
        endpoint(
            "search_flights",
            "Flights from one airport to another, cheapest first.",
            {"origin": (str, "Origin IATA code."), "destination": (str, "Destination IATA code.")},
            "SELECT flight_no, airline_code, departure_time, duration_min, price, seats_left FROM flights WHERE origin = :origin AND destination = :destination ORDER BY price, flight_no",
        ),
        endpoint(
            "get_flight",
            "Details of one flight.",
            {"flight_no": (str, "Flight number, e.g. 'ZF101'.")},
            "SELECT * FROM flights WHERE flight_no = :flight_no",
            "row",
        ),
        endpoint("get_airport", "Airport by IATA code.", {"iata": (str, "IATA code.")}, "SELECT * FROM airports WHERE iata = :iata", "row"),
        endpoint(
            "get_airline", "Airline by code.", {"airline_code": (str, "Airline code.")}, "SELECT * FROM airlines WHERE airline_code = :airline_code", "row"
        ),
        endpoint(
            "list_flights_by_airline",
            "All flights of an airline.",
            {"airline_code": (str, "Airline code.")},
            "SELECT flight_no, origin, destination, departure_time, price FROM flights WHERE airline_code = :airline_code ORDER BY flight_no",
        ),
        endpoint(
            "get_booking",
            "A booking by id.",
            {"booking_id": (str, "Booking id, e.g. 'B0042'.")},
            "SELECT * FROM bookings WHERE booking_id = :booking_id",
            "row",
        ),
        endpoint(
            "count_bookings_on_flight",
            "Number of non-cancelled bookings on a flight.",
            {"flight_no": (str, "Flight number.")},
            "SELECT COUNT(*) AS bookings FROM bookings WHERE flight_no = :flight_no AND status != 'cancelled'",
            "row",
        ),
        endpoint(
            "cheapest_flight_from",
            "The cheapest flight leaving an airport.",
            {"origin": (str, "Origin IATA code.")},
            "SELECT flight_no, destination, price FROM flights WHERE origin = :origin ORDER BY price, flight_no LIMIT 1",
            "row",
        ),
        write(
            "add_checked_bag",
            "Add one checked bag to a booking.",
            {"booking_id": (str, "Booking id.")},
            ["UPDATE bookings SET checked_bags = checked_bags + 1 WHERE booking_id = :booking_id"],
            precheck=("SELECT 1 FROM bookings WHERE booking_id = :booking_id AND status != 'cancelled'", "booking {booking_id} not found or cancelled"),
            result_sql="SELECT booking_id, checked_bags FROM bookings WHERE booking_id = :booking_id",
        ),
        write(
            "cancel_booking",
            "Cancel a booking.",
            {"booking_id": (str, "Booking id.")},
            ["UPDATE bookings SET status = 'cancelled' WHERE booking_id = :booking_id"],
            precheck=("SELECT 1 FROM bookings WHERE booking_id = :booking_id AND status = 'confirmed'", "booking {booking_id} cannot be cancelled"),
            result_sql="SELECT booking_id, status FROM bookings WHERE booking_id = :booking_id",
        ),
        write(
            "change_seat_class",
            "Move a booking to another cabin class.",
            {"booking_id": (str, "Booking id."), "seat_class": (str, "Cabin class.", {"enum": CLASSES})},
            ["UPDATE bookings SET seat_class = :seat_class WHERE booking_id = :booking_id"],
            precheck=("SELECT 1 FROM bookings WHERE booking_id = :booking_id AND status != 'cancelled'", "booking {booking_id} not found or cancelled"),
            result_sql="SELECT booking_id, seat_class FROM bookings WHERE booking_id = :booking_id",
        ),
        retriever("search_travel_handbook", "Search the travel handbook (baggage, check-in, airports), English and Chinese."),
    ]
    docs = [
        {
            "doc_id": "bag-zf",
            "title": "Zephyr Air baggage",
            "text": "Zephyr Air economy tickets include one checked bag of 23 kg; business class includes two bags of 32 kg.",
        },
        {"doc_id": "bag-lj", "title": "Lotus Jet baggage", "text": "Lotus Jet allows 20 kg of checked baggage in economy and 30 kg in business."},
        {"doc_id": "bag-mr", "title": "Meridian Airways baggage", "text": "Meridian Airways charges 35 euros for each checked bag in basic economy."},
        {
            "doc_id": "checkin-online",
            "title": "Online check-in",
            "text": "Online check-in opens 24 hours before departure and closes 90 minutes before departure.",
        },
        {"doc_id": "checkin-desk", "title": "Airport check-in desks", "text": "Check-in desks close 60 minutes before departure for international flights."},
        {"doc_id": "pets", "title": "Travelling with pets", "text": "Small pets under 8 kg including the carrier may travel in the cabin on Kestrel Lines."},
        {"doc_id": "infants", "title": "Infants", "text": "Infants under 2 years travel on a parent's lap for 10 percent of the adult fare."},
        {
            "doc_id": "liquids",
            "title": "Liquids in hand luggage",
            "text": "Liquids in hand luggage must be in containers of at most 100 ml inside one transparent bag.",
        },
        {
            "doc_id": "delay",
            "title": "Delay compensation",
            "text": "Passengers on flights delayed more than 3 hours may claim compensation of up to 600 euros.",
        },
        {
            "doc_id": "lounge",
            "title": "Lounge access",
            "text": "Business class passengers and gold members may use partner lounges up to 3 hours before departure.",
        },
        {
            "doc_id": "zh-bag-zf",
            "title": "泽风航空行李规定",
            "text": "泽风航空经济舱旅客可免费托运一件行李，重量不超过23公斤；公务舱旅客可托运两件，每件不超过32公斤。",
        },
        {"doc_id": "zh-pek", "title": "北京首都国际机场指南", "text": "北京首都国际机场共有三座航站楼，国际航班主要在3号航站楼办理值机。"},
        {"doc_id": "zh-pvg", "title": "上海浦东国际机场交通", "text": "从上海浦东国际机场乘坐磁悬浮列车到龙阳路站约需8分钟。"},
        {"doc_id": "zh-checkin", "title": "网上值机说明", "text": "网上值机在航班起飞前24小时开放，起飞前90分钟关闭。"},
        {"doc_id": "zh-lotus", "title": "莲花航空简介", "text": "莲花航空是一家总部位于上海的航空公司，机队共有42架飞机。"},
        {"doc_id": "zh-delay", "title": "航班延误补偿", "text": "航班延误超过3小时的旅客最多可获得600欧元的补偿。"},
        {"doc_id": "zh-liquids", "title": "随身行李液体规定", "text": "随身携带的液体每瓶不得超过100毫升，并需放入一个透明袋中。"},
    ]
    for code, name, country in AIRLINES:
        docs.append(
            {
                "doc_id": f"airline-{code}",
                "title": f"About {name}",
                "text": f"{name} ({code}) is based in {country} and operates {sum(1 for f in flights if f[1] == code)} routes in this network.",
            }
        )
    for iata, city, country, name in AIRPORTS:
        docs.append(
            {
                "doc_id": f"airport-{iata}",
                "title": f"{name} airport guide",
                "text": f"{name} ({iata}) serves {city}, {country}. Allow at least {rng.choice([2, 3])} hours for international connections.",
            }
        )
    facts = {
        "flights": flights,
        "bookings": bookings,
        "airports": AIRPORTS,
        "airlines": AIRLINES,
        "doc_facts": [
            ("泽风航空经济舱的免费托运行李重量上限是多少公斤？", "23", "search_travel_handbook", "泽风航空 经济舱 托运行李 公斤"),
            ("北京首都国际机场的国际航班在几号航站楼值机？", "3", "search_travel_handbook", "北京首都国际机场 国际航班 航站楼"),
            ("莲花航空的机队共有多少架飞机？", "42", "search_travel_handbook", "莲花航空 机队 飞机"),
            ("How many hours before departure does online check-in open?", "24", "search_travel_handbook", "online check-in opens hours before departure"),
            ("What is the maximum weight in kg of a pet in the cabin on Kestrel Lines?", "8", "search_travel_handbook", "pets cabin Kestrel Lines kg"),
            (
                "How much does Meridian Airways charge per checked bag in basic economy, in euros?",
                "35",
                "search_travel_handbook",
                "Meridian Airways checked bag basic economy",
            ),
        ],
    }
    return Domain("flights", tables, tools, docs, facts)
