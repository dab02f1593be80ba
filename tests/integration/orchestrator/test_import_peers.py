"""Importing the peer tools' own files through the CLI: stored once, refused levels said, the tools agree.

The files (tests/data/peers/README.md) were written by AIPerf 0.13.0, GuideLLM 0.8.1 and llm-d's report
converter against one simulated engine (TTFT 30 ms, ITL 4 ms) at the same settings.
"""

from __future__ import annotations

from db import reads
from db.session import make_engine, migrate, open_session
from tests.conftest import ROOT, run_cli

PEERS = ROOT / "tests" / "data" / "peers"


def test_three_tools_on_one_server_import_once_and_agree(write_recipe) -> None:
    recipe = str(write_recipe())
    imports = [
        ("aiperf", str(PEERS / "aiperf" / "aiperf-c4.json")),
        ("guidellm", str(PEERS / "guidellm" / "concurrent.json")),
        ("llm-d", str(PEERS / "llm-d" / "vllm-bench.yaml"), "--isl", "64", "--osl", "16"),
    ]
    for format_name, *files in imports:
        first = run_cli("import", format_name, *files, "--recipe", recipe, "--sweep", "peers")
        assert first.returncode == 0, first.stderr
        assert "imported into sweep peers" in first.stdout and "already imported" not in first.stdout
        again = run_cli("import", format_name, *files, "--recipe", recipe, "--sweep", "peers")
        assert again.returncode == 0 and "imported into sweep" not in again.stdout.replace("already imported", "")
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        views = reads.list_results(session, sweep="peers")
    assert sorted((v.isl, v.osl, v.concurrency) for v in views) == [
        (64, 16, 4), (256, 64, 1), (256, 64, 4), (256, 64, 4), (256, 64, 8)
    ]  # fmt: skip
    assert {v.origin for v in views} == {"imported"}
    # AIPerf and GuideLLM measured the same server at concurrency 4: per-request TPOT within 5 % of each other.
    at_four = [v for v in views if (v.isl, v.concurrency) == (256, 4)]
    tpots = sorted(v.tpot_p50_ms for v in at_four)
    assert tpots[1] / tpots[0] < 1.05, tpots


def test_levels_that_cannot_be_read_are_named_and_the_rest_imported(write_recipe) -> None:
    recipe = str(write_recipe())
    result = run_cli("import", "guidellm", str(PEERS / "guidellm" / "sweep.json"), "--recipe", recipe,
                     "--sweep", "sweep-levels")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "refused level 2: field 'config.strategy.type_': got 'constant at 20.71 req/s'" in result.stderr
    assert "1 level(s) imported, 0 already present, 3 refused" in result.stdout
    missing = run_cli("import", "llm-d", str(PEERS / "llm-d" / "vllm-bench.yaml"), "--recipe", recipe)
    assert missing.returncode == 0
    assert "field 'isl': got '<not stated>'; the file does not state it: pass --isl" in missing.stderr
    contradicting = run_cli("import", "aiperf", str(PEERS / "aiperf" / "aiperf-c8.json"), "--recipe", recipe,
                            "--isl", "128")  # fmt: skip
    assert "field 'isl': got 128; the file states isl 256; leave out --isl" in contradicting.stderr
    broken = run_cli("import", "aiperf", str(PEERS / "guidellm" / "sweep.json"), "--recipe", recipe)
    assert broken.returncode != 0 and "Traceback" not in broken.stderr
    assert "request_count" in broken.stderr
