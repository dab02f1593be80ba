"""Analysis of sweep results: frontiers, interpolation, intervals, cost and regressions.

Pure Python + numpy (no Ray, no database, no scipy), so the hub and the CLI can both import it.

- `pareto`: the non-dominated (interactivity, throughput) points of a sweep.
- `interpolate`: monotone cubic reads along a frontier at a target interactivity; never extrapolates.
- `intervals`: the mean of repeats with a 95 % interval (Student-t for n < 50, BCa bootstrap beyond),
  and prediction intervals for one new run.
- `cost`: $/Mtok, tokens per all-in MW, revenue, profit and margin (DESIGN.md §7).
- `regression`: is the latest sweep worse than its history's interval?
"""

from orchestrator.analysis.cost import (
    CostPerMillion,
    Profit,
    ProfitInputs,
    TokenMix,
    TokenPrices,
    all_in_kw_per_gpu,
    blended_price_per_m,
    cost_breakdown,
    cost_per_million_tokens,
    profit,
    revenue_usd_per_gpu_hour,
    tokens_per_all_in_mw,
    usd_per_gpu_hour,
)
from orchestrator.analysis.interpolate import InterpolatedValue, interpolate_at, pchip_evaluate
from orchestrator.analysis.intervals import (
    InterpolatedInterval,
    Interval,
    bca_interval,
    interval_of_interpolated,
    mean_interval,
    prediction_interval,
    student_t_cdf,
    student_t_interval,
    student_t_quantile,
)
from orchestrator.analysis.pareto import frontier_by_group, pareto_frontier
from orchestrator.analysis.regression import RegressionResult, detect_regression

__all__ = [
    "CostPerMillion",
    "InterpolatedInterval",
    "InterpolatedValue",
    "Interval",
    "Profit",
    "ProfitInputs",
    "RegressionResult",
    "TokenMix",
    "TokenPrices",
    "all_in_kw_per_gpu",
    "bca_interval",
    "blended_price_per_m",
    "cost_breakdown",
    "cost_per_million_tokens",
    "detect_regression",
    "frontier_by_group",
    "interpolate_at",
    "interval_of_interpolated",
    "mean_interval",
    "pareto_frontier",
    "pchip_evaluate",
    "prediction_interval",
    "profit",
    "revenue_usd_per_gpu_hour",
    "student_t_cdf",
    "student_t_interval",
    "student_t_quantile",
    "tokens_per_all_in_mw",
    "usd_per_gpu_hour",
]
