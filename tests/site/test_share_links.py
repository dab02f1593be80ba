"""Share links: a value the results do not have is shown as a warning and kept in the link, never dropped silently;
a hand-written `frontier=true` means on."""

from __future__ import annotations

from tests.site.conftest import open_page


def warnings_of(app) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(warning.value for warning in [*app.warning, *app.sidebar.warning])


def test_an_unknown_filter_value_is_a_warning_and_stays_in_the_link(seeded_hub: str) -> None:
    app = open_page("pareto", {"hardware": ["b200", "tpu-v9"], "view": "Table"})
    text = warnings_of(app)
    assert "`tpu-v9`" in text and "do not have" in text and "kept in the link" in text, text
    assert set(app.dataframe[0].value["hardware"]) == {"b200"}
    assert app.query_params["hardware"] == ["b200", "tpu-v9"]
    # The viewer's own choice elsewhere neither raises a new warning nor loses the asked-for value.
    app.radio(key="param-view").set_value("Chart").run()
    assert app.query_params["hardware"] == ["b200", "tpu-v9"]


def test_only_unknown_values_show_an_empty_state_not_every_other_option(seeded_hub: str) -> None:
    # Issue 42: /?hardware=tpu-v7 showed every other chip, as if they were what the link asked for.
    for page in ("pareto", "overview"):
        app = open_page(page, {"hardware": "tpu-v7", "view": "Table"})
        said = " ".join(warning.value for warning in app.warning)  # in the page, not only the sidebar
        assert "`tpu-v7`" in said and "nothing else is shown" in said and "No results match" in said, (page, said)
        assert not app.dataframe, (page, [frame.value for frame in app.dataframe])
        assert app.query_params["hardware"] == "tpu-v7"


def test_an_unknown_model_shows_the_default_comparison_and_stays_in_the_link(seeded_hub: str) -> None:
    app = open_page("pareto", {"model": "deepseek-r1-typo", "view": "Table"})
    text = warnings_of(app)
    assert "`deepseek-r1-typo`" in text and "kept in the link; showing 'deepseek-r1' instead" in text, text
    assert set(app.dataframe[0].value["model"]) == {"deepseek-r1"}
    assert app.query_params["model"] == "deepseek-r1-typo"
    # Once the viewer picks a model, the link follows the choice.
    app.selectbox(key="param-model").set_value("tiny-llama").run()
    assert app.query_params["model"] == "tiny-llama"


def test_unknown_axis_and_words_for_switches(seeded_hub: str) -> None:
    app = open_page("pareto", {"y": "joules per banana", "frontier": "true"})
    text = warnings_of(app)
    assert "`joules per banana`" in text, text
    assert app.toggle(key="param-frontier").value is True
    app = open_page("pareto", {"frontier": "maybe"})
    assert "`maybe` is neither on nor off" in warnings_of(app)
    assert app.toggle(key="param-frontier").value is False


def test_numbers_in_a_link_must_be_finite(seeded_hub: str) -> None:
    """`inf` and `nan` parse as floats: /offload?gpus=inf and /memory-tiers?table=nan&at=inf computed on with them and
    showed a Python traceback with the server's paths. Now each is a warning, and the page shows its default."""
    for page, link in (("offload_map", {"gpus": "inf"}), ("memory_tiers", {"table": "nan", "at": "inf"}),
                       ("tco", {"at": "-inf"})):  # fmt: skip
        app = open_page(page, link, from_overview=True)
        assert not app.exception, (page, app.exception)
        warned = " ".join(warning.value for warning in app.sidebar.warning)
        assert "is not a finite number" in warned, (page, warned)


def test_a_number_past_its_domain_is_clamped_before_the_page_converts_it(seeded_hub: str) -> None:
    """/offload?gpus=1e308 overflowed int() (`inf` was already refused): every number control clamps to its domain."""
    for page, link in (("offload_map", {"gpus": "1e308", "util": "7"}), ("memory_tiers", {"lookups": "1e308"}),
                       ("offload_map", {"gpus": "-5"})):  # fmt: skip
        app = open_page(page, link, from_overview=True)
        assert not app.exception, (page, link, app.exception)
        warned = " ".join(warning.value for warning in app.sidebar.warning)
        assert "showing the nearest end" in warned, (page, warned)
    assert app.number_input(key="param-gpus").value == 1


def test_a_linked_value_is_shown_as_text_never_as_markdown(seeded_hub: str) -> None:
    planted = "[Session expired](https://evil.example/login) ![p](https://evil.example/p.png)"
    app = open_page("pareto", {"hardware": planted})
    # Only an unknown value asked for: the warning stands in the page itself.
    (warning,) = [w.value for w in [*app.warning, *app.sidebar.warning] if "Session expired" in w.value]
    assert f"`{planted}`" in warning  # a code span: Markdown reads no link and no image in it
