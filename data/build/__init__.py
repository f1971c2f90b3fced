"""Build scripts for the sample benchmark: environments (data/envs), tasks and trajectories (data/sample).

Run ``.venv/bin/python -m data.build`` from the repository root. Everything is seeded: two runs
produce byte-identical files.
"""
