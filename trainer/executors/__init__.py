"""Executors: the execution schedule of one training step for a fixed objective (docs/executors.md)."""
