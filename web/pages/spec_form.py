"""The submit form, built from the job spec's JSON Schema: sections of typed fields, and back to a spec dict.

Form values travel as flat dotted names (`algorithm.group_size`, `reward.0.name`) holding the text the user
typed; the spec's own validation (the same as the API's) does every type conversion and check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from server.services.spec_differences import flatten
from trainer.spec import (
    ALGORITHM_OPTIONS,
    EXECUTOR_OPTIONS,
    FAMILY_OPTIONS,
    json_schema,
    known_rewards,
    parse_spec,
)
from trainer.spec.forward_family import family_options

SECTION_ORDER = ("general", "model", "algorithm", "executor", "reward", "prompts", "resources", "samples",
                 "checkpoint", "retry")  # fmt: skip
REWARD_FIELDS = ("name", "weight", "path", "url")  # submit.html and app.css lay them out in 4 columns
TRUE = ("true", "on", "1")
WORDS = {"Lora": "LoRA", "Kl": "KL", "Cfg": "CFG", "Gpu": "GPU", "Adv": "Advantage", "Frac": "fraction", "Url": "URL"}


@dataclass
class FormField:
    name: str
    label: str
    kind: str  # text | number | select | checkbox | tristate | lines | pair
    value: str = ""
    options: tuple[str, ...] = ()
    help: str = ""
    step: str = "any"
    minimum: str = ""
    maximum: str = ""
    only_for: str = ""  # "executor.name=lean_retain,lean_reweight" style: the option applies to these choices only
    hidden: bool = False  # another family's, algorithm's or executor's option (shown anyway when it has an error)
    optional: bool = False  # empty means "not set" (null), not "empty list"
    errors: list[str] = field(default_factory=list)

    @property
    def checked(self) -> bool:
        return self.value.lower() in TRUE


@dataclass
class FormSection:
    name: str
    title: str
    fields: list[FormField]
    errors: list[str] = field(default_factory=list)


@cache
def _schema() -> dict[str, Any]:
    return json_schema()


def _resolve(prop: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in prop:
        return _schema()["$defs"][prop["$ref"].rsplit("/", 1)[-1]]  # type: ignore[no-any-return]
    if "oneOf" in prop:
        return _merged(prop)
    return prop


def _merged(union: dict[str, Any]) -> dict[str, Any]:
    """One section of fields from a union told apart by ``name`` (the executor's options models): the name
    as a choice of every variant, then each variant's options (shown for their own choice only). An option whose
    choices differ between variants (``on_memory_guard``: lean_retain's and jagg_retain's fallbacks) offers them
    all; the spec refuses, naming the field, one its executor does not take."""
    variants = [_resolve(branch) for branch in union["oneOf"]]
    names = [variant["properties"]["name"]["const"] for variant in variants]
    properties: dict[str, Any] = {"name": {"title": "Name", "enum": names, "default": names[0]}}
    for variant in variants:
        for name, prop in variant["properties"].items():
            known = properties.setdefault(name, prop)
            if known is not prop and "enum" in known and "enum" in prop:
                properties[name] = {
                    **known,
                    "enum": [*known["enum"], *(e for e in prop["enum"] if e not in known["enum"])],
                }
    return {"properties": properties}


# Each algorithm's own options and its family's (a GRPO step option shows for the GRPO family only).
ALGORITHM_FORM_OPTIONS = {name: options | family_options(name) for name, options in ALGORITHM_OPTIONS.items()}

# Section → (the field that chooses, each choice's own options).
CHOOSERS = {
    "executor": ("executor.name", EXECUTOR_OPTIONS),
    "algorithm": ("algorithm.name", ALGORITHM_FORM_OPTIONS),
    "model": ("model.family", FAMILY_OPTIONS),
}


def _only_for() -> dict[str, str]:
    """Option field → the family, algorithm or executor choices it belongs to."""
    owned: dict[str, list[str]] = {}
    for section, (_chooser, owners) in CHOOSERS.items():
        for owner, options in owners.items():
            for option in options:
                owned.setdefault(f"{section}.{option}", []).append(owner)
    return {field: f"{CHOOSERS[field.split('.')[0]][0]}={','.join(owners)}" for field, owners in owned.items()}


def _chosen(form: Mapping[str, str], only_for: str) -> bool:
    """Whether an option field's family, algorithm or executor is the one the form chose."""
    if not only_for:
        return True
    chooser, owners = only_for.split("=")
    return form.get(chooser, "") in owners.split(",")


def _field(name: str, prop: dict[str, Any], value: str, only_for: str) -> FormField:
    variants = [v for v in prop.get("anyOf", [prop]) if v.get("type") != "null"]
    nullable = len(variants) < len(prop.get("anyOf", [prop]))
    main = variants[0] if variants else {}
    label = " ".join(WORDS.get(w, w) for w in prop.get("title", name.rsplit(".", 1)[-1]).split())
    f = FormField(name, label, "text", value, help=prop.get("description", ""), only_for=only_for, optional=nullable)
    kind = main.get("type")
    if "enum" in main:
        f.kind, f.options = "select", (("",) if nullable else ()) + tuple(main["enum"])
    elif kind == "boolean":
        f.kind = "tristate" if nullable else "checkbox"
    elif kind in ("integer", "number"):
        f.kind, f.step = "number", "1" if kind == "integer" else "any"
        f.minimum = str(main.get("minimum", ""))
        f.maximum = str(main.get("maximum", ""))
    elif kind == "array":
        f.kind = "pair" if "prefixItems" in main else "lines"
    return f


def default_values() -> dict[str, str]:
    """The form's starting values: the spec defaults, leaving empty what the spec derives (e.g. train_timesteps)."""
    flat = flatten(parse_spec({}).model_dump(mode="json"))
    for section, prop in _schema()["properties"].items():
        sub = _resolve(prop)
        for name, field_prop in sub.get("properties", {}).items():
            if "default" in field_prop and field_prop["default"] is None:
                flat[f"{section}.{name}"] = ""
    return flat


def reward_rows(values: Mapping[str, str]) -> int:
    """Rows the reward table shows: every filled one plus one spare to add a reward."""
    filled = [i for i in range(16) if values.get(f"reward.{i}.name", "").strip()]
    return min(16, (max(filled) + 2) if filled else 1)


def build_sections(values: Mapping[str, str], errors: Mapping[str, list[str]]) -> list[FormSection]:
    """Sections of fields, each holding its current text and the messages the spec gave it."""
    schema = _schema()
    owners = _only_for()
    general = FormSection("general", "General", [])
    sections: dict[str, FormSection] = {"general": general}
    for key, prop in schema["properties"].items():
        if key == "reward":
            continue
        sub = _resolve(prop)
        if "properties" not in sub:
            general.fields.append(_field(key, prop, values.get(key, ""), ""))
            continue
        section = FormSection(key, key, [])
        for name, field_prop in sub["properties"].items():
            dotted = f"{key}.{name}"
            section.fields.append(_field(dotted, field_prop, values.get(dotted, ""), owners.get(dotted, "")))
        sections[key] = section
    reward_props = _resolve(schema["properties"]["reward"]["items"])["properties"]
    rewards = FormSection("reward", "reward", [])
    for i in range(reward_rows(values)):
        for name in REWARD_FIELDS:
            dotted = f"reward.{i}.{name}"
            f = _field(dotted, reward_props[name], values.get(dotted, ""), "")
            if name == "name":
                f.kind, f.options = "select", ("", *sorted(known_rewards()))
            if i > 0:
                f.help = ""
            rewards.fields.append(f)
    sections["reward"] = rewards
    for section in sections.values():
        for f in section.fields:
            f.errors = list(errors.get(f.name, []))
            f.hidden = not _chosen(values, f.only_for) and not f.errors
        section.errors = list(errors.get(section.name, []))
    return [sections[name] for name in SECTION_ORDER if name in sections]


def form_to_spec(form: Mapping[str, str]) -> dict[str, Any]:
    """The typed text back into a spec dict. Empty optional fields are left out, so the spec's defaults apply."""
    spec: dict[str, Any] = {}
    for section in build_sections(form, {}):
        for f in section.fields:
            if not _chosen(form, f.only_for):
                continue  # another choice's option: hidden, so whatever it holds is not part of this spec
            raw = form.get(f.name, "")
            if f.kind == "checkbox":
                value: Any = raw.lower() in TRUE
            elif f.kind == "lines":
                value = [line.strip() for line in raw.splitlines() if line.strip()]
                if not value and f.optional:
                    continue
            elif f.name == "name":
                value = raw
            elif not raw.strip():
                continue
            elif f.kind == "tristate":
                value = raw.lower() in TRUE
            elif f.kind == "pair":
                value = [part.strip() for part in raw.split(",")]
            else:
                value = raw.strip()
            _put(spec, f.name, value)
    if "reward" in spec:
        rows = spec["reward"]
        spec["reward"] = [rows[i] for i in sorted(rows) if rows[i].get("name")]
    return spec


def spec_from_form(form: Mapping[str, str]) -> tuple[Any, str, list[dict[str, str]]]:
    """The spec as the submit form sends it, from its JSON editor or its fields: (data, its JSON, errors)."""
    if form.get("mode") == "json":
        spec_json = form.get("spec_json", "")
        try:
            return json.loads(spec_json), spec_json, []
        except json.JSONDecodeError as exc:
            return None, spec_json, [{"field": "", "message": f"malformed JSON: {exc}"}]
    data = form_to_spec(form)
    return data, json.dumps(data, indent=2), []


def _put(spec: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = spec
    for part in parts[:-1]:
        key: Any = int(part) if part.isdigit() else part
        node = node.setdefault(key, {})
    node[parts[-1]] = value
