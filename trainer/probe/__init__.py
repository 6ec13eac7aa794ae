"""The advisor's probe: executors measured at reduced sizes on the target host (docs/advisor.md)."""
