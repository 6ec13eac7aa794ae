"""Which options an executor runs a spec with when it is not the spec's own executor: the audit, the bench and
the advisor swap executors on one spec, and must agree. Torch-free: the server's advice uses it too."""

from __future__ import annotations

from pydantic import ValidationError

from trainer.spec.base import SpecError
from trainer.spec.executor import DigenrlOptions, ExecutorOptions, JaggOptions, default_options
from trainer.spec.job import JobSpec, spec_errors, with_executor

# JAGG's routing: jagg and the executors composed with it route a spec alike, so their gradients compare.
JAGG_ROUTING = ("group_width", "jagg_frac", "cosine_warn")


def options_for(spec: JobSpec, name: str) -> ExecutorOptions:
    """The options ``name`` runs with on ``spec``: the spec's own for its executor, the defaults for
    another (but the Lean executors share ``after_first_update``, so a hybrid spec audits each on the same
    updates, the reweight executors share ``kl``, so a KL spec audits each with the KL its own executor pays for,
    and jagg and its compositions share the spec's routing, ``JAGG_ROUTING``); digenrl on-policy (the
    audit compares exact gradients). Refused, naming the field, where
    that executor cannot run the spec; the spec itself is never changed."""
    options = spec.executor if name == spec.executor.name else default_options(name)
    if options is not spec.executor and isinstance(options, JaggOptions) and isinstance(spec.executor, JaggOptions):
        options = options.model_copy(update={key: getattr(spec.executor, key) for key in JAGG_ROUTING})
    hybrid = getattr(spec.executor, "after_first_update", None)
    if options is not spec.executor and hybrid is not None and "after_first_update" in type(options).model_fields:
        options = options.model_copy(update={"after_first_update": hybrid})
    kl = getattr(spec.executor, "kl", None)  # lean_reweight and jagg_reweight pay for a KL alike
    if options is not spec.executor and kl is not None and "kl" in type(options).model_fields:
        options = options.model_copy(update={"kl": kl})
    if isinstance(options, DigenrlOptions):
        options = options.model_copy(update={"max_staleness": 0})
    try:
        with_executor(spec, options)
    except ValidationError as exc:
        (first, *_) = spec_errors(exc)
        raise SpecError(first["field"], f"{name}: {first['message']}") from exc
    return options
