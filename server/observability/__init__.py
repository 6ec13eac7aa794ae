"""Prometheus metrics: the server's `GET /metrics` and the worker's own exporter."""
