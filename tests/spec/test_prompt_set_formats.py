"""Each prompt-set format's rows as the platform and the trainer read them, and each malformed row refused with
the line and column where it goes wrong."""

from __future__ import annotations

import json

import pytest

from trainer.shapes_geneval_prompts import shapes_geneval_metadata
from trainer.spec.base import SpecError
from trainer.spec.dataset_format import dataset_prompts, format_of_file, split_file
from trainer.spec.dataset_source import DatasetSource, parse_dataset_source
from trainer.spec.edit_rows import EditRow, edit_rows
from trainer.spec.geneval_metadata import geneval_rows
from trainer.spec.ocr_prompt_file import ocr_prompts
from trainer.spec.prompt_file import text_prompts
from trainer.spec.row_location import decode_text

FIELD = "train"
GENEVAL_ROWS = [
    {"tag": "single_object", "include": [{"class": "bench", "count": 1}], "prompt": "a photo of a bench"},
    {
        "tag": "position",
        "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1, "position": ["right of", 0]}],
        "prompt": "a photo of a dog right of a cat",
    },
    {
        "tag": "counting",
        "include": [{"class": "apple", "count": 3}],
        "exclude": [{"class": "apple", "count": 4}],
        "prompt": "a photo of three apples",
    },
    {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}], "prompt": "a photo of a red car"},
]


def refusal(parse, text: str) -> str:
    with pytest.raises(SpecError) as caught:
        parse(text, FIELD)
    assert caught.value.field == FIELD
    return caught.value.message


def test_text_prompts_are_the_non_blank_lines_stripped_in_order():
    assert text_prompts("a cat\n\n  a dog  \r\na bird\n", FIELD) == ["a cat", "a dog", "a bird"]


def test_a_text_prompt_over_the_length_limit_is_refused_at_the_column_past_it():
    assert refusal(text_prompts, "ok\n  " + "x" * 1001).startswith("line 2, column 1003: a prompt is at most 1000")


def test_a_control_character_in_a_text_prompt_is_refused_where_it_stands():
    assert refusal(text_prompts, "fine\nab\x00c").startswith("line 2, column 3: a control character (0x00)")


def test_a_text_file_without_prompts_is_refused():
    assert refusal(text_prompts, "\n  \n") == "holds no prompts"


def test_bytes_that_are_not_utf8_are_refused_at_their_line_and_column():
    with pytest.raises(SpecError, match=r"line 2, column 4: not UTF-8"):
        decode_text("\ufeffone\nabc\xff".encode("utf-8").replace(b"\xc3\xbf", b"\xff"), FIELD)


def test_ocr_prompts_keep_lines_that_quote_their_target():
    assert ocr_prompts('a sign that says "Open"\na mug with "Hi" and "more"\n', FIELD) == [
        'a sign that says "Open"',
        'a mug with "Hi" and "more"',
    ]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('a sign "Open"\na sign with no text\n', 'line 2, column 20: no text in double quotes ("...") to render'),
        ('a sign "Open"\n\n  a sign "unclosed\n', "line 3, column 10: a double quote without its closing one"),
        ('a sign that says "  " here\n', "line 1, column 18: the quoted text to render is empty"),
    ],
)
def test_an_ocr_line_without_a_quoted_text_is_refused_at_line_and_column(text, says):
    assert refusal(ocr_prompts, text) == says


def test_geneval_rows_read_genevals_metadata_shapes():
    text = "\n".join(json.dumps(row) for row in GENEVAL_ROWS)
    rows = geneval_rows(text, FIELD)
    assert [row["prompt"] for row in rows] == [row["prompt"] for row in GENEVAL_ROWS]
    assert rows[1]["include"][1]["position"] == ["right of", 0] and rows[2]["exclude"] == [
        {"class": "apple", "count": 4}
    ]


def test_the_builtin_shapes_geneval_metadata_is_a_valid_geneval_file():
    metadata = shapes_geneval_metadata()
    assert geneval_rows("\n".join(json.dumps(row) for row in metadata), FIELD) == metadata


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"prompt": "a cat", "include": [', "line 2, column 33: not JSON"),
        ('["a cat"]', "line 2, column 1: a row is a JSON object"),
        ('{"prompt": "", "include": [{"class": "cat", "count": 1}]}', "line 2, column 2: 'prompt' is a non-empty"),
        ('{"prompt": "a cat", "include": []}', "line 2, column 21: 'include' is a non-empty list"),
        ('{"prompt": "a cat", "include": [{"class": "cat", "count": 0}]}', "line 2, column 50: include[0].count is"),
        (
            '{"prompt": "a cat", "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": true}]}',
            "line 2, column 80: include[1].count is an integer",
        ),
        (
            '{"prompt": "p", "include": [{"class": "cat", "count": 1, "position": ["right of", 0]}]}',
            "line 2, column 58: include[0].position is [relation, k]",
        ),
        ('{"prompt": "p", "include": [{"class": "cat", "count": 1, "colour": "red"}]}', "column 58: include[0] has an"),
        (
            '{"prompt": "p", "include": [{"class": "c", "count": 1}], "exclude": [{"count": 2}]}',
            "column 70: exclude[0].class is a non-empty string",
        ),
        ('{"prompt": "p", "include": [{"class": "c", "count": 1}], "extra": 1}', "line 2, column 58: unknown key"),
    ],
)
def test_a_malformed_geneval_row_is_refused_at_line_and_column(line, says):
    assert says in refusal(geneval_rows, json.dumps(GENEVAL_ROWS[0]) + "\n" + line)


def test_edit_rows_are_instruction_and_relative_image_path():
    text = '{"prompt": "make it red", "image": "images/0.png"}\n{"image": "b.JPG", "prompt": " add a hat "}\n'
    assert edit_rows(text, FIELD) == [EditRow("make it red", "images/0.png"), EditRow("add a hat", "b.JPG")]


@pytest.mark.parametrize(
    ("image", "says"),
    [
        ('"/etc/passwd.png"', "line 1, column 27: 'image' '/etc/passwd.png' is absolute"),
        ('"a/../../b.png"', "line 1, column 27: 'image' 'a/../../b.png' leaves"),
        ('"C:/x.png"', "is absolute"),
        ('"notes.txt"', "is not an image file; allowed: .png"),
        ("3", "'image' is the image file's path relative"),
    ],
)
def test_an_edit_row_whose_image_path_leaves_the_set_is_refused_at_the_image(image, says):
    assert says in refusal(edit_rows, '{"prompt": "make it red", "image": ' + image + "}")


def test_each_format_gives_its_prompts_and_keeps_its_split_under_flow_grpos_names():
    assert dataset_prompts("geneval", json.dumps(GENEVAL_ROWS[0]), FIELD) == ["a photo of a bench"]
    assert dataset_prompts("edit", '{"prompt": "p", "image": "a.png"}', FIELD) == ["p"]
    assert [split_file(f, "test") for f in ("text", "ocr", "geneval", "edit")] == [
        "test.txt",
        "test.txt",
        "test_metadata.jsonl",
        "test.jsonl",
    ]
    assert [format_of_file(split_file(f, "train")) for f in ("text", "geneval", "edit")] == ["text", "geneval", "edit"]


def test_a_dataset_source_names_the_set_its_version_and_its_split():
    assert parse_dataset_source("dataset:ocr-set") == DatasetSource("ocr-set", None, "train")
    assert parse_dataset_source("dataset:ocr-set@3:test") == DatasetSource("ocr-set", 3, "test")
    assert parse_dataset_source("dataset:a.b_c:test").pinned(7) == "dataset:a.b_c@7:test"


@pytest.mark.parametrize("value", ["dataset:", "dataset:1abc", "dataset:a@0", "dataset:a@x", "dataset:a:valid"])
def test_a_malformed_dataset_source_is_refused_with_the_syntax(value):
    with pytest.raises(ValueError, match=r"dataset:<name>\[@<version>\]|a split is train or test"):
        parse_dataset_source(value)
