"""Exports of a trained checkpoint that other tools load: diffusers, ComfyUI, merged (docs/exports.md)."""
