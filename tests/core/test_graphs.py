"""Graph code over task input is iterative: a 5,000-call dependency chain is an ordinary task."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judge import ReferenceCall, Task, dependency_order


def chain(n: int, reverse: bool) -> list[dict]:
    """c0 <- c1 <- ... written so that the deepest dependency comes last (reverse) or first."""
    calls = [{"id": f"c{i}", "name": "f", "arguments": {"x": i}, "depends_on": [f"c{i - 1}"] if i else []} for i in range(n)]
    return calls[::-1] if reverse else calls


@pytest.mark.parametrize("reverse", [True, False])
def test_long_chain_orders_without_recursion(reverse):
    calls = [ReferenceCall.model_validate(c) for c in chain(5000, reverse)]
    order = dependency_order(calls)
    assert [calls[i].id for i in order] == [f"c{i}" for i in range(5000)]


def test_ties_keep_the_written_order():
    calls = [ReferenceCall.model_validate(c) for c in ({"id": "b", "name": "f"}, {"id": "a", "name": "f", "depends_on": ["c"]}, {"id": "c", "name": "f"})]
    assert dependency_order(calls) == [0, 2, 1]


def test_long_cycle_is_a_clear_validation_error():
    calls = chain(3000, reverse=True)
    calls[-1]["depends_on"] = ["c2999"]  # c0 now depends on the end of the chain
    with pytest.raises(ValidationError, match="dependency cycle"):
        Task.model_validate({"task_id": "t", "question": "q", "reference_calls": calls})


def test_task_with_a_long_chain_validates():
    task = Task.model_validate({"task_id": "t", "question": "q", "reference_calls": chain(3000, reverse=True)})
    assert len(task.turns[0].reference_calls) == 3000
