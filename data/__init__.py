"""The bundled sample benchmark and executable environments.

Installed as the package ``trajectory_judge_data`` (see setup.py) and read through
``pipelines.resources`` with importlib.resources, so an installed wheel finds them as a checkout
does. The generators in ``data.build`` are not shipped.
"""
