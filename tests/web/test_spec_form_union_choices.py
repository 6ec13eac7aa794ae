"""The submit form's executor section merges every executor's options: an option whose choices differ between
executors (``on_memory_guard``: lean_retain falls back to native or lean_reweight, jagg_retain to jagg or
jagg_reweight) offers them all, and shows for the executors that take it."""

from __future__ import annotations

from web.pages.spec_form import build_sections, default_values


def test_on_memory_guard_offers_lean_retain_s_and_jagg_retain_s_fallbacks() -> None:
    fields = {f.name: f for section in build_sections(default_values(), {}) for f in section.fields}
    guard = fields["executor.on_memory_guard"]
    assert guard.options == ("fail", "native", "lean_reweight", "jagg", "jagg_reweight")
    assert guard.only_for == "executor.name=lean_retain,jagg_retain"
    assert {"jagg_retain", "jagg_reweight"} <= set(fields["executor.name"].options)
