"""How fast will it serve? A calibrated analytic performance estimate (see docs/decisions-perf-model.md)."""
