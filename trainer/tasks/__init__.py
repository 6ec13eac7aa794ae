"""Task jobs' trainer side: one module per task kind, each with `run(spec, task, output_dir, reporter)`."""
