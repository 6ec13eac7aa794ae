"""`make bench-platform`'s sections (bench/platform_speed.py runs them), one module each."""
