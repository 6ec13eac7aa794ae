"""Diffusion model families: the built-in tiny models and loading of real checkpoints."""
