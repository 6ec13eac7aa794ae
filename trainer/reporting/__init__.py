"""Streaming a job's metrics, samples, progress and artifacts to the platform (rank 0 only)."""
