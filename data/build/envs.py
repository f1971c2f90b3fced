"""Build every domain folder under data/envs (db.sqlite, tools.json, docs.jsonl)."""

from __future__ import annotations

import random
from pathlib import Path

from data.build._toolkit import Domain, write_domain
from data.build.domains import flights, hospital, movies, olympics, retail

BUILDERS = {"flights": flights.build, "hospital": hospital.build, "movies": movies.build, "olympics": olympics.build, "retail": retail.build}
SEED = 20260301


def build_domains() -> dict[str, Domain]:
    return {name: fn(random.Random(f"{SEED}:{name}")) for name, fn in sorted(BUILDERS.items())}


def write_all(root: Path) -> dict[str, Domain]:
    domains = build_domains()
    for domain in domains.values():
        write_domain(domain, root)
    return domains
