"""Local paths kept off anything public, in texts and in JSON documents of them."""

from __future__ import annotations

from db.local_paths import without_local_paths


def test_a_path_anywhere_in_a_document_is_replaced_by_the_file_name() -> None:
    document = {"source": "InferenceX run 1, row 3: /home/me/runs/run_1/agg_bmk.json", "n": 1.5,
                "replay": {"files": ["file:///tmp/x/trace.jsonl", "deepseek-ai/DeepSeek-R1"]}}  # fmt: skip
    assert without_local_paths(document) == {
        "source": "InferenceX run 1, row 3: agg_bmk.json", "n": 1.5,
        "replay": {"files": ["trace.jsonl", "deepseek-ai/DeepSeek-R1"]},
    }  # fmt: skip
    # A path after a character JSON escapes (a newline, a quote) is found as well.
    assert without_local_paths(["line\n/srv/data/f.json", 'said "/opt/a/b"']) == ["line\nf.json", 'said "b"']


def test_a_document_without_a_path_is_returned_as_it_is() -> None:
    document = {"metrics": {"ttft_ms": {"p50": 12.5}}, "model": "deepseek-ai/DeepSeek-R1", "url": "https://x.org/a/b"}
    assert without_local_paths(document) is document
