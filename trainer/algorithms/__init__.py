"""GRPO-family algorithms: which steps are stochastic, which are trained, per-sample loss weights."""
