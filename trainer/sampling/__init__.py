"""Flow-matching schedules and the stochastic / deterministic sampler steps (docs/algorithms.md §1–2)."""
