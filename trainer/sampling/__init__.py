"""Flow-matching schedules and the stochastic / deterministic sampler steps (algorithms.md §1–2)."""
