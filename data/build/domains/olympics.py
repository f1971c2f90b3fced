"""Olympics: athletes, games, events and medals; REST-style endpoints and a history corpus."""

from __future__ import annotations

import random

from data.build._names import COUNTRIES, FIRST_NAMES, LAST_NAMES
from data.build._toolkit import Domain, Table, endpoint, retriever, slot_family

GAMES = [
    (2000, "Sydney", "Australia"),
    (2004, "Athens", "Greece"),
    (2008, "Beijing", "China"),
    (2012, "London", "United Kingdom"),
    (2016, "Rio de Janeiro", "Brazil"),
    (2020, "Tokyo", "Japan"),
    (2024, "Paris", "France"),
]
SPORTS = {
    "Athletics": ["100m", "800m", "Marathon", "Long Jump", "Javelin"],
    "Swimming": ["100m Freestyle", "200m Butterfly", "400m Medley"],
    "Cycling": ["Road Race", "Team Sprint"],
    "Rowing": ["Single Sculls", "Double Sculls"],
    "Judo": ["Lightweight", "Heavyweight"],
}
MEDALS = ["gold", "silver", "bronze"]


def build(rng: random.Random) -> Domain:
    athletes = []
    used = set()
    for aid in range(1, 241):
        while True:
            name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
            if name not in used:
                used.add(name)
                break
        sport = rng.choice(sorted(SPORTS))
        athletes.append((aid, name, rng.choice(COUNTRIES), sport, rng.choice(["F", "M"]), rng.randint(1972, 2004)))
    events = []
    eid = 1
    for year, _, _ in GAMES:
        for sport in sorted(SPORTS):
            for ev in SPORTS[sport]:
                events.append((eid, year, sport, ev))
                eid += 1
    by_sport = {s: [a for a in athletes if a[3] == s] for s in SPORTS}
    medals = []
    mid = 1
    for event_id, year, sport, _ in events:
        pool = [a for a in by_sport[sport] if 18 <= year - a[5] <= 38]
        winners = rng.sample(pool, 3) if len(pool) >= 3 else []
        for medal, athlete in zip(MEDALS, winners):
            medals.append((mid, athlete[0], event_id, year, medal))
            mid += 1
    tables = [
        Table("games", "CREATE TABLE games (games_year INTEGER PRIMARY KEY, host_city TEXT NOT NULL, host_country TEXT NOT NULL)", GAMES),
        Table(
            "athletes",
            "CREATE TABLE athletes (athlete_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL, sport TEXT NOT NULL, gender TEXT NOT NULL, birth_year INTEGER NOT NULL)",
            athletes,
        ),
        Table(
            "events", "CREATE TABLE events (event_id INTEGER PRIMARY KEY, games_year INTEGER NOT NULL, sport TEXT NOT NULL, event_name TEXT NOT NULL)", events
        ),
        Table(
            "medals",
            "CREATE TABLE medals (medal_id INTEGER PRIMARY KEY, athlete_id INTEGER NOT NULL, event_id INTEGER NOT NULL, games_year INTEGER NOT NULL, medal TEXT NOT NULL)",
            medals,
        ),
    ]
    medal_p = (str, "Medal colour.", {"enum": MEDALS})
    tools = slot_family(["athletes", "events", "games", "medals"]) + [
        endpoint(
            "get_athlete_by_name",
            "Look up an athlete's profile by full name.",
            {"name": (str, "Full name, e.g. 'Amara Okafor'.")},
            "SELECT athlete_id, name, country, sport, gender, birth_year FROM athletes WHERE lower(name) = lower(:name)",
            "row",
        ),
        endpoint(
            "get_athlete_by_id",
            "Look up an athlete's profile by id.",
            {"athlete_id": (int, "Athlete id.")},
            "SELECT athlete_id, name, country, sport, gender, birth_year FROM athletes WHERE athlete_id = :athlete_id",
            "row",
        ),
        endpoint(
            "get_athlete_medals",
            "All medals won by an athlete, oldest first.",
            {"athlete_id": (int, "Athlete id.")},
            "SELECT m.games_year, e.event_name, m.medal FROM medals m JOIN events e ON e.event_id = m.event_id WHERE m.athlete_id = :athlete_id ORDER BY m.games_year, e.event_name",
        ),
        endpoint(
            "get_athlete_most_medals",
            "The athlete with the most medals of one colour (ties: lowest id).",
            {"medal": medal_p},
            "SELECT a.athlete_id, a.name, a.country, COUNT(*) AS medal_count FROM medals m JOIN athletes a ON a.athlete_id = m.athlete_id WHERE m.medal = :medal GROUP BY a.athlete_id ORDER BY medal_count DESC, a.athlete_id LIMIT 1",
            "row",
        ),
        endpoint(
            "count_medals_by_country",
            "Number of medals won by a country's athletes, optionally of one colour.",
            {"country": (str, "Country name."), "medal": (str, "Medal colour; omit for all.", {"enum": MEDALS})},
            "SELECT COUNT(*) AS medal_count FROM medals m JOIN athletes a ON a.athlete_id = m.athlete_id WHERE a.country = :country AND (:medal IS NULL OR m.medal = :medal)",
            "row",
            required=["country"],
        ),
        endpoint(
            "get_games_by_year",
            "Host city and country of the Summer Games of a year.",
            {"year": (int, "Games year.")},
            "SELECT games_year, host_city, host_country FROM games WHERE games_year = :year",
            "row",
        ),
        endpoint(
            "list_athletes_by_country",
            "Athletes representing a country (name and sport).",
            {"country": (str, "Country name.")},
            "SELECT athlete_id, name, sport FROM athletes WHERE country = :country ORDER BY athlete_id",
        ),
        endpoint(
            "get_event_medalists",
            "Medallists of one event at one Games.",
            {"year": (int, "Games year."), "event_name": (str, "Event, e.g. 'Marathon'.")},
            "SELECT a.name, a.country, m.medal FROM medals m JOIN events e ON e.event_id = m.event_id JOIN athletes a ON a.athlete_id = m.athlete_id WHERE e.games_year = :year AND e.event_name = :event_name ORDER BY CASE m.medal WHEN 'gold' THEN 1 WHEN 'silver' THEN 2 ELSE 3 END",
        ),
        endpoint(
            "top_countries_by_medals",
            "Countries ranked by medal count at one Games.",
            {"year": (int, "Games year."), "limit": (int, "How many countries.", {"default": 3, "minimum": 1, "maximum": 20})},
            "SELECT a.country, COUNT(*) AS medal_count FROM medals m JOIN athletes a ON a.athlete_id = m.athlete_id WHERE m.games_year = :year GROUP BY a.country ORDER BY medal_count DESC, a.country LIMIT :limit",
            required=["year"],
        ),
        endpoint(
            "count_athletes_by_sport",
            "Number of athletes in a sport.",
            {"sport": (str, "Sport.", {"enum": sorted(SPORTS)})},
            "SELECT COUNT(*) AS athlete_count FROM athletes WHERE sport = :sport",
            "row",
        ),
        retriever("search_olympic_history", "Search the Olympic history notes (host cities, venues, traditions)."),
    ]
    docs = []
    venues = [
        "Stadium Australia",
        "Olympic Stadium Spyridon Louis",
        "the Bird's Nest",
        "London Stadium",
        "Maracana",
        "Japan National Stadium",
        "Stade de France",
    ]
    for (year, city, country), venue in zip(GAMES, venues):
        athletes_n = 10000 + rng.randint(0, 1500)
        docs.append(
            {
                "doc_id": f"games-{year}",
                "title": f"The {year} Summer Games in {city}",
                "text": f"The {year} Summer Olympics were held in {city}, {country}. The opening ceremony took place at {venue}, and about {athletes_n} athletes competed.",
            }
        )
    traditions = [
        (
            "torch",
            "Olympic torch relay",
            "The torch relay carries the flame from Olympia in Greece to the host city; the flame is lit by the sun's rays with a parabolic mirror.",
        ),
        ("rings", "The Olympic rings", "The five interlocking rings were designed by Pierre de Coubertin in 1913 and represent the union of five continents."),
        ("motto", "The Olympic motto", "The motto Citius, Altius, Fortius means Faster, Higher, Stronger; the word Communiter (Together) was added in 2021."),
        ("marathon", "Marathon distance", "The marathon distance was fixed at 42.195 kilometres in 1921, based on the course of the 1908 London Games."),
        ("medals", "Medal composition", "Olympic gold medals must contain at least 6 grams of gold plating over a silver core."),
        ("oath", "The athletes' oath", "One athlete from the host nation takes the Olympic oath on behalf of all competitors at the opening ceremony."),
        (
            "village",
            "The athletes' village",
            "The athletes' village houses competitors and officials; the first official village was built for the 1932 Los Angeles Games.",
        ),
        ("judo", "Judo at the Games", "Judo became an Olympic sport for men in 1964 in Tokyo; women's judo was added in 1992."),
        ("rowing", "Rowing course", "Olympic rowing races are held over 2000 metres on a straight course with six lanes."),
        ("cycling", "Team sprint", "In the team sprint, each rider leads for one lap of the velodrome; the race covers three laps for men."),
    ]
    for key, title, text in traditions:
        docs.append({"doc_id": f"note-{key}", "title": title, "text": text})
    for sport, events_list in sorted(SPORTS.items()):
        docs.append(
            {
                "doc_id": f"sport-{sport.lower()}",
                "title": f"{sport} programme",
                "text": f"The {sport.lower()} programme in this collection covers {len(events_list)} events: {', '.join(events_list)}.",
            }
        )
    facts = {
        "games": GAMES,
        "sports": SPORTS,
        "countries": sorted({a[2] for a in athletes}),
        "athletes": athletes,
        "doc_facts": [
            ("In which year was the marathon distance fixed at 42.195 km?", "1921", "search_olympic_history", "marathon distance fixed"),
            ("Who designed the Olympic rings?", "Pierre de Coubertin", "search_olympic_history", "who designed the Olympic rings"),
            ("How long is an Olympic rowing race in metres?", "2000", "search_olympic_history", "rowing race distance metres"),
            ("In which year was women's judo added to the Olympic programme?", "1992", "search_olympic_history", "women's judo added"),
            ("Where was the opening ceremony of the 2008 Games held?", "the Bird's Nest", "search_olympic_history", "2008 opening ceremony venue"),
        ],
    }
    return Domain("olympics", tables, tools, docs, facts)
