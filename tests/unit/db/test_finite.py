"""The store's JSON writer: every finite document written as it is, every non-finite number refused by name."""

from __future__ import annotations

import json
import math

import pytest

from db.finite import NonFiniteValue, finite_json


def test_a_finite_document_reads_back_the_same_including_words_that_look_like_non_finite_numbers() -> None:
    document = {
        "reason": "NaN in the engine's log; Infinity is not a latency", "é": "µs", "tiny": 1e-05, "huge": 1e300,
        "past_64_bits": 2**70, "nested": [{"p50": 0.1 + 0.2, "flag": True, "none": None}], "-Infinity": 1,
    }  # fmt: skip
    assert json.loads(finite_json(document)) == document


@pytest.mark.parametrize(("value", "named"), [(math.nan, "a.b[1]=nan"), (math.inf, "a.b[1]=inf"),
                                              (-math.inf, "a.b[1]=-inf")])  # fmt: skip
def test_a_non_finite_number_anywhere_is_refused_by_its_path(value: float, named: str) -> None:
    with pytest.raises(NonFiniteValue, match=named.replace(".", r"\.").replace("[", r"\[")):
        finite_json({"a": {"b": [1.0, value]}, "note": "NaN"})


def test_a_non_finite_number_beside_an_integer_past_64_bits_is_still_refused() -> None:
    with pytest.raises(NonFiniteValue, match=r"x=nan"):
        finite_json({"big": 2**70, "x": math.nan})
