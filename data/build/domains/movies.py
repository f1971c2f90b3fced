"""Movies: films, directors, actors and casts; a synopsis corpus."""

from __future__ import annotations

import random

from data.build._names import COUNTRIES, FIRST_NAMES, LAST_NAMES
from data.build._toolkit import Domain, Table, endpoint, retriever, slot_family

GENRES = ["drama", "comedy", "thriller", "animation", "documentary", "science fiction"]
TITLE_A = ["Silent", "Crimson", "Last", "Hidden", "Golden", "Broken", "Distant", "Paper", "Winter", "Electric", "Quiet", "Lost"]
TITLE_B = ["Harbor", "Orchard", "Signal", "Lantern", "Frontier", "Garden", "Echo", "Voyage", "Canyon", "Archive", "Tide", "Meridian"]


def build(rng: random.Random) -> Domain:
    directors = [(i, f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}", rng.choice(COUNTRIES), rng.randint(1945, 1990)) for i in range(1, 31)]
    titles = [f"The {a} {b}" for a in TITLE_A for b in TITLE_B]
    rng.shuffle(titles)
    movies = []
    for i, title in enumerate(titles[:140], start=1):
        movies.append(
            (
                i,
                title,
                rng.randint(1985, 2024),
                rng.choice(GENRES),
                rng.choice(directors)[0],
                round(rng.uniform(4.5, 9.2), 1),
                round(rng.uniform(0.5, 480), 1),
                rng.randint(78, 175),
            )
        )
    actors = [(i, f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}", rng.randint(1950, 2002)) for i in range(1, 81)]
    cast = []
    for m in movies:
        for order, a in enumerate(rng.sample(actors, 3), start=1):
            cast.append((m[0], a[0], order))
    tables = [
        Table(
            "directors",
            "CREATE TABLE directors (director_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL, birth_year INTEGER NOT NULL)",
            directors,
        ),
        Table(
            "movies",
            "CREATE TABLE movies (movie_id INTEGER PRIMARY KEY, title TEXT NOT NULL, release_year INTEGER NOT NULL, genre TEXT NOT NULL, director_id INTEGER NOT NULL, rating REAL NOT NULL, box_office_musd REAL NOT NULL, runtime_min INTEGER NOT NULL)",
            movies,
        ),
        Table("actors", "CREATE TABLE actors (actor_id INTEGER PRIMARY KEY, name TEXT NOT NULL, birth_year INTEGER NOT NULL)", actors),
        Table("cast_members", "CREATE TABLE cast_members (movie_id INTEGER NOT NULL, actor_id INTEGER NOT NULL, billing INTEGER NOT NULL)", cast),
    ]
    tools = slot_family(["actors", "cast_members", "directors", "movies"]) + [
        endpoint(
            "get_movie_by_title",
            "A movie's record by exact title.",
            {"title": (str, "Title, e.g. 'The Silent Harbor'.")},
            "SELECT * FROM movies WHERE lower(title) = lower(:title)",
            "row",
        ),
        endpoint(
            "get_director", "A director by id.", {"director_id": (int, "Director id.")}, "SELECT * FROM directors WHERE director_id = :director_id", "row"
        ),
        endpoint(
            "list_movies_by_director",
            "Movies of a director, newest first.",
            {"director_id": (int, "Director id.")},
            "SELECT movie_id, title, release_year, rating FROM movies WHERE director_id = :director_id ORDER BY release_year DESC, movie_id",
        ),
        endpoint(
            "get_movie_cast",
            "Cast of a movie in billing order.",
            {"movie_id": (int, "Movie id.")},
            "SELECT a.actor_id, a.name, c.billing FROM cast_members c JOIN actors a ON a.actor_id = c.actor_id WHERE c.movie_id = :movie_id ORDER BY c.billing",
        ),
        endpoint(
            "get_actor_filmography",
            "Movies an actor appeared in, oldest first.",
            {"actor_id": (int, "Actor id.")},
            "SELECT m.movie_id, m.title, m.release_year FROM cast_members c JOIN movies m ON m.movie_id = c.movie_id WHERE c.actor_id = :actor_id ORDER BY m.release_year, m.movie_id",
        ),
        endpoint("get_actor_by_name", "An actor by full name.", {"name": (str, "Full name.")}, "SELECT * FROM actors WHERE lower(name) = lower(:name)", "row"),
        endpoint(
            "top_rated_movies",
            "Highest-rated movies of a genre.",
            {"genre": (str, "Genre.", {"enum": GENRES}), "limit": (int, "How many.", {"default": 3, "minimum": 1, "maximum": 20})},
            "SELECT movie_id, title, rating FROM movies WHERE genre = :genre ORDER BY rating DESC, movie_id LIMIT :limit",
            required=["genre"],
        ),
        endpoint(
            "box_office_by_year",
            "Total box office (million USD) of movies released in a year.",
            {"year": (int, "Release year.")},
            "SELECT ROUND(SUM(box_office_musd), 1) AS box_office_musd, COUNT(*) AS movies FROM movies WHERE release_year = :year",
            "row",
        ),
        endpoint(
            "count_movies_by_genre",
            "Number of movies of a genre.",
            {"genre": (str, "Genre.", {"enum": GENRES})},
            "SELECT COUNT(*) AS movies FROM movies WHERE genre = :genre",
            "row",
        ),
        retriever("search_synopses", "Search movie synopses and festival notes."),
    ]
    docs = []
    places = ["a fishing town", "a mountain observatory", "a night train", "an abandoned library", "a desert radio station", "a coastal lighthouse"]
    for m in movies[:30]:
        docs.append(
            {
                "doc_id": f"synopsis-{m[0]}",
                "title": f"{m[1]} ({m[2]})",
                "text": f"{m[1]} is a {m[3]} set in {rng.choice(places)}. It runs {m[7]} minutes and earned a rating of {m[5]}.",
            }
        )
    festivals = [
        ("fest-harbor", "Harbor Film Festival", "The Harbor Film Festival is held every October and awards the Golden Anchor to the best debut."),
        ("fest-north", "Northern Lights Festival", "The Northern Lights Festival screens films outdoors; its 2023 edition sold 41000 tickets."),
        ("restoration", "Film restoration", "A 4K restoration of a feature film typically takes 9 months of work."),
    ]
    docs += [{"doc_id": k, "title": t, "text": x} for k, t, x in festivals]
    facts = {
        "movies": movies,
        "directors": directors,
        "actors": actors,
        "cast": cast,
        "genres": GENRES,
        "doc_facts": [
            (
                "Which award does the Harbor Film Festival give to the best debut?",
                "the Golden Anchor",
                "search_synopses",
                "Harbor Film Festival award best debut",
            ),
            ("How many tickets did the Northern Lights Festival sell in 2023?", "41000", "search_synopses", "Northern Lights Festival tickets 2023"),
            ("How many months does a 4K restoration typically take?", "9", "search_synopses", "4K restoration months"),
        ],
    }
    return Domain("movies", tables, tools, docs, facts)
