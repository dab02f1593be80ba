"""Analysis of sweep results: frontiers, interpolation, intervals, cost and regressions.

Python, numpy and pandas (no Ray, no scipy), so the hub and the CLI can both import it; the database only through
`db.reads` (read queries, never a write or a migration). Its README says what it may import.

- `pareto`: the non-dominated (interactivity, throughput) points of a sweep.
- `interpolate`: monotone cubic reads along a frontier at a target interactivity; never extrapolates.
- `intervals`: the mean of repeats with a 95 % interval (Student-t for n < 50, BCa bootstrap beyond),
  and prediction intervals for one new run.
- `cost`: $/Mtok, tokens per all-in MW, revenue, profit and margin (docs/ARCHITECTURE.md §7).
- `regression`: is the latest sweep worse than its history's interval?
- `compare`: each configuration's per-repeat frontier read at a target interactivity, with its interval.
- `comparability`: replay Points of different trace versions or salting are never one curve.
- `capacity`: the live agents a configuration serves at each SLO tier (recipes/slo_tiers.yaml).
- `envelope`: each chip's envelope, the frontier over all its configurations, read at a target interactivity (the
  best the chip serves at that speed or faster; the Overview, TCO, Profit and `compare` read chips this way).
- `economics`: at a target interactivity, output/total/input tok/s/GPU with intervals, $/Mtok per TCO tier
  or custom $/GPU-hr, tokens per all-in MW, profit per GPU-hour, and the models × hardware scorecard.
- `axes`: the hub's chart axes (which direction is better), per-point $/Mtok, tokens per $ and per MW,
  and repeat intervals for many points at once.
- `trends`: a configuration's figure sweep after sweep, with regressions flagged.
- `cache_tiers`: an agentic Point's prompt tokens by where they came from (HBM, DRAM, recomputed).
- `request_latency`: per-request latencies from the stored request records.
- `thinning`: which of tens of thousands of points a chart draws (every frontier point first).
- `recency`: which sweep of a configuration is the newer (one rule for the CLI, the hub and trends).
- `curves`: results as Pareto curves per (model, precision, engine, workload), chip and engine image.
- `projection`: a measured curve projected to another chip; `backtest`: how wrong projections have been.
- `fast_tokens`: what faster decode buys an agent's whole session, at each chip's operating points.
- `offload`: where a host-DRAM KV tier lowers $/M tokens (model-based); `engram`: the Engram placement what-if.
- `corpora`: the agent corpora the hub's trace pages read (shipped traces, synthetic profiles in memory).
- `public_results`: the public results as one table, and the view a reader meets before touching a control (the
  hub's pages and the read-only API, `orchestrator/public_api.py`, read them alike).
- `coverage`: which chip has measured, imported or projected results for which model and workload, and which none.
- `asof`: which published snapshot an `asof` read (a date or a snapshot hash) means, from the chain's index.
- `uplift`: how each chip's frontier moved between two states of the results (area dominated, reads at each tier).
"""

from analysis.cost import (
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
from analysis.economics import (
    ConfigurationRead,
    CostFigure,
    CostRead,
    GpuHourRate,
    ProfitRead,
    ScorecardCell,
    best_per,
    best_profit_per,
    costs_at,
    default_reference,
    model_price,
    profits_at,
    read_configurations,
    scorecard,
)
from analysis.interpolate import InterpolatedValue, interpolate_at, pchip_evaluate
from analysis.intervals import (
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
from analysis.pareto import frontier_by_group, pareto_frontier
from analysis.regression import RegressionResult, detect_regression

__all__ = [
    "ConfigurationRead",
    "CostFigure",
    "CostPerMillion",
    "CostRead",
    "GpuHourRate",
    "InterpolatedInterval",
    "InterpolatedValue",
    "Interval",
    "Profit",
    "ProfitInputs",
    "ProfitRead",
    "RegressionResult",
    "ScorecardCell",
    "TokenMix",
    "TokenPrices",
    "all_in_kw_per_gpu",
    "bca_interval",
    "best_per",
    "best_profit_per",
    "blended_price_per_m",
    "cost_breakdown",
    "cost_per_million_tokens",
    "costs_at",
    "default_reference",
    "detect_regression",
    "frontier_by_group",
    "interpolate_at",
    "interval_of_interpolated",
    "mean_interval",
    "model_price",
    "pareto_frontier",
    "pchip_evaluate",
    "prediction_interval",
    "profit",
    "profits_at",
    "read_configurations",
    "revenue_usd_per_gpu_hour",
    "scorecard",
    "student_t_cdf",
    "student_t_interval",
    "student_t_quantile",
    "tokens_per_all_in_mw",
    "usd_per_gpu_hour",
]
