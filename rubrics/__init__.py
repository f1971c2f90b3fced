"""rubrics."""
