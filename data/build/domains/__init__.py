"""One module per domain; each exposes ``build(rng) -> Domain``."""
